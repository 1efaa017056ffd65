package tablet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

func set(fam, qual string, ts int64, val string) model.Mutation {
	return model.SetCell(fam, []byte(qual), ts, []byte(val))
}

func mustApply(t *testing.T, s *Store, row string, muts ...model.Mutation) {
	t.Helper()
	if err := s.Apply(context.Background(), "t", &model.RowMutation{Row: []byte(row), Mutations: muts}); err != nil {
		t.Fatal(err)
	}
}

func readCells(t *testing.T, s *Store, row string, opts ReadOptions) string {
	t.Helper()
	r, _, err := s.ReadRow(context.Background(), "t", []byte(row), opts)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "%s:%s@%d=%s ", c.Family, c.Qualifier, c.Timestamp, c.Value)
	}
	return strings.TrimSpace(b.String())
}

func newTestStore(t *testing.T, fs dfs.FS, schema model.Schema, opts Options) *Store {
	t.Helper()
	s := openStore(t, fs, opts)
	t.Cleanup(func() { s.Close(context.Background()) })
	if len(s.Tables()) == 0 {
		if err := s.CreateTable(context.Background(), "t", schema, nil); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestDeletionHidesOnlyEarlierWrites(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	s := newTestStore(t, dfs.NewMem(), testSchema, smallOptions(clock))
	mustApply(t, s, "r", set("a", "q", 5000, "new-ts"))
	mustApply(t, s, "r", model.DeleteColumn("a", []byte("q"), model.TimeRange{}))
	// Written after the deletion with an older timestamp: it stays visible
	// (Bigtable's rule; HBase before 2.0 would hide it).
	mustApply(t, s, "r", set("a", "q", 1000, "old-ts"))
	mustApply(t, s, "r", set("b", "q", 3000, "b1"), model.DeleteFamily("b"), set("b", "q", 2000, "b2"))
	want := "a:q@1000=old-ts b:q@2000=b2"
	for _, step := range []string{"memtable", "flushed", "compacted"} {
		switch step {
		case "flushed":
			s.FlushAll(context.Background())
		case "compacted":
			s.Tablets()[0].Compact(context.Background(), true)
		}
		if got := readCells(t, s, "r", ReadOptions{}); got != want {
			t.Fatalf("%s: got %q, want %q", step, got, want)
		}
	}
	mustApply(t, s, "r", model.DeleteRow(), set("c", "x", 1, "after-row-delete"))
	if got := readCells(t, s, "r", ReadOptions{}); got != "c:x@1=after-row-delete" {
		t.Fatalf("after row delete: %q", got)
	}
}

func TestGCRulesApplyAtCompaction(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(int64(100 * time.Hour / time.Microsecond))
	hour := int64(time.Hour / time.Microsecond)
	schema := model.Schema{Families: []model.Family{
		{Name: "v2", GC: model.MaxVersionsRule(2)},
		{Name: "age", GC: model.MaxAgeRule(10 * time.Hour)},
		{Name: "union", GC: model.UnionRule(model.MaxVersionsRule(3), model.MaxAgeRule(10*time.Hour))},
		{Name: "inter", GC: model.IntersectionRule(model.MaxVersionsRule(1), model.MaxAgeRule(10*time.Hour))},
	}}
	s := newTestStore(t, dfs.NewMem(), schema, smallOptions(clock))
	now := clock.us.Load()
	for i, ts := range []int64{now - 50*hour, now - 20*hour, now - 5*hour, now - 2*hour, now - hour} {
		ts = ts / 1000 * 1000
		for _, f := range []string{"v2", "age", "union", "inter"} {
			mustApply(t, s, "r", set(f, "q", ts, fmt.Sprint(i)))
		}
	}
	all := readCells(t, s, "r", ReadOptions{})
	if strings.Count(all, "@") != 20 {
		t.Fatalf("before compaction every version is visible: %q", all)
	}
	// A merging compaction may apply age rules but never version counts.
	s.FlushAll(context.Background())
	mustApply(t, s, "r2", set("v2", "q", 1000, "x"))
	s.FlushAll(context.Background())
	if got := readCells(t, s, "r", ReadOptions{Families: []string{"v2"}}); strings.Count(got, "@") != 5 {
		t.Fatalf("versions collected before a major compaction: %q", got)
	}
	if err := s.Tablets()[0].Compact(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for fam, want := range map[string]string{
		"v2":    "=4 =3",
		"age":   "=4 =3 =2",
		"union": "=4 =3 =2",
		"inter": "=4 =3 =2", // older than 10h AND beyond the newest 1: collected
	} {
		got := readCells(t, s, "r", ReadOptions{Families: []string{fam}})
		var vals []string
		for _, c := range strings.Fields(got) {
			vals = append(vals, c[strings.Index(c, "="):])
		}
		if strings.Join(vals, " ") != want {
			t.Errorf("family %s after major compaction: %q, want values %q", fam, got, want)
		}
	}
}

func TestLocalityGroupsAndInMemoryFiles(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	mem := dfs.NewMem()
	s := newTestStore(t, mem, testSchema, smallOptions(clock))
	for i := 0; i < 50; i++ {
		row := fmt.Sprintf("r%02d", i)
		mustApply(t, s, row, set("a", "q", 1000, "A"+row), set("b", "q", 1000, "B"+row), set("c", "q", 1000, "C"+row))
	}
	if err := s.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Each group has SSTables of its own, holding its family's 50 cells.
	st := s.Stats().Tablets[0]
	for _, g := range st.Groups {
		var n uint64
		for _, f := range g.Files {
			n += f.Entries
		}
		if n != 50 {
			t.Fatalf("group %s holds %d entries, want 50: %+v", g.Name, n, st.Groups)
		}
	}
	// The in-memory group "hot" (family c) never touches its file again:
	// destroy every SSTable on disk and read c.
	names, _ := mem.List("db/sst")
	for _, n := range names {
		dfs.WriteFile(mem, "db/sst/"+n, []byte("garbage"))
	}
	if got := readCells(t, s, "r07", ReadOptions{Families: []string{"c"}}); got != "c:q@1000=Cr07" {
		t.Fatalf("in-memory group read %q", got)
	}
}

func TestCorruptSSTableIsReportedWithFileAndOffset(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	mem := dfs.NewMem()
	opts := smallOptions(clock)
	opts.ScanCacheSize = 0
	s := openStore(t, mem, opts)
	ctx := context.Background()
	s.CreateTable(ctx, "t", model.Schema{Families: []model.Family{{Name: "a"}}}, nil)
	for i := 0; i < 200; i++ {
		mustApply(t, s, fmt.Sprintf("r%03d", i), set("a", "q", 1000, strings.Repeat("v", 50)))
	}
	s.FlushAll(ctx)
	s.Tablets()[0].Compact(ctx, true) // one file holds every row
	s.Close(ctx)
	names, _ := mem.List("db/sst")
	if len(names) != 1 {
		t.Fatalf("files after a major compaction: %v", names)
	}
	name := "db/sst/" + names[0]
	data, _ := dfs.ReadFile(mem, name)
	data[100] ^= 0xFF // inside the first data block
	dfs.WriteFile(mem, name, data)

	s = openStore(t, mem, opts)
	defer s.Close(ctx)
	_, _, err := s.ReadRow(ctx, "t", []byte("r000"), ReadOptions{})
	var ce *model.CorruptionError
	if !errors.As(err, &ce) || ce.File != name {
		t.Fatalf("read of a corrupt block: %v, want a CorruptionError naming %s", err, name)
	}
	sc := s.Scan(ctx, "t", model.RowRange{}, ReadOptions{})
	for sc.Next() {
	}
	if !errors.Is(sc.Err(), model.ErrCorruption) {
		t.Fatalf("scan over a corrupt block: %v", sc.Err())
	}
	sc.Close()
}

// gatedFS holds up the creation of SSTables while closed is set, outside
// any lock of the file system underneath.
type gatedFS struct {
	dfs.FS
	closed atomic.Bool
}

func (g *gatedFS) Create(name string) (dfs.File, error) {
	for strings.HasSuffix(name, ".sst") && g.closed.Load() {
		time.Sleep(time.Millisecond)
	}
	return g.FS.Create(name)
}

func TestWritersStallUntilFlushesCatchUp(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	mem := &gatedFS{FS: dfs.NewMem()}
	block := &mem.closed
	opts := smallOptions(clock)
	opts.MaxFrozenMemtables = 1
	s := newTestStore(t, mem, model.Schema{Families: []model.Family{{Name: "a"}}}, opts)
	block.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var err error
	n := 0
	for ; err == nil && n < 100000; n++ {
		err = s.Apply(ctx, "t", &model.RowMutation{Row: []byte(fmt.Sprint(n)), Mutations: []model.Mutation{set("a", "q", 1000, strings.Repeat("x", 100))}})
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("writes with flushes blocked ended with %v after %d writes; want a stall", err, n)
	}
	if mb := s.Stats().MemtableBytes; mb > 4*opts.MemtableSize {
		t.Fatalf("memtables grew to %d bytes while stalled (limit about %d)", mb, 2*opts.MemtableSize)
	}
	block.Store(false)
	if err := s.Apply(context.Background(), "t", &model.RowMutation{Row: []byte("after"), Mutations: []model.Mutation{set("a", "q", 1000, "x")}}); err != nil {
		t.Fatalf("write after flushes resumed: %v", err)
	}
}

func TestServerTimestampsNeverGoBackwards(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	mem := dfs.NewMem()
	opts := smallOptions(clock)
	s := openStore(t, mem, opts)
	ctx := context.Background()
	s.CreateTable(ctx, "t", model.Schema{Families: []model.Family{{Name: "a"}}}, nil)
	future := clock.us.Load() + 3_600_000_000
	mustApply(t, s, "r", set("a", "client", future+123, "x"))
	clock.us.Add(-1_000_000) // the wall clock steps back
	mustApply(t, s, "r", set("a", "server", model.ServerTimestamp, "y"))
	got, _, _ := s.ReadRow(ctx, "t", []byte("r"), ReadOptions{Families: []string{"a"}})
	var ts int64
	for _, c := range got.Cells {
		if string(c.Qualifier) == "server" {
			ts = c.Timestamp
		}
	}
	if ts < future+123 || ts%1000 != 0 {
		t.Fatalf("server timestamp %d is below the tablet's newest %d or not in milliseconds", ts, future+123)
	}
	s.FlushAll(ctx)
	s.Close(ctx)
	s = openStore(t, mem, opts)
	defer s.Close(ctx)
	cells, err := s.ReadModifyWrite(ctx, "t", []byte("r2"), []ReadModifyWriteRule{{Family: "a", Qualifier: []byte("n"), Increment: 1}})
	if err != nil || cells[0].Timestamp < ts {
		t.Fatalf("after restart the server timestamp went back to %v (%v)", cells, err)
	}
}

func TestSplitSharesFilesAndGarbageCollectsThem(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	mem := dfs.NewMem()
	s := newTestStore(t, mem, model.Schema{Families: []model.Family{{Name: "a"}}}, smallOptions(clock))
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		mustApply(t, s, fmt.Sprintf("r%03d", i), set("a", "q", 1000, fmt.Sprint(i)))
	}
	s.FlushAll(ctx)
	before, _ := mem.List("db/sst")
	kids, err := s.Split(ctx, s.Tablets()[0].ID(), []byte("r050"))
	if err != nil {
		t.Fatal(err)
	}
	after, _ := mem.List("db/sst")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("split rewrote files: %v -> %v", before, after)
	}
	if got := readCells(t, s, "r010", ReadOptions{}); got != "a:q@1000=10" {
		t.Fatalf("left child read %q", got)
	}
	if got := readCells(t, s, "r090", ReadOptions{}); got != "a:q@1000=90" {
		t.Fatalf("right child read %q", got)
	}
	// Each child rewrites its part; the shared file goes once neither needs
	// it.
	kids[0].Compact(ctx, true)
	if names, _ := mem.List("db/sst"); !contains(names, before[0]) {
		t.Fatal("shared file deleted while the right child still reads it")
	}
	kids[1].Compact(ctx, true)
	if names, _ := mem.List("db/sst"); contains(names, before[0]) {
		t.Fatalf("shared file %s still there after both children compacted: %v", before[0], names)
	}
	n := 0
	sc := s.Scan(ctx, "t", model.RowRange{}, ReadOptions{})
	for sc.Next() {
		n++
	}
	sc.Close()
	if n != 100 {
		t.Fatalf("scan after split and compactions found %d rows, want 100", n)
	}
}

func TestScanCacheServesRepeatedReads(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	s := newTestStore(t, dfs.NewMem(), model.Schema{Families: []model.Family{{Name: "a"}}}, smallOptions(clock))
	mustApply(t, s, "r", set("a", "q", 1000, "v1"))
	s.FlushAll(context.Background())
	for i := 0; i < 10; i++ {
		readCells(t, s, "r", ReadOptions{})
	}
	if st := s.Stats().ScanCache; st.Hits < 9 {
		t.Fatalf("scan cache: %+v", st)
	}
	// A write to the row is seen at once: the cache holds SSTable entries
	// only, and the memtable is merged on top.
	mustApply(t, s, "r", set("a", "q", 2000, "v2"))
	if got := readCells(t, s, "r", ReadOptions{MaxVersions: 1}); got != "a:q@2000=v2" {
		t.Fatalf("read after write: %q", got)
	}
}

func TestSecondOpenOfADirectoryFails(t *testing.T) {
	mem := dfs.NewMem()
	s := openStore(t, mem, Options{})
	defer s.Close(context.Background())
	if err := New(mem, "db", Options{}).Open(context.Background()); !errors.Is(err, dfs.ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
}

func TestBadInputGetsClearErrors(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	s := newTestStore(t, dfs.NewMem(), model.Schema{Families: []model.Family{{Name: "a"}}}, smallOptions(clock))
	ctx := context.Background()
	for _, c := range []struct {
		m    model.RowMutation
		want error
	}{
		{model.RowMutation{Row: make([]byte, model.MaxRowKeyLen+1), Mutations: []model.Mutation{set("a", "q", 0, "")}}, model.ErrInvalidArgument},
		{model.RowMutation{Row: []byte("r")}, model.ErrInvalidArgument},
		{model.RowMutation{Row: []byte("r"), Mutations: []model.Mutation{set("nope", "q", 0, "")}}, model.ErrNotFound},
		{model.RowMutation{Row: []byte("r"), Mutations: []model.Mutation{set("a", "q", -5, "")}}, model.ErrInvalidArgument},
		{model.RowMutation{Row: []byte("r"), Mutations: []model.Mutation{model.DeleteColumn("a", nil, model.TimeRange{Start: 5, End: 5})}}, model.ErrInvalidArgument},
	} {
		if err := s.Apply(ctx, "t", &c.m); !errors.Is(err, c.want) {
			t.Errorf("Apply(%.40v) = %v, want %v", c.m, err, c.want)
		}
	}
	if err := s.Apply(ctx, "missing", &model.RowMutation{Row: []byte("r"), Mutations: []model.Mutation{set("a", "q", 0, "")}}); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("Apply to a missing table: %v", err)
	}
	if err := s.CreateTable(ctx, "t", model.Schema{Families: []model.Family{{Name: "a"}}}, nil); !errors.Is(err, model.ErrFailedPrecondition) {
		t.Errorf("CreateTable of an existing table: %v", err)
	}
	if err := s.CreateTable(ctx, "u", model.Schema{Families: []model.Family{{Name: "a:b"}}}, nil); !errors.Is(err, model.ErrInvalidArgument) {
		t.Errorf("CreateTable with a bad family: %v", err)
	}
}

func TestSortedRunsAndPickCompaction(t *testing.T) {
	key := func(r string) []byte { return model.AppendKey(nil, []byte(r), "f", nil, 1000, 1, model.KindSetCell) }
	file := func(lo, hi string, size uint64) *table {
		return &table{meta: fileMeta{Smallest: key(lo), Largest: key(hi), Size: size}}
	}
	// Newest first: a sequential load (disjoint, ascending), then two
	// overlapping flushes.
	files := []*table{file("g", "h", 10), file("e", "f", 10), file("c", "d", 10), file("a", "z", 10), file("b", "y", 10)}
	if got := fmt.Sprint(sortedRuns(files)); got != "[3 1 1]" {
		t.Fatalf("runs = %s, want [3 1 1]", got)
	}
	o := Options{CompactionTrigger: 3, SizeRatio: 1}
	if k := pickCompaction(files, &o); k != 5 {
		t.Fatalf("pick = %d files, want all 5 (three similar runs)", k)
	}
	o.CompactionTrigger = 4
	if k := pickCompaction(files, &o); k != 0 {
		t.Fatalf("pick = %d files with only 3 runs under a trigger of 4", k)
	}
	var seq []*table
	for i := 20; i > 0; i-- {
		seq = append(seq, file(fmt.Sprintf("k%02da", i), fmt.Sprintf("k%02dz", i), 10))
	}
	if k := pickCompaction(seq, &o); k != 0 {
		t.Fatalf("a sequential load of 20 disjoint files should not be merged; pick = %d", k)
	}
}

// TestApplyBatchAcrossTablets: a batch spread over tablets applies each
// row atomically, the rows of one key in order, and reports per entry.
func TestApplyBatchAcrossTablets(t *testing.T) {
	s := openStore(t, dfs.NewMem(), smallOptions(&fakeClock{}))
	defer s.Close(context.Background())
	ctx := context.Background()
	if err := s.CreateTable(ctx, "t", testSchema, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	batch := []*model.RowMutation{
		{Row: []byte("a"), Mutations: []model.Mutation{set("a", "q", 1000, "first")}},
		{Row: []byte("z"), Mutations: []model.Mutation{set("a", "q", 1000, "z")}},
		{Row: []byte("a"), Mutations: []model.Mutation{set("a", "q", 1000, "second")}},
		{Row: []byte("b"), Mutations: []model.Mutation{set("nofamily", "q", 1000, "x")}},
	}
	errs := s.ApplyBatch(ctx, "t", batch)
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || errs[3] == nil {
		t.Fatalf("errors: %v", errs)
	}
	if got := readCells(t, s, "a", ReadOptions{}); got != "a:q@1000=second" {
		t.Fatalf("row a: %s", got)
	}
	if got := readCells(t, s, "z", ReadOptions{}); got != "a:q@1000=z" {
		t.Fatalf("row z: %s", got)
	}
}
