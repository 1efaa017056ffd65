package tablet

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/cellardb/cellar/kv/commitlog"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// memCatalog is a catalog in memory, keyed like METADATA by table and end.
type memCatalog struct {
	mu    sync.Mutex
	rows  map[string]Descriptor
	owner map[string]string // which store recorded the row last
	name  string            // set per store through forStore
}

type storeCatalog struct {
	c    *memCatalog
	name string
}

func (s storeCatalog) Record(ctx context.Context, put, drop []Descriptor) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	for _, d := range put {
		k := d.Table + "\x00" + string(d.Range.End)
		s.c.rows[k] = d
		s.c.owner[k] = s.name
	}
	for _, d := range drop {
		delete(s.c.rows, d.Table+"\x00"+string(d.Range.End))
	}
	return ctx.Err()
}

func (c *memCatalog) forStore(name string) Catalog { return storeCatalog{c: c, name: name} }

func (c *memCatalog) lookup(t *testing.T, table, row string) (Descriptor, string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, d := range c.rows {
		if d.Table == table && d.Range.Contains([]byte(row)) {
			return d, c.owner[k]
		}
	}
	t.Fatalf("no descriptor of %q holds row %q", table, row)
	return Descriptor{}, ""
}

func (c *memCatalog) ranges(table string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, d := range c.rows {
		if d.Table == table {
			out = append(out, fmt.Sprintf("[%s,%s)", d.Range.Start, d.Range.End))
		}
	}
	sort.Strings(out)
	return out
}

func openShared(t *testing.T, fs dfs.FS, cat *memCatalog, name string) *Store {
	t.Helper()
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	opts := smallOptions(clock)
	opts.Shared = &Shared{Name: name, Catalog: cat.forStore(name)}
	s := New(fs, "root", opts)
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func specOf(d Descriptor) LoadSpec {
	return LoadSpec{Table: d.Table, Range: d.Range, Schema: testSchema, Files: d.Files, FlushedSeq: d.FlushedSeq, MaxTS: d.MaxTS}
}

func fillRows(t *testing.T, s *Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		row := fmt.Sprintf("%s%04d", prefix, i)
		mustApply(t, s, row, set("a", "q", model.ServerTimestamp, "v-"+row), set("b", "x", 1000, row))
	}
}

func checkRows(t *testing.T, s *Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		row := fmt.Sprintf("%s%04d", prefix, i)
		r, found, err := s.ReadRow(context.Background(), "t", []byte(row), ReadOptions{})
		if err != nil || !found || len(r.Cells) != 2 || string(r.Cells[0].Value) != "v-"+row {
			t.Fatalf("row %s: found=%v err=%v cells=%v", row, found, err, r.Cells)
		}
	}
}

