package metrics

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/pgwire"
)

// series finds the series of family name whose labels include want; it
// fails the test unless exactly one matches.
func series(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found []*dto.Metric
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

func newMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func TestNewRegistersOnItsRegistry(t *testing.T) {
	_, reg := newMetrics(t)
	if _, err := New(reg); err == nil {
		t.Fatal("a second New on one registry registered the families again")
	}
	if _, err := New(nil); err == nil {
		t.Fatal("New without a registry succeeded")
	}
	// Nothing reaches the default registry.
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "cellar_") {
			t.Fatalf("%s is in the default registry", f.GetName())
		}
	}
}

func TestHooks(t *testing.T) {
	m, reg := newMetrics(t)
	rpc := m.TabletRPC("ts1")
	rpc("ReadRow", 2*time.Millisecond, nil)
	rpc("ReadRow", 3*time.Millisecond, status.Error(codes.NotFound, "no table"))
	m.TabletRPC("ts2")("ReadRow", time.Millisecond, context.Canceled)
	if h := series(t, reg, "cellar_tablet_rpc_duration_seconds", map[string]string{"server": "ts1", "rpc": "ReadRow"}).Histogram; h.GetSampleCount() != 2 || h.GetSampleSum() < 0.005 {
		t.Fatalf("ts1's ReadRow histogram: %v", h)
	}
	for _, c := range []struct {
		server, code string
	}{{"ts1", "OK"}, {"ts1", "NotFound"}, {"ts2", "Canceled"}} {
		if v := series(t, reg, "cellar_tablet_rpcs_total", map[string]string{"server": c.server, "rpc": "ReadRow", "code": c.code}).Counter.GetValue(); v != 1 {
			t.Fatalf("%s ReadRow %s: %v", c.server, c.code, v)
		}
	}

	var flushed int
	ev := m.TabletEvents("ts1", tablet.Events{FlushEnd: func(tablet.FlushInfo) { flushed++ }})
	ev.FlushEnd(tablet.FlushInfo{Bytes: 1000, Duration: time.Millisecond})
	ev.CompactionEnd(tablet.CompactionInfo{OutputBytes: 300, Duration: time.Second})
	ev.CompactionEnd(tablet.CompactionInfo{Major: true, OutputBytes: 200, Duration: time.Second})
	ev.LogSynced(5, time.Millisecond)
	ev.LogSynced(1, time.Millisecond)
	if flushed != 1 {
		t.Fatal("the store's own FlushEnd hook did not run")
	}
	for kind, want := range map[string]float64{"minor": 1000, "merging": 300, "major": 200} {
		if v := testutil.ToFloat64(m.compBytes.WithLabelValues("ts1", kind)); v != want {
			t.Fatalf("%s compaction bytes %v, want %v", kind, v, want)
		}
		if n := series(t, reg, "cellar_compaction_duration_seconds", map[string]string{"server": "ts1", "kind": kind}).Histogram.GetSampleCount(); n != 1 {
			t.Fatalf("%s compactions timed: %d", kind, n)
		}
	}
	if h := series(t, reg, "cellar_commitlog_group_size", map[string]string{"server": "ts1"}).Histogram; h.GetSampleCount() != 2 || h.GetSampleSum() != 6 {
		t.Fatalf("group sizes: %v", h)
	}
	if n := series(t, reg, "cellar_commitlog_fsync_duration_seconds", map[string]string{"server": "ts1"}).Histogram.GetSampleCount(); n != 2 {
		t.Fatalf("fsyncs timed: %d", n)
	}

	m.KeepAlive("chubby-1")(time.Millisecond)
	if n := series(t, reg, "cellar_chubby_keepalive_duration_seconds", map[string]string{"server": "chubby-1"}).Histogram.GetSampleCount(); n != 1 {
		t.Fatalf("KeepAlives timed: %d", n)
	}

	st := m.Statement("gateway")
	st("SELECT", time.Millisecond, nil)
	st("SELECT", time.Millisecond, errors.New("42P01"))
	st("INSERT", time.Millisecond, nil)
	for _, c := range []struct{ typ, outcome string }{{"SELECT", "ok"}, {"SELECT", "error"}, {"INSERT", "ok"}} {
		if v := testutil.ToFloat64(m.sqlTotal.WithLabelValues("gateway", c.typ, c.outcome)); v != 1 {
			t.Fatalf("%s %s: %v", c.typ, c.outcome, v)
		}
	}
	if n := series(t, reg, "cellar_sql_statement_duration_seconds", map[string]string{"server": "gateway", "statement": "SELECT"}).Histogram.GetSampleCount(); n != 2 {
		t.Fatalf("SELECTs timed: %d", n)
	}
}

type fakeStore struct{ st tablet.Stats }

func (f *fakeStore) Stats() tablet.Stats { return f.st }

type fakeReplica struct{ st cell.Stats }

func (f *fakeReplica) Stats() cell.Stats { return f.st }

type fakePgwire struct{ n int64 }

func (f *fakePgwire) Stats() pgwire.Stats { return pgwire.Stats{Connections: f.n} }

