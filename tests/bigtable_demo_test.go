package tests

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"github.com/jackc/pgx/v5"
)

// TestBigtableAPIOnDemoSharesTablesWithSQL runs cellar demo as a user
// would and connects the official Go client through the address it
// prints (BIGTABLE_EMULATOR_HOST) and pgx through its PostgreSQL URL: a
// table made with the Bigtable admin API is an SQL table, and the other
// way round, cell for cell. Then cellar gateway, started against the
// demo's Chubby cell, serves the same tables, and stops cleanly on
// SIGTERM.
func TestBigtableAPIOnDemoSharesTablesWithSQL(t *testing.T) {
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Setenv("BIGTABLE_EMULATOR_HOST", d.bigtable)
	admin, err := bigtable.NewAdminClient(ctx, "any-project", "any-instance")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	data, err := bigtable.NewClient(ctx, "any-project", "any-instance")
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	pg, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)

	// Bigtable to SQL: _key and the family's qualifiers as BYTEA.
	if err := admin.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: "profiles",
		Families: map[string]bigtable.GCPolicy{"p": bigtable.MaxVersionsPolicy(1)}}); err != nil {
		t.Fatal(err)
	}
	profiles := data.Open("profiles")
	m := bigtable.NewMutation()
	m.Set("p", "name", bigtable.ServerTime, []byte("Alice"))
	m.Set("p", "city", bigtable.ServerTime, []byte("Oslo"))
	if err := profiles.Apply(ctx, "alice", m); err != nil {
		t.Fatal(err)
	}
	var key, name []byte
	if err := pg.QueryRow(ctx, `SELECT _key, "p:name" FROM profiles WHERE _key = 'alice'`).Scan(&key, &name); err != nil ||
		string(key) != "alice" || string(name) != "Alice" {
		t.Fatalf("a Bigtable table from SQL: %q %q %v", key, name, err)
	}

	// SQL to Bigtable: a BIGINT is an 8-byte big-endian cell that the
	// Bigtable increment adds to, and SQL reads the sum.
	if _, err := pg.Exec(ctx, `CREATE TABLE counters (_key TEXT PRIMARY KEY, "c:n" BIGINT, "c:label" TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Exec(ctx, `INSERT INTO counters VALUES ('hits', 40, 'page views')`); err != nil {
		t.Fatal(err)
	}
	tables, err := admin.Tables(ctx)
	if err != nil || !slices.Contains(tables, "counters") || !slices.Contains(tables, "profiles") {
		t.Fatalf("tables through the admin API: %v %v", tables, err)
	}
	info, err := admin.TableInfo(ctx, "counters")
	if err != nil || !slices.Contains(info.Families, "c") {
		t.Fatalf("the SQL table's families: %+v %v", info, err)
	}
	counters := data.Open("counters")
	row, err := counters.ReadRow(ctx, "hits", bigtable.RowFilter(bigtable.FamilyFilter("c")))
	if err != nil || len(row["c"]) != 2 {
		t.Fatalf("the SQL row through the Bigtable API: %v %v", row, err)
	}
	for _, it := range row["c"] {
		switch it.Column {
		case "c:label":
			if string(it.Value) != "page views" {
				t.Fatalf("c:label = %q", it.Value)
			}
		case "c:n":
			if int64(binary.BigEndian.Uint64(it.Value)) != 40 {
				t.Fatalf("c:n = %x", it.Value)
			}
		}
	}
	rmw := bigtable.NewReadModifyWrite()
	rmw.Increment("c", "n", 2)
	if _, err := counters.ApplyReadModifyWrite(ctx, "hits", rmw); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := pg.QueryRow(ctx, `SELECT "c:n" FROM counters WHERE _key = 'hits'`).Scan(&n); err != nil || n != 42 {
		t.Fatalf("SQL after a Bigtable increment: %d %v", n, err)
	}

	// cellar gateway against the demo's cell serves the same tables.
	gw := exec.Command(bin, "gateway", "-chubby", d.chubby, "-pgwire", "", "-bigtable", "127.0.0.1:0")
	out, _ := gw.StdoutPipe()
	var stderr strings.Builder
	gw.Stderr = &stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Process.Kill(); gw.Wait() })
	lines := bufio.NewReader(out)
	addrRe := regexp.MustCompile(`BIGTABLE_EMULATOR_HOST=([0-9.:]+)`)
	gwAddr := ""
	for gwAddr == "" {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("gateway exited early: %v; stderr: %s", err, stderr.String())
		}
		if m := addrRe.FindStringSubmatch(line); m != nil {
			gwAddr = m[1]
		}
	}
	t.Setenv("BIGTABLE_EMULATOR_HOST", gwAddr)
	viaGateway, err := bigtable.NewClient(ctx, "p", "i")
	if err != nil {
		t.Fatal(err)
	}
	r, err := viaGateway.Open("profiles").ReadRow(ctx, "alice")
	viaGateway.Close()
	if err != nil || len(r["p"]) != 2 {
		t.Fatalf("a row through cellar gateway: %v %v", r, err)
	}
	gw.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(lines)
	if err := gw.Wait(); err != nil || !strings.Contains(string(rest), "stopped cleanly") {
		t.Fatalf("gateway after SIGTERM: %v\n%s\nstderr: %s", err, rest, stderr.String())
	}
}
