package status

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
	pb "github.com/cellardb/cellar/kv/tabletpb"
	"github.com/cellardb/cellar/pgwire"
	"github.com/cellardb/cellar/query"
)

// fakeReplica and fakeMaster stand in for a Chubby replica and a master,
// whose real snapshots their own packages test and tests/status_test.go
// serves from running processes.
type fakeReplica struct{ st cell.Status }

func (r fakeReplica) ID() uint64 { return r.st.ReplicaID }
func (r fakeReplica) Status(context.Context) (cell.Status, error) {
	return r.st, nil
}

type fakeMaster struct{}

func (fakeMaster) Active() bool { return true }
func (fakeMaster) Servers() []master.Server {
	return []master.Server{{ID: "ts-a", Addr: "127.0.0.1:1", Tablets: []*pb.TabletInfo{
		{Id: 7, Table: "<i>users</i>", Range: &pb.RowRange{Start: []byte("m")}, SizeBytes: 3 << 20},
		{Id: 8, Table: "<i>users</i>", Range: &pb.RowRange{End: []byte("m")}, SizeBytes: 1 << 20}}}}
}
func (fakeMaster) Dead() []string { return []string{"ts-old"} }
func (fakeMaster) Events() []master.Event {
	return []master.Event{{Time: time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC), Kind: master.EventDeath, Text: "server ts-old is dead"},
		{Time: time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC), Kind: master.EventAssign, Text: "tablet <b>x</b> loaded"}}
}

// namedStore gives a store that is not in shared mode a server name.
type namedStore struct{ *tablet.Store }