func TestSnapshotsAtScrape(t *testing.T) {
	m, reg := newMetrics(t)
	a := &fakeStore{tablet.Stats{
		Tablets: []tablet.TabletStats{
			{ID: 7, MemtableBytes: 100, Groups: []tablet.GroupStats{{Files: []tablet.FileStats{{Size: 10}, {Size: 20}}}, {Files: []tablet.FileStats{{Size: 5}}}}},
			{ID: 8, MemtableBytes: 50},
		},
		BlockCache: tablet.CacheStats{Hits: 9, Misses: 3, Bytes: 4096},
		Bloom:      tablet.BloomStats{Checks: 10, Useful: 4},
		LogBytes:   777,
	}}
	removeA, err := m.AddStore("ts1", a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddStore("ts2", &fakeStore{tablet.Stats{Tablets: []tablet.TabletStats{{ID: 9}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddStore("ts1", a); err == nil {
		t.Fatal("a server's store was added twice")
	}
	gauge := func(name string, labels map[string]string) float64 {
		t.Helper()
		return series(t, reg, name, labels).Gauge.GetValue()
	}
	counter := func(name string, labels map[string]string) float64 {
		t.Helper()
		return series(t, reg, name, labels).Counter.GetValue()
	}
	ts1 := map[string]string{"server": "ts1"}
	if gauge("cellar_tablets", ts1) != 2 || gauge("cellar_tablets", map[string]string{"server": "ts2"}) != 1 {
		t.Fatal("tablets per server")
	}
	t7 := map[string]string{"server": "ts1", "tablet": "7"}
	if gauge("cellar_tablet_memtable_bytes", t7) != 100 || gauge("cellar_tablet_sstables", t7) != 3 || gauge("cellar_tablet_sstable_bytes", t7) != 35 {
		t.Fatal("tablet 7's gauges")
	}
	if counter("cellar_block_cache_hits_total", ts1) != 9 || counter("cellar_block_cache_misses_total", ts1) != 3 ||
		counter("cellar_bloom_checks_total", ts1) != 10 || counter("cellar_bloom_useful_total", ts1) != 4 ||
		gauge("cellar_block_cache_bytes", ts1) != 4096 || gauge("cellar_commitlog_bytes", ts1) != 777 {
		t.Fatal("ts1's cache, bloom and log metrics")
	}
	// The values are read at each scrape.
	a.st.BlockCache.Hits = 20
	if counter("cellar_block_cache_hits_total", ts1) != 20 {
		t.Fatal("a scrape read an old snapshot")
	}
	removeA()
	removeA()
	if n := testutil.CollectAndCount(m.stores, "cellar_tablets"); n != 1 {
		t.Fatalf("%d cellar_tablets series after ts1 was removed", n)
	}

	if _, err := m.AddReplica("chubby-1", &fakeReplica{cell.Stats{ID: 1, IsMaster: true, Leader: 1, Sessions: 4, Locks: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddReplica("chubby-2", &fakeReplica{cell.Stats{ID: 2, Leader: 1, Sessions: 4, Locks: 2}}); err != nil {
		t.Fatal(err)
	}
	c1, c2 := map[string]string{"server": "chubby-1"}, map[string]string{"server": "chubby-2"}
	if gauge("cellar_chubby_leader", c1) != 1 || gauge("cellar_chubby_leader", c2) != 0 || gauge("cellar_chubby_raft_leader_id", c2) != 1 ||
		gauge("cellar_chubby_sessions", c1) != 4 || gauge("cellar_chubby_locks", c2) != 2 {
		t.Fatal("Chubby gauges")
	}
	if _, err := m.AddPgwire("gateway", &fakePgwire{3}); err != nil {
		t.Fatal(err)
	}
	if gauge("cellar_pgwire_connections", map[string]string{"server": "gateway"}) != 3 {
		t.Fatal("pgwire connections")
	}
	if _, err := m.AddPgwire("", &fakePgwire{}); err == nil {
		t.Fatal("a source without a server name was added")
	}
	// The whole registry passes the client library's own consistency
	// checks (help, types, duplicate series).
	if _, err := testutil.GatherAndCount(reg); err != nil {
		t.Fatal(err)
	}
}

// TestInterceptors serves gRPC's health service with the Bigtable API's
// interceptors and calls it over loopback.
func TestInterceptors(t *testing.T) {
	m, reg := newMetrics(t)
	srv := grpc.NewServer(m.BigtableServerOptions("gateway")...)
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cli := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Check(ctx, &healthpb.HealthCheckRequest{Service: "up"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("check of an unknown service: %v", err)
	}
	// A stream is observed when it ends.
	w, err := cli.Watch(ctx, &healthpb.HealthCheckRequest{Service: "up"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m.bigtableRPCs.WithLabelValues("gateway", "Watch", "Canceled"))+testutil.ToFloat64(m.bigtableRPCs.WithLabelValues("gateway", "Watch", "OK")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	gw := map[string]string{"server": "gateway", "rpc": "Check"}
	if n := series(t, reg, "cellar_bigtable_rpc_duration_seconds", gw).Histogram.GetSampleCount(); n != 2 {
		t.Fatalf("Checks timed: %d", n)
	}
	if testutil.ToFloat64(m.bigtableRPCs.WithLabelValues("gateway", "Check", "OK")) != 1 || testutil.ToFloat64(m.bigtableRPCs.WithLabelValues("gateway", "Check", "NotFound")) != 1 {
		t.Fatal("Checks counted by code")
	}
	if n := testutil.CollectAndCount(m.bigtableRPC, "cellar_bigtable_rpc_duration_seconds"); n != 2 {
		t.Fatalf("%d histogram series; want Check and Watch", n)
	}
}

func TestRegisterProcess(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := RegisterProcess(reg, "demo"); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	if series(t, reg, "cellar_go_goroutines", map[string]string{"server": "demo"}).Gauge.GetValue() < 1 {
		t.Fatal("no goroutines")
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "cellar_") {
			t.Fatalf("%s lacks the cellar_ prefix", f.GetName())
		}
	}
	if err := RegisterProcess(reg, "demo"); err == nil {
		t.Fatal("the runtime collectors of one server were registered twice")
	}
}
