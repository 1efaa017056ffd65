package tablet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// refModel is the reference the randomized test checks the store against:
// it applies each row's mutations in order to a map of cells. A deletion
// removes what is there when it runs, so a later write with an older
// timestamp survives it: the rule the engine implements with sequence
// numbers.
type refModel struct {
	rows map[string]map[refCell][]byte
}

type refCell struct {
	fam  string
	qual string
	ts   int64
}

func (m *refModel) apply(row []byte, muts []model.Mutation) {
	out := m.rows[string(row)]
	if out == nil {
		out = map[refCell][]byte{}
		m.rows[string(row)] = out
	}
	for _, mu := range muts {
		switch mu.Kind {
		case model.KindSetCell:
			out[refCell{mu.Family, string(mu.Qualifier), mu.Timestamp}] = bytes.Clone(mu.Value)
		case model.KindDeleteColumn:
			for c := range out {
				if c.fam == mu.Family && c.qual == string(mu.Qualifier) && mu.Range.Contains(c.ts) {
					delete(out, c)
				}
			}
		case model.KindDeleteFamily:
			for c := range out {
				if c.fam == mu.Family {
					delete(out, c)
				}
			}
		case model.KindDeleteRow:
			clear(out)
		}
	}
}

func (m *refModel) cells(row string) map[refCell][]byte { return m.rows[row] }

