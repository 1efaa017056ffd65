package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"github.com/jackc/pgx/v5"
)

// sample is one series of a /metrics scrape.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads the Prometheus text exposition at url.
func scrape(t *testing.T, url string) []sample {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	var out []sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// parseSample reads `name{label="value",...} number`.
func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("bad line %q", line)
	}
	s.name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for rest[0] != '}' {
			eq := strings.IndexByte(rest, '=')
			if eq < 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return s, fmt.Errorf("bad labels in %q", line)
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var v strings.Builder
			for rest[0] != '"' {
				if rest[0] == '\\' {
					rest = rest[1:]
					if rest[0] == 'n' {
						v.WriteByte('\n')
						rest = rest[1:]
						continue
					}
				}
				v.WriteByte(rest[0])
				rest = rest[1:]
			}
			s.labels[key] = v.String()
			rest = strings.TrimPrefix(rest[1:], ",")
		}
		rest = rest[1:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	s.value = v
	return s, err
}

// pick returns the samples of name whose labels include want.
func pick(samples []sample, name string, want map[string]string) []sample {
	var out []sample
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// total adds up the samples of name whose labels include want.
func total(samples []sample, name string, want map[string]string) float64 {
	var sum float64
	for _, s := range pick(samples, name, want) {
		sum += s.value
	}
	return sum
}

// servers lists the server labels of name's samples.
func servers(samples []sample, name string) map[string]bool {
	out := map[string]bool{}
	for _, s := range pick(samples, name, nil) {
		out[s.labels["server"]] = true
	}
	return out
}

// TestMetricsOnDemo runs cellar demo, sends it SQL and Bigtable traffic,
// and reads its /metrics as Prometheus would: every family is there, with
// the three tablet servers apart by their server label, and the counts
// moved. A table created with splits lands on one server; the master's
// balancing moves its tablets, and each move flushes a memtable, which is
// the minor compaction the test waits for.
func TestMetricsOnDemo(t *testing.T) {
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)

	if _, err := pg.Exec(ctx, `CREATE TABLE metered (_key TEXT PRIMARY KEY, "f:" TEXT) WITH (splits = 'b,c,d,e,f,g')`); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range "abcdefg" {
		for i := range 10 {
			keys = append(keys, fmt.Sprintf("%c%d", p, i))
		}
	}
	for _, k := range keys {
		if _, err := pg.Exec(ctx, `INSERT INTO metered (_key, "f:v") VALUES ($1, 'value')`, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pg.Exec(ctx, `UPSERT INTO metered (_key, "f:v") VALUES ('a0', 'again')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Exec(ctx, `SELECT * FROM no_such_table`); err == nil {
		t.Fatal("a SELECT from a missing table succeeded")
	}

	t.Setenv("BIGTABLE_EMULATOR_HOST", d.bigtable)
	admin, err := bigtable.NewAdminClient(ctx, "p", "i")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	bt, err := bigtable.NewClient(ctx, "p", "i")
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	if err := admin.CreateTable(ctx, "btmetered"); err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateColumnFamily(ctx, "btmetered", "f"); err != nil {
		t.Fatal(err)
	}
	tbl := bt.Open("btmetered")
	for i := range 5 {
		m := bigtable.NewMutation()
		m.Set("f", "q", bigtable.ServerTime, []byte("v"))
		if err := tbl.Apply(ctx, fmt.Sprintf("row%d", i), m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tbl.ReadRow(ctx, "row1"); err != nil {
		t.Fatal(err)
	}

	// Point reads, present and absent, until a moved tablet's SSTables
	// answer them (bloom checks) and a KeepAlive has come back (the demo's
	// lease is 12 s, so about 9 s).
	var got []sample
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for _, k := range keys {
			var v string
			if err := pg.QueryRow(ctx, `SELECT "f:v" FROM metered WHERE _key = $1`, k).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if _, err := pg.Exec(ctx, `SELECT "f:v" FROM metered WHERE _key = $1`, k+"x"); err != nil {
				t.Fatal(err)
			}
		}
		got = scrape(t, d.url+"/metrics")
		if total(got, "cellar_compaction_bytes_total", map[string]string{"kind": "minor"}) > 0 &&
			total(got, "cellar_bloom_useful_total", nil) > 0 &&
			total(got, "cellar_chubby_keepalive_duration_seconds_count", nil) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes: minor compaction bytes %v, bloom useful %v, KeepAlives %v",
				total(got, "cellar_compaction_bytes_total", nil), total(got, "cellar_bloom_useful_total", nil),
				total(got, "cellar_chubby_keepalive_duration_seconds_count", nil))
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Every series has a server label, and every family is cellar's.
	for _, s := range got {
		if !strings.HasPrefix(s.name, "cellar_") || s.labels["server"] == "" {
			t.Fatalf("series %s%v: not cellar_ or no server label", s.name, s.labels)
		}
	}
	// The three tablet servers stay apart.
	ts := servers(got, "cellar_tablets")
	var names []string
	for n := range ts {
		names = append(names, n)
	}
	for _, prefix := range []string{"demo1-", "demo2-", "demo3-"} {
		n := 0
		for s := range ts {
			if strings.HasPrefix(s, prefix) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("cellar_tablets servers %v: want one %s*", names, prefix)
		}
	}
	for _, fam := range []string{"cellar_block_cache_hits_total", "cellar_block_cache_misses_total", "cellar_block_cache_bytes",
		"cellar_bloom_checks_total", "cellar_bloom_useful_total", "cellar_commitlog_bytes"} {
		if n := len(servers(got, fam)); n != 3 {
			t.Fatalf("%s: servers %v, want the 3 tablet servers", fam, servers(got, fam))
		}
	}
	for _, fam := range []string{"cellar_tablet_memtable_bytes", "cellar_tablet_sstables", "cellar_tablet_sstable_bytes"} {
		for _, s := range pick(got, fam, nil) {
			if !ts[s.labels["server"]] || s.labels["tablet"] == "" {
				t.Fatalf("%s%v: not a tablet of a tablet server", fam, s.labels)
			}
		}
	}
	if tablets := total(got, "cellar_tablets", nil); tablets < 7 {
		t.Fatalf("%v tablets over the servers; metered alone has 7", tablets)
	}
	if total(got, "cellar_tablet_sstables", nil) < 1 || total(got, "cellar_tablet_sstable_bytes", nil) < 1 {
		t.Fatal("no SSTables after a flush")
	}
	if total(got, "cellar_block_cache_misses_total", nil) < 1 || total(got, "cellar_bloom_checks_total", nil) < total(got, "cellar_bloom_useful_total", nil) {
		t.Fatal("block cache misses or bloom checks did not move")
	}

	moved := func(name string, labels map[string]string, at float64) {
		t.Helper()
		if v := total(got, name, labels); v < at {
			t.Fatalf("%s%v = %v, want at least %v", name, labels, v, at)
		}
	}
	// Tablet server RPCs: the gateway's point reads and writes, counted
	// over the local calls of the demo's in-process gateway.
	// (INSERT is a CheckAndMutate: the row must not exist.)
	moved("cellar_tablet_rpcs_total", map[string]string{"rpc": "CheckAndMutate", "code": "OK"}, float64(len(keys)))
	moved("cellar_tablet_rpcs_total", map[string]string{"rpc": "MutateRow", "code": "OK"}, 6) // UPSERT and the Bigtable writes
	moved("cellar_tablet_rpcs_total", map[string]string{"rpc": "ReadRow", "code": "OK"}, float64(2*len(keys)))
	moved("cellar_tablet_rpc_duration_seconds_count", map[string]string{"rpc": "ReadRow"}, float64(2*len(keys)))
	moved("cellar_commitlog_fsync_duration_seconds_count", nil, 1)
	moved("cellar_commitlog_group_size_sum", nil, float64(len(keys)))
	moved("cellar_compaction_duration_seconds_count", map[string]string{"kind": "minor"}, 1)
	// The master's admin RPCs (CREATE TABLE through SQL and the admin API).
	moved("cellar_master_rpc_duration_seconds_count", map[string]string{"server": "master", "rpc": "CreateTable"}, 2)
	// The Bigtable API.
	moved("cellar_bigtable_rpcs_total", map[string]string{"server": "gateway", "rpc": "MutateRow", "code": "OK"}, 5)
	moved("cellar_bigtable_rpc_duration_seconds_count", map[string]string{"server": "gateway", "rpc": "ReadRows"}, 1)
	moved("cellar_bigtable_rpcs_total", map[string]string{"server": "gateway", "rpc": "CreateTable", "code": "OK"}, 1)
	// SQL, by statement type and outcome.
	gw := map[string]string{"server": "gateway"}
	moved("cellar_sql_statements_total", map[string]string{"server": "gateway", "statement": "INSERT", "outcome": "ok"}, float64(len(keys)))
	moved("cellar_sql_statements_total", map[string]string{"server": "gateway", "statement": "UPSERT", "outcome": "ok"}, 1)
	moved("cellar_sql_statements_total", map[string]string{"server": "gateway", "statement": "DDL", "outcome": "ok"}, 1)
	moved("cellar_sql_statements_total", map[string]string{"server": "gateway", "statement": "SELECT", "outcome": "error"}, 1)
	moved("cellar_sql_statement_duration_seconds_count", map[string]string{"server": "gateway", "statement": "SELECT"}, float64(2*len(keys)))
	moved("cellar_pgwire_connections", gw, 1)
	// Chubby: the demo's one replica leads and holds the servers' and the
	// master's locks for their sessions.
	c1 := map[string]string{"server": "chubby-1"}
	moved("cellar_chubby_leader", c1, 1)
	moved("cellar_chubby_raft_leader_id", c1, 1)
	moved("cellar_chubby_sessions", c1, 5)
	moved("cellar_chubby_locks", c1, 4)
	// The process's runtime, once, as "demo".
	if g := pick(got, "cellar_go_goroutines", nil); len(g) != 1 || g[0].labels["server"] != "demo" {
		t.Fatalf("cellar_go_goroutines: %v", g)
	}
}

// TestMetricsOnSeparateProcesses starts a cluster of one process per role
// (cellar chubby, master, tabletserver and gateway, each with its HTTP
// endpoint on a free port), runs SQL through the gateway and scrapes each
// process: it serves its own role's metrics under its own server label.
func TestMetricsOnSeparateProcesses(t *testing.T) {
	bin := buildCellar(t)
	dir := t.TempDir()
	metricsRe := regexp.MustCompile(`http:\s+(http://[0-9.:]+/)`)
	metricsURL := func(name string, r *bufio.Reader) string {
		t.Helper()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s printed no metrics address: %v", name, err)
			}
			if m := metricsRe.FindStringSubmatch(line); m != nil {
				return m[1] + "metrics"
			}
		}
	}
	chubby := freeLoopbackPort(t)
	_, out := startProcess(t, bin, "clients:", "chubby", "-id", "1", "-peers", "1="+freeLoopbackPort(t)+"/"+chubby,
		"-data", filepath.Join(dir, "chubby"), "-lease", "2s", "-grace", "2s", "-rtt", "10ms", "-http", "127.0.0.1:0")
	chubbyURL := metricsURL("chubby", out)
	masterStatus := freeLoopbackPort(t)
	startProcess(t, bin, "active master", "master", "-listen", masterStatus, "-rpc", freeLoopbackPort(t), "-chubby", chubby,
		"-scan-interval", "100ms", "-dfs", filepath.Join(dir, "dfs"))
	_, tsOut, line := startProcessLine(t, bin, "serving on", "tabletserver", "-id", "ts1", "-listen", "127.0.0.1:0",
		"-chubby", chubby, "-dfs", filepath.Join(dir, "dfs"), "-http", "127.0.0.1:0")
	path := registeredAs(t, line)
	tsID := path[strings.LastIndex(path, "/")+1:]
	tsURL := metricsURL("tabletserver", tsOut.Reader)
	pgAddr := freeLoopbackPort(t)
	_, gwOut := startProcess(t, bin, "sql:", "gateway", "-chubby", chubby, "-pgwire", pgAddr, "-bigtable", "", "-http", "127.0.0.1:0")
	gwURL := metricsURL("gateway", gwOut)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The server needs a moment to be in the master's view before a table
	// can be placed on it.
	var pg *pgx.Conn
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pg, err = pgx.Connect(ctx, "postgresql://cellar@"+pgAddr+"/cellar"); err == nil {
			if _, err = pg.Exec(ctx, `CREATE TABLE procs (_key TEXT PRIMARY KEY, "f:v" TEXT)`); err == nil {
				break
			}
			pg.Close(ctx)
		}
		if time.Now().After(deadline) {
			t.Fatalf("CREATE TABLE through the gateway: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer pg.Close(ctx)
	if _, err := pg.Exec(ctx, `INSERT INTO procs (_key, "f:v") VALUES ('a', 'b')`); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := pg.QueryRow(ctx, `SELECT "f:v" FROM procs WHERE _key = 'a'`).Scan(&v); err != nil || v != "b" {
		t.Fatalf("SELECT: %q %v", v, err)
	}

	// The tablet server: its own RPCs, over gRPC from the gateway.
	ts := scrape(t, tsURL)
	if total(ts, "cellar_tablet_rpcs_total", map[string]string{"server": tsID, "rpc": "MutateRow", "code": "OK"}) < 1 ||
		total(ts, "cellar_tablet_rpcs_total", map[string]string{"server": tsID, "rpc": "ReadRow", "code": "OK"}) < 1 {
		t.Fatalf("the tablet server's RPCs under %s: %v", tsID, pick(ts, "cellar_tablet_rpcs_total", nil))
	}
	if total(ts, "cellar_tablets", map[string]string{"server": tsID}) < 3 { // root, METADATA and procs
		t.Fatalf("tablets: %v", pick(ts, "cellar_tablets", nil))
	}
	if len(pick(ts, "cellar_go_goroutines", map[string]string{"server": tsID})) != 1 || len(pick(ts, "cellar_sql_statements_total", nil)) != 0 {
		t.Fatal("the tablet server's registry holds another role's series, or no runtime")
	}
	// The gateway: SQL and connections.
	gw := scrape(t, gwURL)
	if total(gw, "cellar_sql_statements_total", map[string]string{"server": "gateway", "statement": "DDL", "outcome": "ok"}) != 1 ||
		total(gw, "cellar_sql_statements_total", map[string]string{"server": "gateway", "statement": "INSERT", "outcome": "ok"}) != 1 ||
		total(gw, "cellar_pgwire_connections", map[string]string{"server": "gateway"}) != 1 {
		t.Fatalf("the gateway's SQL metrics: %v", pick(gw, "cellar_sql_statements_total", nil))
	}
	// The master: CreateTable.
	ms := scrape(t, "http://"+masterStatus+"/metrics")
	if total(ms, "cellar_master_rpcs_total", map[string]string{"server": "master", "rpc": "CreateTable", "code": "OK"}) != 1 {
		t.Fatalf("the master's RPCs: %v", pick(ms, "cellar_master_rpcs_total", nil))
	}
	// The Chubby replica: it leads, and the sessions of the master, the
	// server and the gateway are there.
	ch := scrape(t, chubbyURL)
	c1 := map[string]string{"server": "chubby-1"}
	if total(ch, "cellar_chubby_leader", c1) != 1 || total(ch, "cellar_chubby_raft_leader_id", c1) != 1 ||
		total(ch, "cellar_chubby_sessions", c1) < 3 || total(ch, "cellar_chubby_locks", c1) < 2 {
		t.Fatalf("the replica's gauges: %v %v %v", pick(ch, "cellar_chubby_leader", nil), pick(ch, "cellar_chubby_sessions", nil), pick(ch, "cellar_chubby_locks", nil))
	}
}
