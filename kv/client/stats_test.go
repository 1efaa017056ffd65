package client_test

import (
	"fmt"
	"testing"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// scanStats scans rng of t with stats and returns the rows and the stats.
func scanStats(t *testing.T, c *client.Client, rng model.RowRange, f client.Filter, limit int64) (int, client.ReadStats) {
	t.Helper()
	sc := c.Scan(ctx(t), "t", rng, f, limit)
	n := 0
	for sc.Next() {
		n++
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	return n, sc.Stats()
}

// TestReadStatsAcrossTablets: a scan's stats sum its calls to t's three
// tablets, over gRPC and through the in-process stubs alike.
func TestReadStatsAcrossTablets(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	var ms []*model.RowMutation
	for i := 0; i < 26; i++ {
		ms = append(ms, set(string(rune('a'+i)), fmt.Sprint(i)))
	}
	for i, err := range cl.c.ApplyBulk(c, "t", ms) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	// One file of one block in each tablet.
	if err := cl.a.store.FlushAll(c); err != nil {
		t.Fatal(err)
	}
	servers := map[string]pb.TabletServerServer{cl.meta.addr: cl.meta.srv, cl.a.addr: cl.a.srv, cl.b.addr: cl.b.srv}
	local := client.New(client.Options{Root: cl.root, Prefetch: 2,
		Local: func(addr string) (pb.TabletServerServer, bool) { s, ok := servers[addr]; return s, ok }})
	t.Cleanup(func() { local.Close() })

	// Without WantStats there are none.
	if n, st := scanStats(t, cl.c, model.RowRange{}, client.Filter{}, 0); n != 26 || st != (client.ReadStats{}) {
		t.Fatalf("scan without stats: %d rows, %+v", n, st)
	}
	// That scan cached the three blocks.
	want := client.ReadStats{Rows: 26, Cells: 26, CacheHits: 3}
	for _, cli := range []*client.Client{cl.c, local} {
		if n, st := scanStats(t, cli, model.RowRange{}, client.Filter{WantStats: true}, 0); n != 26 || st != want {
			t.Fatalf("scan of three tablets: %d rows, %+v, want %+v", n, st, want)
		}
	}
	// From "e", 8 rows, through a filter that drops "h": two tablets, and
	// the rows read are more than the rows returned.
	f := client.Filter{WantStats: true, ValueRegex: "[^7]+"}
	if n, st := scanStats(t, cl.c, model.RowRange{Start: []byte("e")}, f, 8); n != 8 || st.Rows != 9 || st.Cells != 9 || st.CacheHits != 2 || st.Blocks != 0 {
		t.Fatalf("scan with a limit and a filter: %d rows, %+v", n, st)
	}

	// ReadRowStats: a row, and a missing one the bloom filter rules out.
	for _, cli := range []*client.Client{cl.c, local} {
		row, found, st, err := cli.ReadRowStats(c, "t", []byte("q"), client.Filter{WantStats: true})
		if err != nil || !found || string(row.Cells[0].Value) != "16" {
			t.Fatalf("ReadRowStats: %v %v %v", row, found, err)
		}
		if st != (client.ReadStats{Rows: 1, Cells: 1, CacheHits: 1, BloomChecks: 1}) {
			t.Fatalf("ReadRowStats: %+v", st)
		}
		_, found, st, err = cli.ReadRowStats(c, "t", []byte("qq"), client.Filter{WantStats: true})
		if err != nil || found || st != (client.ReadStats{BloomChecks: 1, BloomUseful: 1}) {
			t.Fatalf("ReadRowStats of a missing row: %v %+v %v", found, st, err)
		}
		if _, found, st, err = cli.ReadRowStats(c, "t", []byte("q"), client.Filter{}); err != nil || !found || st != (client.ReadStats{}) {
			t.Fatalf("ReadRowStats without WantStats: %v %+v %v", found, st, err)
		}
	}

	// Aggregate fills spec.Stats with the sum of its calls.
	for _, cli := range []*client.Client{cl.c, local} {
		var st client.ReadStats
		groups, err := cli.Aggregate(c, "t", []model.RowRange{{}}, client.Filter{}, client.AggregateSpec{Aggs: []client.AggSpec{{Func: client.AggCountRows}}, Stats: &st})
		if err != nil || groups[0].Values[0].Count != 26 {
			t.Fatalf("Aggregate: %v %v", groups, err)
		}
		if st != (client.ReadStats{Rows: 26, Cells: 26, CacheHits: 3}) {
			t.Fatalf("Aggregate's stats: %+v", st)
		}
	}

	// Add sums every field.
	a := client.ReadStats{Rows: 1, Cells: 2, Blocks: 3, CacheHits: 4, BloomChecks: 5, BloomUseful: 6}
	a.Add(a)
	if a != (client.ReadStats{Rows: 2, Cells: 4, Blocks: 6, CacheHits: 8, BloomChecks: 10, BloomUseful: 12}) {
		t.Fatalf("Add: %+v", a)
	}
}

// TestScanStatsAcrossCalls: a scan of one tablet in three calls sums
// their stats.
func TestScanStatsAcrossCalls(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	var ms []*model.RowMutation
	for i := 0; i < 2*1000+17; i++ {
		ms = append(ms, set(fmt.Sprintf("a%05d", i), "v"))
	}
	for i, err := range cl.c.ApplyBulk(c, "t", ms) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	cl.calls.Store(0)
	n, st := scanStats(t, cl.c, model.RowRange{}, client.Filter{WantStats: true}, 0)
	// The rows are in the memtable: no blocks.
	if n != len(ms) || st != (client.ReadStats{Rows: int64(len(ms)), Cells: int64(len(ms))}) {
		t.Fatalf("%d rows, %+v", n, st)
	}
	if calls := cl.calls.Load(); calls < 3 {
		t.Fatalf("the scan took %d calls, the test wants several", calls)
	}
}