// read returns what ReadRow should return for row under opts.
func (m *refModel) read(row string, opts ReadOptions) []model.Cell {
	var keys []refCell
	for c := range m.cells(row) {
		keys = append(keys, c)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.fam != b.fam {
			return a.fam < b.fam
		}
		if a.qual != b.qual {
			return a.qual < b.qual
		}
		return a.ts > b.ts
	})
	cells := m.cells(row)
	var out []model.Cell
	versions := 0
	var last refCell
	for i, k := range keys {
		if opts.Families != nil && !contains(opts.Families, k.fam) {
			continue
		}
		if !opts.TimeRange.Contains(k.ts) {
			continue
		}
		if i == 0 || k.fam != last.fam || k.qual != last.qual {
			versions = 0
		}
		last = k
		versions++
		if opts.MaxVersions > 0 && versions > opts.MaxVersions {
			continue
		}
		out = append(out, model.Cell{Family: k.fam, Qualifier: []byte(k.qual), Timestamp: k.ts, Value: cells[k]})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (m *refModel) latest(row, fam, qual string) []byte {
	var best int64 = -1
	var val []byte
	for c, v := range m.cells(row) {
		if c.fam == fam && c.qual == qual && c.ts > best {
			best, val = c.ts, v
		}
	}
	return val
}

func cellsString(cs []model.Cell) string {
	var b bytes.Buffer
	for _, c := range cs {
		fmt.Fprintf(&b, "%s:%q@%d=%q ", c.Family, c.Qualifier, c.Timestamp, c.Value)
	}
	return b.String()
}

func sameCells(a, b []model.Cell) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Family != b[i].Family || !bytes.Equal(a[i].Qualifier, b[i].Qualifier) ||
			a[i].Timestamp != b[i].Timestamp || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// fakeClock is a wall clock the test moves by hand.
type fakeClock struct{ us atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.UnixMicro(c.us.Load()) }
func (c *fakeClock) tick()          { c.us.Add(1000) }

var testSchema = model.Schema{
	Families: []model.Family{
		{Name: "a"},
		{Name: "b", LocalityGroup: "cold"},
		{Name: "c", LocalityGroup: "hot"},
	},
	LocalityGroups: []model.LocalityGroup{
		{Name: "cold", Compression: model.CompressionNone},
		{Name: "hot", InMemory: true, NoBloom: true},
	},
}

func smallOptions(clock *fakeClock) Options {
	return Options{
		MemtableSize:       8 << 10,
		MaxFrozenMemtables: 2,
		BlockSize:          1 << 10,
		CompactionTrigger:  3,
		StallRuns:          64,
		LogSegmentSize:     8 << 10,
		MaxLogSize:         64 << 10,
		BlockCacheSize:     64 << 10,
		ScanCacheSize:      16 << 10,
		Clock:              clock.now,
	}
}

func openStore(t testing.TB, fs dfs.FS, opts Options) *Store {
	t.Helper()
	s := New(fs, "db", opts)
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

type modelTest struct {
	t      *testing.T
	r      *rand.Rand
	fs     *dfs.Mem
	proc   *dfs.ProcessFS
	opts   Options
	s      *Store
	ref    *refModel
	clock  *fakeClock
	values int
}

func (mt *modelTest) row() []byte { return []byte(fmt.Sprintf("r%02d", mt.r.Intn(40))) }

func (mt *modelTest) fam() string { return []string{"a", "b", "c"}[mt.r.Intn(3)] }

func (mt *modelTest) qual() []byte {
	q := []string{"", "x", "y", "z\x00"}[mt.r.Intn(4)]
	return []byte(q)
}

func (mt *modelTest) value() []byte {
	mt.values++
	return []byte("v" + strconv.Itoa(mt.values))
}

func (mt *modelTest) timeRange() model.TimeRange {
	switch mt.r.Intn(4) {
	case 0:
		return model.TimeRange{}
	case 1:
		return model.TimeRange{Start: int64(mt.r.Intn(5)) * 1000}
	default:
		s := int64(mt.r.Intn(5)) * 1000
		return model.TimeRange{Start: s, End: s + int64(1+mt.r.Intn(3))*1000}
	}
}

func (mt *modelTest) mutation() model.Mutation {
	switch k := mt.r.Intn(20); {
	case k < 13:
		ts := int64(1+mt.r.Intn(5)) * 1000
		if mt.r.Intn(4) == 0 {
			ts = model.ServerTimestamp
		}
		return model.SetCell(mt.fam(), mt.qual(), ts, mt.value())
	case k < 17:
		return model.DeleteColumn(mt.fam(), mt.qual(), mt.timeRange())
	case k < 19:
		return model.DeleteFamily(mt.fam())
	default:
		return model.DeleteRow()
	}
}

// resolve fills in server timestamps the way the tablet will: the test
// clock only moves forward and is far above every client timestamp.
func (mt *modelTest) resolve(muts []model.Mutation) []model.Mutation {
	out := append([]model.Mutation(nil), muts...)
	now := mt.clock.us.Load()
	for i := range out {
		if out[i].Kind == model.KindSetCell && out[i].Timestamp == model.ServerTimestamp {
			out[i].Timestamp = now
		}
	}
	return out
}

func (mt *modelTest) readOptions() ReadOptions {
	var o ReadOptions
	if mt.r.Intn(3) == 0 {
		o.Families = []string{mt.fam()}
		if mt.r.Intn(2) == 0 {
			o.Families = append(o.Families, mt.fam())
		}
	}
	if mt.r.Intn(4) == 0 {
		o.TimeRange = mt.timeRange()
	}
	if mt.r.Intn(3) == 0 {
		o.MaxVersions = 1 + mt.r.Intn(2)
	}
	return o
}

func (mt *modelTest) check(ctx context.Context, op string) {
	row := mt.row()
	opts := mt.readOptions()
	got, found, err := mt.s.ReadRow(ctx, "t", row, opts)
	if err != nil {
		mt.t.Fatalf("after %s: ReadRow(%s): %v", op, row, err)
	}
	want := mt.ref.read(string(row), opts)
	if found != (len(want) > 0) || !sameCells(got.Cells, want) {
		mt.t.Fatalf("after %s: ReadRow(%s, %+v)\n got %s\nwant %s", op, row, opts, cellsString(got.Cells), cellsString(want))
	}
}

func (mt *modelTest) checkScan(ctx context.Context, op string) {
	lo, hi := mt.row(), mt.row()
	if bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	rng := model.RowRange{Start: lo, End: hi}
	if mt.r.Intn(4) == 0 {
		rng.End = nil
	}
	opts := mt.readOptions()
	if mt.r.Intn(3) == 0 {
		opts.Limit = 1 + mt.r.Intn(5)
	}
	opts.Reverse = mt.r.Intn(2) == 0
	opts.Transient = mt.r.Intn(2) == 0
	sc := mt.s.Scan(ctx, "t", rng, opts)
	defer sc.Close()
	var rows []string
	for r := range mt.ref.rows {
		if rng.Contains([]byte(r)) && len(mt.ref.read(r, opts)) > 0 {
			rows = append(rows, r)
		}
	}
	sort.Strings(rows)
	if opts.Reverse {
		slices.Reverse(rows)
	}
	if opts.Limit > 0 && len(rows) > opts.Limit {
		rows = rows[:opts.Limit]
	}
	i := 0
	var kept []model.Row // rows of a scan that is not Transient stay valid
	for sc.Next() {
		row := sc.Row()
		if i >= len(rows) || string(row.Key) != rows[i] {
			mt.t.Fatalf("after %s: scan %v %+v: row %d is %q, want %v", op, rng, opts, i, row.Key, rows)
		}
		if want := mt.ref.read(rows[i], opts); !sameCells(row.Cells, want) {
			mt.t.Fatalf("after %s: scan row %q\n got %s\nwant %s", op, row.Key, cellsString(row.Cells), cellsString(want))
		}
		if !opts.Transient {
			kept = append(kept, row)
		}
		i++
	}
	for j, row := range kept {
		if string(row.Key) != rows[j] || !sameCells(row.Cells, mt.ref.read(rows[j], opts)) {
			mt.t.Fatalf("after %s: scan row %d (%q) changed after later rows were read", op, j, rows[j])
		}
	}
	if err := sc.Err(); err != nil {
		mt.t.Fatalf("after %s: scan: %v", op, err)
	}
	if i != len(rows) {
		mt.t.Fatalf("after %s: scan %v %+v returned %d rows, want %d", op, rng, opts, i, len(rows))
	}
}

func (mt *modelTest) reopen(crash bool) {
	ctx := context.Background()
	if crash {
		// Every operation so far was acknowledged: a crash must keep them all.
		mt.proc.Kill()
		mt.fs.Crash(dfs.CrashOptions{Rand: mt.r})
	}
	if err := mt.s.Close(ctx); err != nil && !crash {
		mt.t.Fatal(err)
	}
	mt.proc = dfs.NewProcessFS(mt.fs)
	mt.s = openStore(mt.t, mt.proc, mt.opts)
}

func (mt *modelTest) step(ctx context.Context, i int) string {
	switch k := mt.r.Intn(1000); {
	case k < 150:
		// A batch of row mutations, some of one row: each applies
		// atomically and in order.
		n := 1 + mt.r.Intn(5)
		batch := make([]*model.RowMutation, n)
		mt.clock.tick()
		var resolved [][]model.Mutation
		for j := range batch {
			muts := make([]model.Mutation, 1+mt.r.Intn(3))
			for k := range muts {
				muts[k] = mt.mutation()
			}
			batch[j] = &model.RowMutation{Row: mt.row(), Mutations: muts}
			resolved = append(resolved, mt.resolve(muts))
		}
		for j, err := range mt.s.ApplyBatch(ctx, "t", batch) {
			if err != nil {
				mt.t.Fatalf("op %d: ApplyBatch entry %d: %v", i, j, err)
			}
			mt.ref.apply(batch[j].Row, resolved[j])
		}
		return "batch"
	case k < 550:
		row := mt.row()
		muts := make([]model.Mutation, 1+mt.r.Intn(3))
		for j := range muts {
			muts[j] = mt.mutation()
		}
		mt.clock.tick()
		res := mt.resolve(muts)
		if err := mt.s.Apply(ctx, "t", &model.RowMutation{Row: row, Mutations: muts}); err != nil {
			mt.t.Fatalf("op %d: Apply: %v", i, err)
		}
		mt.ref.apply(row, res)
		return "apply"
	case k < 600:
		row := mt.row()
		fam := mt.fam()
		mt.clock.tick()
		rule := ReadModifyWriteRule{Family: fam, Qualifier: []byte("ctr"), Increment: int64(mt.r.Intn(10) - 3)}
		if mt.r.Intn(2) == 0 {
			rule = ReadModifyWriteRule{Family: fam, Qualifier: []byte("log"), Append: mt.value()}
		}
		old := mt.ref.latest(string(row), fam, string(rule.Qualifier))
		want, err := rule.apply(old)
		got, gerr := mt.s.ReadModifyWrite(ctx, "t", row, []ReadModifyWriteRule{rule})
		if err != nil {
			mt.t.Fatalf("reference rejected %v", err)
		}
		if gerr != nil || len(got) != 1 || !bytes.Equal(got[0].Value, want) || got[0].Timestamp != mt.clock.us.Load() {
			mt.t.Fatalf("op %d: ReadModifyWrite = %v %v, want value %q at %d", i, got, gerr, want, mt.clock.us.Load())
		}
		mt.ref.apply(row, []model.Mutation{model.SetCell(fam, rule.Qualifier, got[0].Timestamp, want)})
		return "rmw"
	case k < 650:
		row, fam, qual := mt.row(), mt.fam(), mt.qual()
		ifTrue := []model.Mutation{mt.mutation()}
		ifFalse := []model.Mutation{mt.mutation()}
		mt.clock.tick()
		pred := func(cells []model.Cell) bool {
			for _, c := range cells {
				if bytes.Equal(c.Qualifier, qual) {
					return true
				}
			}
			return false
		}
		want := pred(mt.ref.read(string(row), ReadOptions{Families: []string{fam}}))
		got, err := mt.s.CheckAndMutate(ctx, "t", row, ReadOptions{Families: []string{fam}}, pred, ifTrue, ifFalse)
		if err != nil || got != want {
			mt.t.Fatalf("op %d: CheckAndMutate = %v %v, want %v", i, got, err, want)
		}
		if got {
			mt.ref.apply(row, mt.resolve(ifTrue))
		} else {
			mt.ref.apply(row, mt.resolve(ifFalse))
		}
		return "check-and-mutate"
	case k < 850:
		mt.check(ctx, "read")
		return "read"
	case k < 930:
		mt.checkScan(ctx, "scan")
		return "scan"
	case k < 950:
		ts := mt.s.Tablets()
		if err := ts[mt.r.Intn(len(ts))].Flush(ctx); err != nil {
			mt.t.Fatalf("flush: %v", err)
		}
		return "flush"
	case k < 965:
		ts := mt.s.Tablets()
		if err := ts[mt.r.Intn(len(ts))].Compact(ctx, mt.r.Intn(2) == 0); err != nil {
			mt.t.Fatalf("compact: %v", err)
		}
		return "compact"
	case k < 978:
		ts := mt.s.Tablets()
		t := ts[mt.r.Intn(len(ts))]
		key := mt.row()
		if t.Range().Contains(key) && !bytes.Equal(key, t.Range().Start) {
			if _, err := mt.s.Split(ctx, t.ID(), key); err != nil {
				mt.t.Fatalf("split %d at %q: %v", t.ID(), key, err)
			}
		}
		return "split"
	case k < 990:
		ts := mt.s.Tablets()
		if len(ts) > 1 {
			j := mt.r.Intn(len(ts) - 1)
			if _, err := mt.s.Merge(ctx, ts[j].ID(), ts[j+1].ID()); err != nil {
				mt.t.Fatalf("merge: %v", err)
			}
		}
		return "merge"
	case k < 995:
		mt.reopen(false)
		return "reopen"
	default:
		mt.reopen(true)
		return "crash"
	}
}

// TestRandomizedAgainstModel runs random writes, deletes, read-modify-writes
// and check-and-mutates, interleaved with flushes, compactions, splits,
// merges, clean reopens and crashes, and checks every read and scan
// against the reference.
func TestRandomizedAgainstModel(t *testing.T) {
	ops := 20000
	if testing.Short() {
		ops = 4000
	}
	if s := os.Getenv("CELLAR_MODEL_OPS"); s != "" {
		ops, _ = strconv.Atoi(s)
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CELLAR_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (set CELLAR_SEED to repeat)", seed)
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	mt := &modelTest{t: t, r: rand.New(rand.NewSource(seed)), fs: dfs.NewMem(), clock: clock, ref: &refModel{rows: map[string]map[refCell][]byte{}}}
	mt.opts = smallOptions(clock)
	mt.proc = dfs.NewProcessFS(mt.fs)
	mt.s = openStore(t, mt.proc, mt.opts)
	defer func() { mt.s.Close(context.Background()) }()
	ctx := context.Background()
	if err := mt.s.CreateTable(ctx, "t", testSchema, [][]byte{[]byte("r10"), []byte("r30")}); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := 0; i < ops; i++ {
		counts[mt.step(ctx, i)]++
	}
	// A final full comparison.
	for r := 0; r < 40; r++ {
		row := fmt.Sprintf("r%02d", r)
		got, _, err := mt.s.ReadRow(ctx, "t", []byte(row), ReadOptions{})
		if err != nil || !sameCells(got.Cells, mt.ref.read(row, ReadOptions{})) {
			t.Fatalf("final read of %s: %v\n got %s\nwant %s", row, err, cellsString(got.Cells), cellsString(mt.ref.read(row, ReadOptions{})))
		}
	}
	t.Logf("operations: %v; tablets at the end: %d", counts, len(mt.s.Tablets()))
}

func TestIncrementOfWrongSizeFails(t *testing.T) {
	clock := &fakeClock{}
	clock.us.Store(1_700_000_000_000_000)
	s := openStore(t, dfs.NewMem(), smallOptions(clock))
	defer s.Close(context.Background())
	ctx := context.Background()
	s.CreateTable(ctx, "t", testSchema, nil)
	s.Apply(ctx, "t", &model.RowMutation{Row: []byte("r"), Mutations: []model.Mutation{model.SetCell("a", []byte("q"), 1000, []byte("abc"))}})
	_, err := s.ReadModifyWrite(ctx, "t", []byte("r"), []ReadModifyWriteRule{{Family: "a", Qualifier: []byte("q"), Increment: 1}})
	if !errors.Is(err, model.ErrFailedPrecondition) {
		t.Fatalf("increment of a 3-byte cell: %v", err)
	}
	cells, err := s.ReadModifyWrite(ctx, "t", []byte("r"), []ReadModifyWriteRule{{Family: "a", Qualifier: []byte("n"), Increment: -5}})
	if err != nil || int64(binary.BigEndian.Uint64(cells[0].Value)) != -5 {
		t.Fatalf("increment of an absent cell: %v %v", cells, err)
	}
}