func (namedStore) Name() string { return "ts-a" }

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestPagesRenderEscapedData(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	clock := func() time.Time { return now }

	store := tablet.New(dfs.NewMem(), "", tablet.Options{})
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer store.Close(ctx)
	if err := store.CreateTable(ctx, "users", model.Schema{Families: []model.Family{{Name: "f"}}}, [][]byte{[]byte("<script>"), []byte("k\x00")}); err != nil {
		t.Fatal(err)
	}
	if err := store.Apply(ctx, "users", &model.RowMutation{Row: []byte("a"),
		Mutations: []model.Mutation{model.SetCell("f", []byte("q"), 1000, []byte("v"))}}); err != nil {
		t.Fatal(err)
	}

	pg := pgwire.New(pgwire.Options{NewSession: func(o query.SessionOptions) (pgwire.Session, error) { return query.NewSession(o) }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go pg.Serve(ln)
	defer pg.Close(ctx)
	conn, err := pgx.Connect(ctx, "postgres://cellar@"+ln.Addr().String()+"/cellar?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT '<b>hi</b>'", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	h := testHistogram(reg)
	h.WithLabelValues("ts-a", "ReadRow").Observe(0.0005)
	lease := now.Add(7 * time.Second)
	replica := fakeReplica{cell.Status{Cell: "cellar", ReplicaID: 1, LeaderID: 1, IsMaster: true, Epoch: 3,
		Sessions: []cell.SessionStatus{{ID: 5, Principal: "tabletserver:<ts>", LeaseExpires: lease, LastKeepAlive: now.Add(-time.Second)}},
		Locks:    []cell.LockStatus{{Path: "/ls/cellar/cellar/master", Mode: "exclusive", Holders: []cell.LockHolder{{Session: 5, Principal: "master", Handle: 9}}}}}}
	notReady := errors.New("no <quorum>")
	ready := true
	hd, err := New(Options{Process: "cellar test", Version: "v0", Gatherer: reg, Clock: clock,
		Chubby: []CellReplica{replica}, Master: fakeMaster{}, TabletServers: []TabletServer{namedStore{store}}, Gateway: pg,
		Ready: []Check{{Name: "chubby", Ready: func(context.Context) error {
			if ready {
				return nil
			}
			return notReady
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	hd.Sampler().Sample()
	h.WithLabelValues("ts-a", "ReadRow").Observe(0.0005)
	now = now.Add(5 * time.Second)
	hd.Sampler().Sample()
	srv := httptest.NewServer(hd)
	defer srv.Close()

	pages := map[string][]string{
		"/": {`href="/chubby/1"`, `href="/master"`, `href="/tabletserver/ts-a"`, `href="/gateway"`, "ready"},
		"/chubby/1": {"replica 1", "epoch 3", "tabletserver:&lt;ts&gt;", "in 2s", "/ls/cellar/cellar/master", "exclusive", "handle 9", "<svg",
			"KeepAlives: ops/s"},
		"/master":            {"Active", "ts-a", "&lt;i&gt;users&lt;/i&gt;", "3.0 MiB", "ts-old", "tablet &lt;b&gt;x&lt;/b&gt; loaded", "death", "tablet sizes", "+∞"},
		"/tabletserver/ts-a": {"users", "&lt;script&gt;", `&#34;k\x00&#34;`, "tablet RPCs: ops/s", "<circle", "tablet sizes"},
		"/gateway": {"PostgreSQL sessions (1)", "cellar", "idle", "SELECT &#39;&lt;b&gt;hi&lt;/b&gt;&#39;", "SQL statements: p99 latency",
			"Bigtable RPCs: ops/s", "no samples yet"},
	}
	for path, wants := range pages {
		code, body := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, "<b>") || strings.Contains(body, "<i>users") {
			t.Errorf("%s: unescaped markup from the data:\n%s", path, body)
		}
		if !strings.Contains(body, `http-equiv="refresh"`) {
			t.Errorf("%s: does not refresh itself", path)
		}
		for _, w := range wants {
			if !strings.Contains(body, w) {
				t.Errorf("%s: no %q in\n%s", path, w, body)
			}
		}
	}
	for _, path := range []string{"/tabletserver/nope", "/chubby/2", "/nothing"} {
		if code, _ := get(t, srv, path); code != http.StatusNotFound {
			t.Errorf("%s: %d", path, code)
		}
	}

	if code, body := get(t, srv, "/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	if code, body := get(t, srv, "/readyz"); code != 200 || !strings.Contains(body, "ready: chubby") {
		t.Fatalf("readyz: %d %q", code, body)
	}
	ready = false
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready: chubby: no <quorum>") {
		t.Fatalf("readyz when not ready: %d %q", code, body)
	}
	if _, body := get(t, srv, "/"); !strings.Contains(body, "not ready") || !strings.Contains(body, "no &lt;quorum&gt;") {
		t.Fatalf("index when not ready:\n%s", body)
	}
}

func TestOptionsValidate(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("no gatherer accepted")
	}
	if _, err := New(Options{Gatherer: prometheus.NewRegistry(), Ready: []Check{{Name: "x"}}}); err == nil {
		t.Fatal("a check without a function accepted")
	}
	hd, err := New(Options{Gatherer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hd)
	defer srv.Close()
	for _, path := range []string{"/master", "/gateway"} {
		if code, _ := get(t, srv, path); code != http.StatusNotFound {
			t.Errorf("%s of a process without that role: %d", path, code)
		}
	}
	if code, body := get(t, srv, "/readyz"); code != 200 || body != "ok\n" {
		t.Fatalf("readyz without checks: %d %q", code, body)
	}
}

func TestCharts(t *testing.T) {
	if long := clip(strings.Repeat("é", 2000)); len([]rune(long)) != maxStatement+1 || !strings.HasSuffix(long, "…") || clip("SELECT 1") != "SELECT 1" {
		t.Fatalf("clip: %d runes", len([]rune(long)))
	}
	if niceCeil(0.0042) != 0.005 || niceCeil(37) != 50 || niceCeil(100) != 100 || niceCeil(0) != 0 {
		t.Fatalf("niceCeil: %v %v %v", niceCeil(0.0042), niceCeil(37), niceCeil(100))
	}
	if formatSeconds(0.0099) != "9.9ms" || formatSeconds(0.00025) != "250µs" || formatBytes(3<<20) != "3.0 MiB" || formatRate(40) != "40.0/s" {
		t.Fatal(formatSeconds(0.0099), formatSeconds(0.00025), formatBytes(3<<20), formatRate(40))
	}
	now := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	pts := []Point{{At: now.Add(-2 * time.Minute), P99: 0.002, HasP99: true}, {At: now.Add(-time.Minute)}, {At: now, P99: 0.004, HasP99: true}}
	svg := string(lineChart("a <b>", pts, func(p Point) (float64, bool) { return p.P99, p.HasP99 }, formatSeconds, 10*time.Minute, now))
	// A gap splits the line: two lone points.
	if strings.Count(svg, "<circle") != 2 || strings.Contains(svg, "<polyline") || !strings.Contains(svg, "a &lt;b&gt;") || !strings.Contains(svg, "5.0ms") {
		t.Fatalf("line chart: %s", svg)
	}
	bars := make([]Bar, 30)
	for i := range bars {
		bars[i] = Bar{Label: "t", Value: float64(i)}
	}
	svg = string(barChart("sizes", bars, formatBytes))
	if strings.Count(svg, `fill="#3fa46a"`) != maxBars || !strings.Contains(svg, "and 6 smaller") || !strings.Contains(svg, ">29 B<") {
		t.Fatalf("bar chart: %s", svg)
	}
}

// progressServer is a tablet server in the middle of a major compaction
// and a recovery, which a test cannot hold still in a real store.
type progressServer struct{}

func (progressServer) Name() string { return "ts-busy" }
func (progressServer) Stats() tablet.Stats {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return tablet.Stats{
		Tablets: []tablet.TabletStats{{ID: 4, Table: "web", Range: model.RowRange{Start: []byte("a")},
			Groups:     []tablet.GroupStats{{Name: "default", Files: []tablet.FileStats{{Num: 1, Size: 2048}, {Num: 2, Size: 1024}}}},
			Compaction: &tablet.CompactionProgress{Group: "default", Major: true, TotalBytes: 4000, DoneBytes: 1000, Started: at}}},
		Recovering: []tablet.RecoveryProgress{{Table: "<web>", Range: model.RowRange{End: []byte("m")}, Log: "recovery/ts-old/7", Records: 42, Started: at}},
	}
}

func TestTabletServerPageShowsProgress(t *testing.T) {
	hd, err := New(Options{Gatherer: prometheus.NewRegistry(), TabletServers: []TabletServer{progressServer{}},
		Clock: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hd)
	defer srv.Close()
	code, body := get(t, srv, "/tabletserver/ts-busy")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	for _, w := range []string{"major of default: 25% of 4000 bytes", "3.0 KiB", "Recovering from a dead server's log (1)",
		"&lt;web&gt;", "recovery/ts-old/7", ">42<", "(5s ago)"} {
		if !strings.Contains(body, w) {
			t.Errorf("no %q in\n%s", w, body)
		}
	}
}
