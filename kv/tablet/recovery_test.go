package tablet

import (
	"context"
	"strconv"
	"testing"

	"github.com/cellardb/cellar/kv/commitlog"
	"github.com/cellardb/cellar/kv/dfs"
)

// peekCatalog calls peek before every record.
type peekCatalog struct {
	Catalog
	peek func()
}

func (c peekCatalog) Record(ctx context.Context, put, drop []Descriptor) error {
	c.peek()
	return c.Catalog.Record(ctx, put, drop)
}

// While a load replays a dead server's log, Stats list it with the
// records replayed so far; once it serves, it is a tablet like the others.
func TestStatsShowRecovery(t *testing.T) {
	fs, cat := dfs.NewMem(), &memCatalog{rows: map[string]Descriptor{}, owner: map[string]string{}}
	a := openShared(t, fs, cat, "a")
	ctx := context.Background()
	if err := a.CreateTable(ctx, "t", testSchema, nil); err != nil {
		t.Fatal(err)
	}
	fillRows(t, a, "p", 20)
	a.Close(ctx) // a crash: the rows are only in the log
	d, _ := cat.lookup(t, "t", "p")
	out := "root/recovery/a"
	if _, err := commitlog.Partition(ctx, fs, "root/logs/a", out, map[uint64]uint64{d.ID: d.RedoLSN}, commitlog.Options{}); err != nil {
		t.Fatal(err)
	}

	var b *Store
	var seen []RecoveryProgress
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	opts := smallOptions(clock)
	opts.Shared = &Shared{Name: "b", Catalog: peekCatalog{Catalog: cat.forStore("b"), peek: func() {
		seen = append(seen, b.Stats().Recovering...)
	}}}
	b = New(fs, "root", opts)
	if err := b.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	spec := specOf(d)
	spec.Replay, spec.ReplayTablet = out+"/"+strconv.FormatUint(d.ID, 10), d.ID
	if _, err := b.Load(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 {
		t.Fatal("the recovery never showed in Stats")
	}
	last := seen[len(seen)-1]
	if last.Table != "t" || last.Log != spec.Replay || last.Records != 20 || last.Started.IsZero() {
		t.Fatalf("recovery progress: %+v", last)
	}
	st := b.Stats()
	if len(st.Recovering) != 0 || len(st.Tablets) != 1 {
		t.Fatalf("after the load: recovering %+v, %d tablets", st.Recovering, len(st.Tablets))
	}
	checkRows(t, b, "p", 20)
}