// A tablet moves from one store to another with the two minor
// compactions, and the other store serves it from its descriptor alone.
func TestSharedMove(t *testing.T) {
	fs, cat := dfs.NewMem(), &memCatalog{rows: map[string]Descriptor{}, owner: map[string]string{}}
	a, b := openShared(t, fs, cat, "a"), openShared(t, fs, cat, "b")
	ctx := context.Background()
	if err := a.CreateTable(ctx, "t", testSchema, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	if got := cat.ranges("t"); fmt.Sprint(got) != "[[,m) [m,)]" {
		t.Fatalf("catalog after create: %v", got)
	}
	fillRows(t, a, "n", 300) // the upper tablet; some of it flushed, some not
	upper, _ := a.Locate("t", []byte("n"))
	maxTS := upper.maxTS
	if _, err := a.Unload(ctx, upper.ID()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.ReadRow(ctx, "t", []byte("n0001"), ReadOptions{}); err == nil {
		t.Fatal("the unloaded tablet still serves")
	}
	d, owner := cat.lookup(t, "t", "n")
	if owner != "a" || len(d.Files) == 0 {
		t.Fatalf("descriptor after unload: owner %s, %+v", owner, d)
	}
	if _, err := b.Load(ctx, specOf(d)); err != nil {
		t.Fatal(err)
	}
	if _, owner := cat.lookup(t, "t", "n"); owner != "b" {
		t.Fatalf("the load did not record the new location: owner %s", owner)
	}
	checkRows(t, b, "n", 300)
	moved, _ := b.Locate("t", []byte("n"))
	if maxTS == 0 || moved.serverTimestamp() < maxTS {
		t.Fatalf("timestamps went back after the move: %d < %d", moved.serverTimestamp(), maxTS)
	}
	if _, err := b.Load(ctx, specOf(d)); err == nil {
		t.Fatal("a second load of a served tablet succeeded")
	}
}

// A store dies with unflushed writes; its log is partitioned once, and
// another store loads its tablet from the descriptor and the partition.
func TestSharedRecoveryFromPartitionedLog(t *testing.T) {
	fs, cat := dfs.NewMem(), &memCatalog{rows: map[string]Descriptor{}, owner: map[string]string{}}
	a := openShared(t, fs, cat, "a")
	ctx := context.Background()
	if err := a.CreateTable(ctx, "t", testSchema, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	fillRows(t, a, "c", 200)
	fillRows(t, a, "p", 200)
	// Split the lower tablet, so recovery also covers a tablet the log
	// knows under its parent's id before the split.
	lower, _ := a.Locate("t", []byte("c"))
	if _, err := a.Split(ctx, lower.ID(), []byte("c0100")); err != nil {
		t.Fatal(err)
	}
	fillRows(t, a, "d", 50) // after the split, unflushed
	a.Close(ctx)            // a crash: nothing more is flushed or recorded

	from := map[uint64]uint64{}
	for _, r := range []string{"c", "c0150", "p"} {
		d, _ := cat.lookup(t, "t", r)
		from[d.ID] = d.RedoLSN
	}
	out := "root/recovery/a"
	if _, err := commitlog.Partition(ctx, fs, "root/logs/a", out, from, commitlog.Options{}); err != nil {
		t.Fatal(err)
	}
	b := openShared(t, fs, cat, "b")
	for _, r := range []string{"c", "c0150", "p"} {
		d, _ := cat.lookup(t, "t", r)
		spec := specOf(d)
		spec.Replay, spec.ReplayTablet = out+"/"+strconv.FormatUint(d.ID, 10), d.ID
		if _, err := b.Load(ctx, spec); err != nil {
			t.Fatalf("load %v: %v", d.Range, err)
		}
	}
	checkRows(t, b, "c", 200)
	checkRows(t, b, "d", 50)
	checkRows(t, b, "p", 200)
	// The loads flushed the replayed writes: the descriptors now need no
	// log of a.
	for _, r := range []string{"c", "d", "p"} {
		if _, owner := cat.lookup(t, "t", r); owner != "b" {
			t.Fatalf("row %s: owner %s after recovery", r, owner)
		}
	}
}

// halfCatalog writes the first descriptor of a split and then fails as a
// fenced server's catalog does.
type halfCatalog struct{ storeCatalog }

func (h halfCatalog) Record(ctx context.Context, put, drop []Descriptor) error {
	if len(put) == 2 {
		h.storeCatalog.Record(ctx, put[:1], nil)
		return fmt.Errorf("%w: the lock is lost", model.ErrNotServing)
	}
	return h.storeCatalog.Record(ctx, put, drop)
}

// A split whose second record fails leaves METADATA with the lower child
// and the parent; the store then stops serving the parent, all flushed,
// and the two rows (the parent's clipped above the child) load elsewhere
// without any log.
func TestSharedSplitHalfRecorded(t *testing.T) {
	fs, cat := dfs.NewMem(), &memCatalog{rows: map[string]Descriptor{}, owner: map[string]string{}}
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	opts := smallOptions(clock)
	opts.Shared = &Shared{Name: "a", Catalog: halfCatalog{storeCatalog{c: cat, name: "a"}}}
	a := New(fs, "root", opts)
	ctx := context.Background()
	if err := a.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if err := a.CreateTable(ctx, "t", testSchema, nil); err != nil {
		t.Fatal(err)
	}
	fillRows(t, a, "r", 200)
	parent, _ := a.Locate("t", []byte("r"))
	if _, err := a.Split(ctx, parent.ID(), []byte("r0100")); err == nil {
		t.Fatal("the split succeeded")
	}
	if _, _, err := a.ReadRow(ctx, "t", []byte("r0001"), ReadOptions{}); err == nil {
		t.Fatal("the parent still serves after a half-recorded split")
	}
	cat.mu.Lock()
	lower, okLower := cat.rows["t\x00r0100"]
	upper, okUpper := cat.rows["t\x00"]
	cat.mu.Unlock()
	if !okLower || !okUpper || len(upper.Range.Start) != 0 {
		t.Fatalf("rows after a half-recorded split: %v", cat.ranges("t"))
	}
	upper.Range.Start = lower.Range.End // the master's clipping
	b := openShared(t, fs, cat, "b")
	for _, d := range []Descriptor{lower, upper} {
		if _, err := b.Load(ctx, specOf(d)); err != nil {
			t.Fatal(err)
		}
	}
	checkRows(t, b, "r", 200)
}
