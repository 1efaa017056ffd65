package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"cloud.google.com/go/bigtable/bttest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
)

// TestBigtableAgainstBttest is the differential test of the Bigtable API:
// a seeded random sequence of operations goes, through the official Go
// client, to a running `cellar demo` and to cloud.google.com/go/bigtable's
// bttest (v1.57.0, in this process), and every answer of the two is
// compared: each read's rows and cells, each conditional mutation's
// outcome, each read-modify-write's new cells, and the status of every
// write.
//
// The operations: MutateRow and MutateRows (ApplyBulk) of SetCell with
// explicit millisecond timestamps and with the server's time, DeleteFromColumn
// whole and over time ranges, DeleteFromFamily and DeleteFromRow;
// CheckAndMutateRow with a random predicate (or none) and either branch
// possibly empty; ReadModifyWriteRow appending and incrementing 8-byte
// counters; ReadRow and ReadRows over row lists, every kind of row range
// the client has, range lists, row limits, reversed, each with a random
// filter tree of chains, interleaves and conditions over pass and block
// all, row key, family, qualifier and value regexes, column, value and
// timestamp ranges, cells-per-row limits and offsets, cells-per-column
// limits, strip value and apply label. The Go client builds column and
// value ranges only as [start, end) and row sets only from its own
// constructors, so a quarter of the ReadRows and CheckAndMutateRow calls
// go through the generated stubs (bigtablepb) instead, with every kind of
// bound, unset ones included, and the test assembles the streamed chunks
// itself. The cellar table is split into three tablets, so that reads
// cross tablet (and server) boundaries.
//
// The seed is logged; CELLAR_SEED=n replays a run, CELLAR_BT_DIFF_OPS=n
// makes it longer (make soak), the default being a few hundred
// operations.
//
// # Server timestamps
//
// The two servers assign different timestamps to a SetCell with the
// server's time and to a read-modify-write, so the test names them
// instead: before such an operation it waits 2 ms, so that both servers
// give every such operation its own millisecond, then reads the rows the
// operation touched on each side and names each server timestamp it has
// not seen yet after the operation ("S17" for operation 17). Answers are
// compared with those names. Explicit timestamps are all below 31 ms after
// the epoch, so server timestamps are the newest versions of every column
// on both sides and never fall between two explicit ones, and the time
// ranges of deletes and filters use explicit bounds or no end: a range
// then selects the same cells on both sides.
//
// # What the test does not generate, and why
//
// bttest differs from the service in ways that kv/model's RowFilter
// comment lists (with cellar following the service); the test keeps
// clear of them:
//
//   - No sink and no value_bitmask_filter: bttest ignores both (the
//     client test covers them).
//   - No row_sample_filter: bttest draws from math/rand's global source,
//     cellar from its own; the rows kept cannot agree.
//   - No invalid filters: bttest validates lazily (only filters a row
//     reaches), skips most of the service's checks (nesting depth, empty
//     ranges, ':' in family regexes, anchored labels) and panics on a
//     negative offset. So every generated tree is valid: chains and
//     interleaves of two or three filters, nesting of at most four levels,
//     non-empty ranges, labels of [a-z0-9-] and at most one filter that
//     contains an apply_label_transformer per chain.
//   - cells_per_row_limit and cells_per_row_offset only where their input
//     holds cells of one family at most (after a family regex naming one
//     family, or a column range): bttest walks the families of a row in
//     Go map order, so over several families the cells it counts change
//     from run to run.
//   - No strip_value_transformer on cells that may carry a label: bttest's
//     strip drops the label too.
//   - Where an interleave's branches may yield different copies of one
//     cell (one labels or strips and another does not), no
//     cells_per_row_limit, cells_per_row_offset or cells_per_column_limit
//     after it, and answers are compared with the copies of each cell
//     (same column and timestamp) sorted by value and label: bttest sorts
//     an interleave's output by timestamp with an unstable sort, so the
//     order of such copies is arbitrary there, where cellar keeps the
//     branches' order as data.proto asks.
//   - Every family keeps all versions (no GC rule): bttest collects
//     garbage every 0.5 to 1.5 s in the background, cellar at
//     compactions; what a read sees in between is not comparable.
//   - At most one SetCell with the server's time per row mutation, the rows
//     of one ApplyBulk distinct, and the rules of one read-modify-write on
//     distinct columns: bttest takes a new server timestamp for every
//     SetCell and every rule, so such a mutation straddling a millisecond
//     boundary makes two versions there where cellar (one timestamp per
//     row mutation) makes one.
//   - No mutation or read that fails: bttest applies a row mutation's
//     mutations one by one and stops at a failing one, keeping the
//     earlier ones (the service and cellar apply a row mutation
//     atomically), answers codes.Unknown for an unknown family (the
//     service and cellar: NotFound), and a failed increment leaves an
//     empty family behind that counts towards rows_limit. Increments
//     therefore go to counter columns that only ever hold 8-byte values,
//     and appends to the others. The client test checks the errors.
//   - No reversed reads through the generated stubs: bttest reverses only
//     for clients that announce the feature in a header the Go client
//     sends (its reversed reads are covered).
func TestBigtableAgainstBttest(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CELLAR_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CELLAR_SEED=%q: %v", s, err)
		}
		seed = v
	}
	ops := 500
	if s := os.Getenv("CELLAR_BT_DIFF_OPS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("CELLAR_BT_DIFF_OPS=%q: want a positive count", s)
		}
		ops = v
	}
	t.Logf("seed %d (replay with CELLAR_SEED=%d), %d operations", seed, seed, ops)

	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	emu, err := bttest.NewServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)

	x := &btDiff{t: t, r: rand.New(rand.NewPCG(seed, seed^0x5eed)), seed: seed}
	x.sides[0] = x.open("cellar", d.bigtable)
	x.sides[1] = x.open("bttest", emu.Addr)

	for i := range ops {
		x.op = i
		x.step()
	}
	// A last look at everything, cell by cell.
	x.op = ops
	x.note("final full read")
	x.compareRead(bigtable.InfiniteRange(""), nil)
	t.Logf("%d operations agreed: %d reads, %d rows and %d cells compared, %d server timestamps named on cellar, %d on bttest",
		ops, x.reads, x.rows, x.cells, len(x.sides[0].names), len(x.sides[1].names))
}

const (
	btDiffTable = "diff"
	// btDiffMaxTS bounds the explicit timestamps, in milliseconds: every
	// one lies in [0, btDiffMaxTS) ms, far below any server timestamp.
	btDiffMaxTS = 31
	// btDiffServerFloor separates server timestamps (µs, now) from the
	// explicit ones.
	btDiffServerFloor = int64(1e15)
	// btDiffDepth bounds the nesting of generated filters.
	btDiffDepth = 4
)

var (
	btDiffFamilies = []string{"fa", "fb", "fc"}
	// btDiffQualifiers hold any value; btDiffCounters only 8-byte ones,
	// so that an increment never fails.
	btDiffQualifiers = []string{"", "a", "ab", "b", "c", "q\xe9"}
	btDiffCounters   = []string{"n0", "n1"}
	btDiffKeys       = []string{"r00", "r01", "r02", "r03", "r04", "r05", "r06", "r07", "r08", "r09", "r10", "r11", "s", "s\x00x", "t\xe9", "u"}
	// btDiffBounds are range bounds and read keys besides the row keys.
	btDiffBounds   = []string{"q", "r", "r0", "r05a", "r1", "s\x00", "t", "z", "\xff"}
	btDiffKeyRegex = []string{"r0.*", "r1[01]", ".*1", "s.*", "t\xe9", `t\xe9`, "r0[0-4]|u", ".", ".*", `s\x00x`, "r.5"}
	btDiffFamRegex = []string{"fa", "fb", "fc", "f[ab]", "f.", "fa|fc", ".*c"}
	btDiffQualRe   = []string{"", "a", "a.*", "[ab]", "n[01]", ".*", "q.", "b|c", "n.*", `q\xe9`}
	btDiffValueRe  = []string{"", "a.*", ".*b.*", "[a-c]*", "x", ".*", `\x00.*`, "[^a]+", ".", "z|ab", `.*\xff`}
	btDiffValueBds = []string{"", "\x00", "a", "ab", "b", "c", "x", "z", "\xff"}
	btDiffLabels   = []string{"x", "lab", "a-1", "z9"}
)

// btDiff drives both sides through one random sequence.
type btDiff struct {
	t     *testing.T
	r     *rand.Rand
	seed  uint64
	sides [2]*btSide // cellar, then bttest
	op    int
	// history holds the operations so far, for the failure report.
	history []string
	// reads, rows and cells count what was compared.
	reads, rows, cells int
	// anyBounds lets the filter being generated have range bounds that
	// only the generated stubs can send.
	anyBounds bool
}

// btSide is one server with its client and the names of the server
// timestamps it assigned.
type btSide struct {
	name string
	tbl  *bigtable.Table
	// raw is the same server through the generated stubs, for what the Go
	// client cannot send.
	raw   btpb.BigtableClient
	names map[int64]string
}

// open connects the official client the way users do, through
// BIGTABLE_EMULATOR_HOST (which the client reads when it is made), and
// creates the test's table.
func (x *btDiff) open(name, addr string) *btSide {
	t := x.t
	t.Setenv("BIGTABLE_EMULATOR_HOST", addr)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	data, err := bigtable.NewClient(ctx, btProject, btInstance)
	if err != nil {
		t.Fatalf("%s: client: %v", name, err)
	}
	t.Cleanup(func() { data.Close() })
	admin, err := bigtable.NewAdminClient(ctx, btProject, btInstance)
	if err != nil {
		t.Fatalf("%s: admin client: %v", name, err)
	}
	t.Cleanup(func() { admin.Close() })
	conf := &bigtable.TableConf{TableID: btDiffTable, SplitKeys: []string{"r05", "s"}, Families: map[string]bigtable.GCPolicy{}}
	for _, f := range btDiffFamilies {
		conf.Families[f] = bigtable.NoGcPolicy()
	}
	if err := admin.CreateTableFromConf(ctx, conf); err != nil {
		t.Fatalf("%s: create table: %v", name, err)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { cc.Close() })
	return &btSide{name: name, tbl: data.Open(btDiffTable), raw: btpb.NewBigtableClient(cc), names: map[int64]string{}}
}

// ctx bounds one call.
func (x *btDiff) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(x.t.Context(), 30*time.Second)
}

func (x *btDiff) note(format string, args ...any) {
	x.history = append(x.history, fmt.Sprintf("#%d ", x.op)+fmt.Sprintf(format, args...))
}

// fail reports a difference with the operations that led to it.
func (x *btDiff) fail(format string, args ...any) {
	x.t.Helper()
	from := max(0, len(x.history)-40)
	x.t.Fatalf("seed %d (CELLAR_SEED=%d), operation #%d: %s\nlast operations:\n  %s",
		x.seed, x.seed, x.op, fmt.Sprintf(format, args...), strings.Join(x.history[from:], "\n  "))
}

// sameErrors checks that both sides failed alike: both succeeded, or both
// failed with one status code.
func (x *btDiff) sameErrors(what string, errs [2]error) bool {
	x.t.Helper()
	if status.Code(errs[0]) != status.Code(errs[1]) {
		x.fail("%s: cellar: %v; bttest: %v", what, errs[0], errs[1])
	}
	return errs[0] == nil
}

func (x *btDiff) pick(list []string) string { return list[x.r.IntN(len(list))] }

func (x *btDiff) key() string {
	if x.r.IntN(8) == 0 {
		return x.pick(btDiffBounds)
	}
	return x.pick(btDiffKeys)
}

// step runs one random operation on both sides. The first operations
// only write, so that reads have something to filter.
func (x *btDiff) step() {
	p := x.r.IntN(100)
	if x.op < 30 {
		p = x.r.IntN(58)
	}
	switch {
	case p < 28:
		x.mutateRow()
	case p < 38:
		x.applyBulk()
	case p < 50:
		x.checkAndMutate()
	case p < 58:
		x.readModifyWrite()
	case p < 72:
		x.readRow()
	default:
		x.readRows()
	}
	if x.op%50 == 49 {
		x.note("full read")
		x.compareRead(bigtable.InfiniteRange(""), nil)
	}
}

// mutSpec is one mutation, kept as data so that it can be logged.
type mutSpec struct {
	kind     byte // 's' SetCell, 'c' DeleteFromColumn, 'r' a time range of it, 'f' DeleteFromFamily, 'w' DeleteFromRow
	fam, col string
	ts, end  int64 // SetCell's timestamp (bigtable.ServerTime: the server's); a range's [ts, end), end 0: no end
	value    []byte
}

func (m mutSpec) String() string {
	switch m.kind {
	case 's':
		ts := strconv.FormatInt(m.ts, 10)
		if m.ts == int64(bigtable.ServerTime) {
			ts = "server"
		}
		return fmt.Sprintf("set(%s:%q@%s=%q)", m.fam, m.col, ts, m.value)
	case 'c':
		return fmt.Sprintf("delcol(%s:%q)", m.fam, m.col)
	case 'r':
		return fmt.Sprintf("delcol(%s:%q,[%d,%d))", m.fam, m.col, m.ts, m.end)
	case 'f':
		return fmt.Sprintf("delfam(%s)", m.fam)
	}
	return "delrow"
}

func (m mutSpec) apply(to *bigtable.Mutation) {
	switch m.kind {
	case 's':
		to.Set(m.fam, m.col, bigtable.Timestamp(m.ts), m.value)
	case 'c':
		to.DeleteCellsInColumn(m.fam, m.col)
	case 'r':
		to.DeleteTimestampRange(m.fam, m.col, bigtable.Timestamp(m.ts), bigtable.Timestamp(m.end))
	case 'f':
		to.DeleteCellsInFamily(m.fam)
	default:
		to.DeleteRow()
	}
}

// mutation is a random row mutation of 1 to 4 mutations with at most
// one SetCell at the server's time; server says whether it has one.
func (x *btDiff) mutation() (specs []mutSpec, server bool) {
	for range 1 + x.r.IntN(4) {
		m := mutSpec{fam: x.pick(btDiffFamilies)}
		counter := x.r.IntN(4) == 0
		if counter {
			m.col = x.pick(btDiffCounters)
		} else {
			m.col = x.pick(btDiffQualifiers)
		}
		switch p := x.r.IntN(100); {
		case p < 60:
			m.kind = 's'
			m.ts = int64(x.r.IntN(btDiffMaxTS)) * 1000
			if !server && x.r.IntN(4) == 0 {
				m.ts, server = int64(bigtable.ServerTime), true
			}
			if counter {
				m.value = binary.BigEndian.AppendUint64(nil, uint64(x.r.Int64N(200)-100))
			} else {
				m.value = x.value()
			}
		case p < 75:
			m.kind = 'c'
		case p < 87:
			m.kind = 'r'
			m.ts = int64(x.r.IntN(btDiffMaxTS)) * 1000
			if x.r.IntN(3) > 0 {
				m.end = m.ts + int64(1+x.r.IntN(10))*1000
			}
		case p < 96:
			m.kind = 'f'
		default:
			m.kind = 'w'
		}
		specs = append(specs, m)
	}
	return specs, server
}

func (x *btDiff) value() []byte {
	const alphabet = "abcxz\x00\xff"
	v := make([]byte, x.r.IntN(5))
	for i := range v {
		v[i] = alphabet[x.r.IntN(len(alphabet))]
	}
	return v
}

func toMutation(specs []mutSpec) *bigtable.Mutation {
	m := bigtable.NewMutation()
	for _, s := range specs {
		s.apply(m)
	}
	return m
}

// serverTime runs before an operation that takes server timestamps: a
// pause long enough that both servers give it a millisecond of its own.
func serverTime() { time.Sleep(2 * time.Millisecond) }

func (x *btDiff) mutateRow() {
	key := x.key()
	specs, server := x.mutation()
	x.note("MutateRow %q %v", key, specs)
	if server {
		serverTime()
	}
	var errs [2]error
	for i, s := range x.sides {
		ctx, cancel := x.ctx()
		errs[i] = s.tbl.Apply(ctx, key, toMutation(specs))
		cancel()
	}
	x.sameErrors("MutateRow", errs)
	if server {
		x.learn(key)
	}
}

func (x *btDiff) applyBulk() {
	n := 1 + x.r.IntN(5)
	keys := slices.Clone(btDiffKeys)
	x.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:n]
	all := make([][]mutSpec, n)
	anyServer := false
	for i := range keys {
		var server bool
		all[i], server = x.mutation()
		anyServer = anyServer || server
	}
	x.note("MutateRows %q %v", keys, all)
	if anyServer {
		serverTime()
	}
	var errs [2]error
	for i, s := range x.sides {
		muts := make([]*bigtable.Mutation, n)
		for j := range all {
			muts[j] = toMutation(all[j])
		}
		ctx, cancel := x.ctx()
		entryErrs, err := s.tbl.ApplyBulk(ctx, keys, muts)
		cancel()
		if err == nil {
			for j, e := range entryErrs {
				if e != nil {
					err = fmt.Errorf("entry %d (%q): %w", j, keys[j], e)
					break
				}
			}
		}
		errs[i] = err
	}
	x.sameErrors("MutateRows", errs)
	if anyServer {
		x.learn(keys...)
	}
}

func (x *btDiff) checkAndMutate() {
	key := x.key()
	// A quarter go through the generated stubs, with any range bounds.
	raw := x.r.IntN(4) == 0
	var pred *btpb.RowFilter
	if x.r.IntN(5) > 0 {
		pred = x.rowFilter(raw)
	}
	branch := func() ([]mutSpec, bool) {
		if x.r.IntN(5) == 0 {
			return nil, false
		}
		return x.mutation()
	}
	yes, serverYes := branch()
	no, serverNo := branch()
	server := serverYes || serverNo
	via := "client"
	if raw {
		via = "stub"
	}
	x.note("CheckAndMutateRow (%s) %q pred=%s true=%v false=%v", via, key, describeFilter(pred), yes, no)
	if server {
		serverTime()
	}
	var errs [2]error
	var matched [2]bool
	for i, s := range x.sides {
		ctx, cancel := x.ctx()
		if raw {
			var resp *btpb.CheckAndMutateRowResponse
			resp, errs[i] = s.raw.CheckAndMutateRow(ctx, &btpb.CheckAndMutateRowRequest{TableName: tableName(), RowKey: []byte(key),
				PredicateFilter: pred, TrueMutations: protoMutations(yes), FalseMutations: protoMutations(no)})
			matched[i] = resp.GetPredicateMatched()
		} else {
			var mt, mf *bigtable.Mutation
			if yes != nil {
				mt = toMutation(yes)
			}
			if no != nil {
				mf = toMutation(no)
			}
			var cond bigtable.Filter
			if pred != nil {
				cond = x.mustClientFilter(pred)
			}
			errs[i] = s.tbl.Apply(ctx, key, bigtable.NewCondMutation(cond, mt, mf), bigtable.GetCondMutationResult(&matched[i]))
		}
		cancel()
	}
	if x.sameErrors("CheckAndMutateRow", errs) && matched[0] != matched[1] {
		x.fail("CheckAndMutateRow: predicate matched: cellar %v, bttest %v", matched[0], matched[1])
	}
	if server {
		x.learn(key)
	}
}

// protoMutations is specs as the service receives them.
func protoMutations(specs []mutSpec) []*btpb.Mutation {
	var out []*btpb.Mutation
	for _, m := range specs {
		var pm btpb.Mutation
		switch m.kind {
		case 's':
			pm.Mutation = &btpb.Mutation_SetCell_{SetCell: &btpb.Mutation_SetCell{FamilyName: m.fam, ColumnQualifier: []byte(m.col),
				TimestampMicros: m.ts, Value: m.value}}
		case 'c', 'r':
			d := &btpb.Mutation_DeleteFromColumn{FamilyName: m.fam, ColumnQualifier: []byte(m.col)}
			if m.kind == 'r' {
				d.TimeRange = &btpb.TimestampRange{StartTimestampMicros: m.ts, EndTimestampMicros: m.end}
			}
			pm.Mutation = &btpb.Mutation_DeleteFromColumn_{DeleteFromColumn: d}
		case 'f':
			pm.Mutation = &btpb.Mutation_DeleteFromFamily_{DeleteFromFamily: &btpb.Mutation_DeleteFromFamily{FamilyName: m.fam}}
		default:
			pm.Mutation = &btpb.Mutation_DeleteFromRow_{DeleteFromRow: &btpb.Mutation_DeleteFromRow{}}
		}
		out = append(out, &pm)
	}
	return out
}

func (x *btDiff) readModifyWrite() {
	key := x.key()
	type rule struct {
		fam, col string
		inc      int64
		app      []byte
	}
	var rules []rule
	used := map[string]bool{}
	for range 1 + x.r.IntN(2) {
		r := rule{fam: x.pick(btDiffFamilies)}
		if x.r.IntN(2) == 0 {
			r.col = x.pick(btDiffCounters)
			r.inc = x.r.Int64N(11) - 5
			if x.r.IntN(8) == 0 {
				r.inc = x.r.Int64()
			}
		} else {
			r.col = x.pick(btDiffQualifiers)
			r.app = x.value()
		}
		if used[r.fam+":"+r.col] {
			continue
		}
		used[r.fam+":"+r.col] = true
		rules = append(rules, r)
	}
	var desc []string
	for _, r := range rules {
		if r.app != nil {
			desc = append(desc, fmt.Sprintf("append(%s:%q,%q)", r.fam, r.col, r.app))
		} else {
			desc = append(desc, fmt.Sprintf("increment(%s:%q,%d)", r.fam, r.col, r.inc))
		}
	}
	x.note("ReadModifyWriteRow %q %v", key, desc)
	serverTime()
	var errs [2]error
	var rows [2]bigtable.Row
	for i, s := range x.sides {
		m := bigtable.NewReadModifyWrite()
		for _, r := range rules {
			if r.app != nil {
				m.AppendValue(r.fam, r.col, r.app)
			} else {
				m.Increment(r.fam, r.col, r.inc)
			}
		}
		ctx, cancel := x.ctx()
		rows[i], errs[i] = s.tbl.ApplyReadModifyWrite(ctx, key, m)
		cancel()
	}
	if !x.sameErrors("ReadModifyWriteRow", errs) {
		return
	}
	x.learn(key)
	if a, b := x.sides[0].render(rows[0]), x.sides[1].render(rows[1]); a != b {
		x.fail("ReadModifyWriteRow's answer differs:\ncellar: %s\nbttest: %s", a, b)
	}
}

// learn names the server timestamps that the current operation gave the
// rows, on each side, after comparing the rows as they are now.
func (x *btDiff) learn(keys ...string) {
	name := fmt.Sprintf("S%d", x.op)
	var errs [2]error
	for i, s := range x.sides {
		ctx, cancel := x.ctx()
		errs[i] = s.tbl.ReadRows(ctx, bigtable.RowList(keys), func(r bigtable.Row) bool {
			for _, items := range r {
				for _, it := range items {
					if ts := int64(it.Timestamp); ts >= btDiffServerFloor && s.names[ts] == "" {
						s.names[ts] = name
					}
				}
			}
			return true
		})
		cancel()
	}
	x.sameErrors("reading back", errs)
	x.compareRead(bigtable.RowList(keys), nil)
}

func (x *btDiff) readRow() {
	key := x.key()
	var opts []bigtable.ReadOption
	var f bigtable.Filter
	if x.r.IntN(10) < 7 {
		f = x.mustClientFilter(x.rowFilter(false))
		opts = append(opts, bigtable.RowFilter(f))
	}
	x.note("ReadRow %q filter=%v", key, f)
	var rows [2]bigtable.Row
	var errs [2]error
	for i, s := range x.sides {
		ctx, cancel := x.ctx()
		rows[i], errs[i] = s.tbl.ReadRow(ctx, key, opts...)
		cancel()
	}
	if !x.sameErrors("ReadRow", errs) {
		return
	}
	x.reads++
	a, b := x.sides[0].render(rows[0]), x.sides[1].render(rows[1])
	if a != b {
		x.fail("ReadRow %q filter %v:\ncellar: %s\nbttest: %s", key, f, a, b)
	}
	x.count(rows[0])
}

func (x *btDiff) readRows() {
	if x.r.IntN(4) == 0 {
		x.rawReadRows()
		return
	}
	var opts []bigtable.ReadOption
	var f bigtable.Filter
	desc := ""
	if x.r.IntN(10) < 7 {
		f = x.mustClientFilter(x.rowFilter(false))
		opts = append(opts, bigtable.RowFilter(f))
	}
	if x.r.IntN(10) < 4 {
		n := int64(1 + x.r.IntN(6))
		opts = append(opts, bigtable.LimitRows(n))
		desc += fmt.Sprintf(" limit=%d", n)
	}
	if x.r.IntN(10) < 3 {
		opts = append(opts, bigtable.ReverseScan())
		desc += " reversed"
	}
	rs := x.rowSet()
	x.note("ReadRows %s filter=%v%s", describeRowSet(rs), f, desc)
	x.compareRead(rs, opts)
}

// rawReadRows is a ReadRows through the generated stubs: row sets and
// filters with bounds the Go client has no way to send.
func (x *btDiff) rawReadRows() {
	req := &btpb.ReadRowsRequest{TableName: tableName(), Rows: x.rawRowSet()}
	if x.r.IntN(10) < 8 {
		req.Filter = x.rowFilter(true)
	}
	if x.r.IntN(10) < 4 {
		req.RowsLimit = int64(1 + x.r.IntN(6))
	}
	desc := strings.Join(strings.Fields(prototext.MarshalOptions{}.Format(req.Rows)), " ")
	x.note("ReadRows (stub) rows={%s} filter=%s limit=%d", desc, describeFilter(req.Filter), req.RowsLimit)
	var got [2][]string
	var errs [2]error
	var first []bigtable.Row
	for i, s := range x.sides {
		ctx, cancel := x.ctx()
		rows, err := s.rawReadRows(ctx, req)
		cancel()
		errs[i] = err
		for _, r := range rows {
			got[i] = append(got[i], s.render(r))
		}
		if i == 0 {
			first = rows
		}
	}
	if !x.sameErrors("ReadRows (stub)", errs) {
		return
	}
	x.reads++
	if !slices.Equal(got[0], got[1]) {
		x.fail("ReadRows (stub) {%s}: %d rows from cellar, %d from bttest\ncellar:\n  %s\nbttest:\n  %s",
			desc, len(got[0]), len(got[1]), strings.Join(got[0], "\n  "), strings.Join(got[1], "\n  "))
	}
	for _, r := range first {
		x.count(r)
	}
}

// compareRead reads a row set on both sides and compares the rows.
func (x *btDiff) compareRead(rs bigtable.RowSet, opts []bigtable.ReadOption) {
	x.t.Helper()
	var got [2][]string
	var errs [2]error
	var first []bigtable.Row
	for i, s := range x.sides {
		ctx, cancel := x.ctx()
		errs[i] = s.tbl.ReadRows(ctx, rs, func(r bigtable.Row) bool {
			got[i] = append(got[i], s.render(r))
			if i == 0 {
				first = append(first, r)
			}
			return true
		}, opts...)
		cancel()
	}
	if !x.sameErrors("ReadRows", errs) {
		return
	}
	x.reads++
	if !slices.Equal(got[0], got[1]) {
		x.fail("ReadRows %s: %d rows from cellar, %d from bttest\ncellar:\n  %s\nbttest:\n  %s",
			describeRowSet(rs), len(got[0]), len(got[1]), strings.Join(got[0], "\n  "), strings.Join(got[1], "\n  "))
	}
	for _, r := range first {
		x.count(r)
	}
}

func (x *btDiff) count(r bigtable.Row) {
	if r == nil {
		return
	}
	x.rows++
	for _, items := range r {
		x.cells += len(items)
	}
}

// render writes a row as its key and cells, families by name, cells in
// the order received except that copies of one cell (same column and
// timestamp) are sorted by value and label (see the test's comment), and
// server timestamps by the name of the operation that made them.
func (s *btSide) render(r bigtable.Row) string {
	if r == nil {
		return "<no row>"
	}
	fams := make([]string, 0, len(r))
	for f := range r {
		fams = append(fams, f)
	}
	slices.Sort(fams)
	var b strings.Builder
	b.WriteString(strconv.Quote(r.Key()))
	for _, f := range fams {
		items := slices.Clone(r[f])
		for i := 0; i < len(items); {
			j := i + 1
			for j < len(items) && items[j].Column == items[i].Column && items[j].Timestamp == items[i].Timestamp {
				j++
			}
			slices.SortStableFunc(items[i:j], func(a, b bigtable.ReadItem) int {
				if c := bytes.Compare(a.Value, b.Value); c != 0 {
					return c
				}
				return strings.Compare(strings.Join(a.Labels, ","), strings.Join(b.Labels, ","))
			})
			i = j
		}
		for _, it := range items {
			fmt.Fprintf(&b, " %q@%s=%q", it.Column, s.tsName(int64(it.Timestamp)), it.Value)
			if len(it.Labels) > 0 {
				fmt.Fprintf(&b, "%v", it.Labels)
			}
		}
	}
	return b.String()
}

func (s *btSide) tsName(ts int64) string {
	if ts < btDiffServerFloor {
		return strconv.FormatInt(ts, 10)
	}
	if n := s.names[ts]; n != "" {
		return n
	}
	return fmt.Sprintf("S?%d", ts)
}

// rowSet is a random row set: a list of keys, one range of any kind the
// client offers, or a list of ranges that may overlap.
func (x *btDiff) rowSet() bigtable.RowSet {
	bound := func() string {
		if x.r.IntN(3) == 0 {
			return x.pick(btDiffBounds)
		}
		return x.pick(btDiffKeys)
	}
	ordered := func() (string, string) {
		a, b := bound(), bound()
		if a > b {
			a, b = b, a
		}
		return a, b
	}
	one := func() bigtable.RowRange {
		a, b := ordered()
		switch x.r.IntN(8) {
		case 0:
			return bigtable.NewRange(a, b)
		case 1:
			return bigtable.NewClosedRange(a, b)
		case 2:
			return bigtable.NewOpenRange(a, b)
		case 3:
			return bigtable.NewClosedOpenRange(a, b)
		case 4:
			return bigtable.NewOpenClosedRange(a, b)
		case 5:
			return bigtable.PrefixRange(a[:x.r.IntN(len(a)+1)])
		case 6:
			return bigtable.InfiniteRange(a)
		default:
			return bigtable.InfiniteReverseRange(b)
		}
	}
	switch x.r.IntN(6) {
	case 0, 1:
		var keys bigtable.RowList
		for range 1 + x.r.IntN(4) {
			keys = append(keys, x.key())
		}
		return keys
	case 2:
		var rl bigtable.RowRangeList
		for range 2 + x.r.IntN(2) {
			rl = append(rl, one())
		}
		return rl
	case 3:
		return bigtable.InfiniteRange("")
	default:
		return one()
	}
}

func describeRowSet(rs bigtable.RowSet) string {
	switch v := rs.(type) {
	case bigtable.RowList:
		return fmt.Sprintf("keys%q", []string(v))
	case bigtable.RowRangeList:
		parts := make([]string, len(v))
		for i, r := range v {
			parts[i] = r.String()
		}
		return "ranges[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprint(rs)
}

// fstate is what the generator knows about the cells a filter gets.
type fstate struct {
	// fam is the one family the cells can be in; "" when several can be.
	fam string
	// mixed: copies of one cell that differ (by label or stripped value)
	// may be present, in an order bttest does not define.
	mixed bool
	// labelled: cells may carry a label.
	labelled bool
}

// genFilter is a generated filter with what it does to its input.
type genFilter struct {
	f   *btpb.RowFilter
	out fstate
	// hasLabel: the filter contains an apply_label_transformer, which
	// the chain rule counts (a chain may have one such filter).
	hasLabel bool
	// transforms: its output cells may differ from its input's (a label
	// or a stripped value).
	transforms bool
}

// rowFilter is a random valid filter tree as the service receives it.
// With anyBounds its column and value ranges may have bounds that the Go
// client cannot express (an open start, a closed end); such a filter goes
// through the generated stubs.
func (x *btDiff) rowFilter(anyBounds bool) *btpb.RowFilter {
	x.anyBounds = anyBounds
	return x.filter(0, fstate{}, true).f
}

// filter is a random valid filter for input in, without an
// apply_label_transformer unless allowLabel; see the test's comment for
// what it keeps clear of.
func (x *btDiff) filter(depth int, in fstate, allowLabel bool) genFilter {
	if depth < btDiffDepth-1 && x.r.IntN(100) < 45-10*depth {
		switch x.r.IntN(3) {
		case 0:
			return x.chain(depth, in, allowLabel)
		case 1:
			return x.interleave(depth, in, allowLabel)
		default:
			return x.condition(depth, in, allowLabel)
		}
	}
	return x.leaf(in, allowLabel)
}

func (x *btDiff) chain(depth int, in fstate, allowLabel bool) genFilter {
	g := genFilter{}
	var subs []*btpb.RowFilter
	st := in
	n := 2 + x.r.IntN(2)
	if x.r.IntN(3) == 0 {
		// Narrow to one family first, so that row limits and offsets may
		// follow.
		s := x.oneFamily(st)
		subs, st = append(subs, s.f), s.out
		n--
	}
	for range n {
		s := x.filter(depth+1, st, allowLabel && !g.hasLabel)
		subs = append(subs, s.f)
		g.hasLabel = g.hasLabel || s.hasLabel
		g.transforms = g.transforms || s.transforms
		st = s.out
	}
	g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_Chain_{Chain: &btpb.RowFilter_Chain{Filters: subs}}}
	g.out = st
	return g
}

func (x *btDiff) interleave(depth int, in fstate, allowLabel bool) genFilter {
	g := genFilter{out: in}
	var subs []*btpb.RowFilter
	fam, sameFam := "", true
	for i := range 2 + x.r.IntN(2) {
		s := x.filter(depth+1, in, allowLabel)
		subs = append(subs, s.f)
		g.hasLabel = g.hasLabel || s.hasLabel
		g.transforms = g.transforms || s.transforms
		g.out.mixed = g.out.mixed || s.out.mixed
		g.out.labelled = g.out.labelled || s.out.labelled
		if i == 0 {
			fam = s.out.fam
		}
		sameFam = sameFam && s.out.fam != "" && s.out.fam == fam
	}
	if g.transforms {
		g.out.mixed = true
	}
	if in.fam == "" && sameFam {
		g.out.fam = fam
	}
	g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_Interleave_{Interleave: &btpb.RowFilter_Interleave{Filters: subs}}}
	return g
}

func (x *btDiff) condition(depth int, in fstate, allowLabel bool) genFilter {
	pred := x.filter(depth+1, in, allowLabel)
	g := genFilter{hasLabel: pred.hasLabel, out: fstate{fam: in.fam, labelled: in.labelled}}
	fams := map[string]bool{}
	branch := func() *btpb.RowFilter {
		if x.r.IntN(5) == 0 {
			return nil // outputs nothing
		}
		s := x.filter(depth+1, in, allowLabel)
		g.hasLabel = g.hasLabel || s.hasLabel
		g.transforms = g.transforms || s.transforms
		g.out.mixed = g.out.mixed || s.out.mixed
		g.out.labelled = g.out.labelled || s.out.labelled
		fams[s.out.fam] = true
		return s.f
	}
	yes, no := branch(), branch()
	if in.fam == "" && len(fams) == 1 {
		for f := range fams {
			g.out.fam = f
		}
	}
	g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_Condition_{Condition: &btpb.RowFilter_Condition{
		PredicateFilter: pred.f, TrueFilter: yes, FalseFilter: no}}}
	return g
}

// oneFamily is a filter that leaves cells of one family only.
func (x *btDiff) oneFamily(in fstate) genFilter {
	fam := x.pick(btDiffFamilies)
	out := in
	out.fam = fam
	if x.r.IntN(2) == 0 {
		return genFilter{f: &btpb.RowFilter{Filter: &btpb.RowFilter_FamilyNameRegexFilter{FamilyNameRegexFilter: fam}}, out: out}
	}
	qs := append(slices.Clone(btDiffQualifiers), btDiffCounters...)
	start, end := x.bounds(qs)
	r := &btpb.ColumnRange{FamilyName: fam}
	switch start.kind {
	case boundClosed:
		r.StartQualifier = &btpb.ColumnRange_StartQualifierClosed{StartQualifierClosed: []byte(start.v)}
	case boundOpen:
		r.StartQualifier = &btpb.ColumnRange_StartQualifierOpen{StartQualifierOpen: []byte(start.v)}
	}
	switch end.kind {
	case boundClosed:
		r.EndQualifier = &btpb.ColumnRange_EndQualifierClosed{EndQualifierClosed: []byte(end.v)}
	case boundOpen:
		r.EndQualifier = &btpb.ColumnRange_EndQualifierOpen{EndQualifierOpen: []byte(end.v)}
	}
	return genFilter{f: &btpb.RowFilter{Filter: &btpb.RowFilter_ColumnRangeFilter{ColumnRangeFilter: r}}, out: out}
}

// bound is one end of a column or value range.
type bound struct {
	kind int // boundNone, boundClosed or boundOpen
	v    string
}

const (
	boundNone = iota
	boundClosed
	boundOpen
)

// bounds is a random non-empty range over values: the start before the
// end, or both closed on one value (an unset start is the empty string,
// closed). Without x.anyBounds, only the Go client's forms: [start, end).
func (x *btDiff) bounds(values []string) (start, end bound) {
	kind := func(closed int) int {
		switch p := x.r.IntN(8); {
		case p < 2:
			return boundNone
		case p < 5 || !x.anyBounds:
			return closed
		default:
			return boundClosed + boundOpen - closed
		}
	}
	for {
		start = bound{kind: kind(boundClosed), v: x.pick(values)}
		end = bound{kind: kind(boundOpen), v: x.pick(values)}
		sv, sClosed := start.v, start.kind != boundOpen
		if start.kind == boundNone {
			sv = ""
		}
		switch c := strings.Compare(sv, end.v); {
		case end.kind == boundNone, c < 0, c == 0 && sClosed && end.kind == boundClosed:
			return start, end
		}
	}
}

func (x *btDiff) leaf(in fstate, allowLabel bool) genFilter {
	for {
		g := genFilter{out: in}
		switch x.r.IntN(16) {
		case 0:
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_PassAllFilter{PassAllFilter: true}}
		case 1:
			if x.r.IntN(3) > 0 {
				continue // rarely: it empties everything above it
			}
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_BlockAllFilter{BlockAllFilter: true}}
		case 2:
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_RowKeyRegexFilter{RowKeyRegexFilter: []byte(x.pick(btDiffKeyRegex))}}
		case 3, 4:
			re := x.pick(btDiffFamRegex)
			if slices.Contains(btDiffFamilies, re) && in.fam == "" {
				g.out.fam = re
			}
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_FamilyNameRegexFilter{FamilyNameRegexFilter: re}}
		case 5:
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_ColumnQualifierRegexFilter{ColumnQualifierRegexFilter: []byte(x.pick(btDiffQualRe))}}
		case 6:
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte(x.pick(btDiffValueRe))}}
		case 7:
			return x.oneFamily(in)
		case 8:
			start, end := x.bounds(btDiffValueBds)
			r := &btpb.ValueRange{}
			switch start.kind {
			case boundClosed:
				r.StartValue = &btpb.ValueRange_StartValueClosed{StartValueClosed: []byte(start.v)}
			case boundOpen:
				r.StartValue = &btpb.ValueRange_StartValueOpen{StartValueOpen: []byte(start.v)}
			}
			switch end.kind {
			case boundClosed:
				r.EndValue = &btpb.ValueRange_EndValueClosed{EndValueClosed: []byte(end.v)}
			case boundOpen:
				r.EndValue = &btpb.ValueRange_EndValueOpen{EndValueOpen: []byte(end.v)}
			}
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_ValueRangeFilter{ValueRangeFilter: r}}
		case 9:
			start := int64(x.r.IntN(btDiffMaxTS)) * 1000
			end := int64(0)
			if x.r.IntN(3) > 0 {
				end = start + int64(1+x.r.IntN(12))*1000
			}
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_TimestampRangeFilter{TimestampRangeFilter: &btpb.TimestampRange{
				StartTimestampMicros: start, EndTimestampMicros: end}}}
		case 10:
			if in.fam == "" || in.mixed {
				continue
			}
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_CellsPerRowLimitFilter{CellsPerRowLimitFilter: int32(1 + x.r.IntN(4))}}
		case 11:
			if in.fam == "" || in.mixed {
				continue
			}
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_CellsPerRowOffsetFilter{CellsPerRowOffsetFilter: int32(1 + x.r.IntN(4))}}
		case 12, 13:
			if in.mixed {
				continue
			}
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_CellsPerColumnLimitFilter{CellsPerColumnLimitFilter: int32(1 + x.r.IntN(3))}}
		case 14:
			if in.labelled {
				continue
			}
			g.f, g.transforms = &btpb.RowFilter{Filter: &btpb.RowFilter_StripValueTransformer{StripValueTransformer: true}}, true
		default:
			if !allowLabel {
				continue
			}
			g.f = &btpb.RowFilter{Filter: &btpb.RowFilter_ApplyLabelTransformer{ApplyLabelTransformer: x.pick(btDiffLabels)}}
			g.hasLabel, g.transforms, g.out.labelled = true, true, true
		}
		return g
	}
}

// clientFilter is f as the Go client builds it, or false if the client
// has no way to (a range bound other than its [start, end)).
func clientFilter(f *btpb.RowFilter) (bigtable.Filter, bool) {
	if f == nil {
		return nil, true
	}
	list := func(fs []*btpb.RowFilter) ([]bigtable.Filter, bool) {
		out := make([]bigtable.Filter, len(fs))
		for i, s := range fs {
			var ok bool
			if out[i], ok = clientFilter(s); !ok {
				return nil, false
			}
		}
		return out, true
	}
	switch v := f.Filter.(type) {
	case *btpb.RowFilter_Chain_:
		subs, ok := list(v.Chain.Filters)
		return bigtable.ChainFilters(subs...), ok
	case *btpb.RowFilter_Interleave_:
		subs, ok := list(v.Interleave.Filters)
		return bigtable.InterleaveFilters(subs...), ok
	case *btpb.RowFilter_Condition_:
		c := v.Condition
		subs, ok := list([]*btpb.RowFilter{c.PredicateFilter, c.TrueFilter, c.FalseFilter})
		if !ok {
			return nil, false
		}
		return bigtable.ConditionFilter(subs[0], subs[1], subs[2]), true
	case *btpb.RowFilter_PassAllFilter:
		return bigtable.PassAllFilter(), true
	case *btpb.RowFilter_BlockAllFilter:
		return bigtable.BlockAllFilter(), true
	case *btpb.RowFilter_RowKeyRegexFilter:
		return bigtable.RowKeyFilter(string(v.RowKeyRegexFilter)), true
	case *btpb.RowFilter_FamilyNameRegexFilter:
		return bigtable.FamilyFilter(v.FamilyNameRegexFilter), true
	case *btpb.RowFilter_ColumnQualifierRegexFilter:
		return bigtable.ColumnFilter(string(v.ColumnQualifierRegexFilter)), true
	case *btpb.RowFilter_ValueRegexFilter:
		return bigtable.ValueFilter(string(v.ValueRegexFilter)), true
	case *btpb.RowFilter_ColumnRangeFilter:
		r := v.ColumnRangeFilter
		_, openStart := r.StartQualifier.(*btpb.ColumnRange_StartQualifierOpen)
		_, closedEnd := r.EndQualifier.(*btpb.ColumnRange_EndQualifierClosed)
		if openStart || closedEnd {
			return nil, false
		}
		return bigtable.ColumnRangeFilter(r.FamilyName, string(r.GetStartQualifierClosed()), string(r.GetEndQualifierOpen())), true
	case *btpb.RowFilter_ValueRangeFilter:
		r := v.ValueRangeFilter
		_, openStart := r.StartValue.(*btpb.ValueRange_StartValueOpen)
		_, closedEnd := r.EndValue.(*btpb.ValueRange_EndValueClosed)
		if openStart || closedEnd {
			return nil, false
		}
		var start, end []byte // nil: no bound
		if s, ok := r.StartValue.(*btpb.ValueRange_StartValueClosed); ok {
			start = append([]byte{}, s.StartValueClosed...)
		}
		if e, ok := r.EndValue.(*btpb.ValueRange_EndValueOpen); ok {
			end = append([]byte{}, e.EndValueOpen...)
		}
		return bigtable.ValueRangeFilter(start, end), true
	case *btpb.RowFilter_TimestampRangeFilter:
		t := v.TimestampRangeFilter
		return bigtable.TimestampRangeFilterMicros(bigtable.Timestamp(t.StartTimestampMicros), bigtable.Timestamp(t.EndTimestampMicros)), true
	case *btpb.RowFilter_CellsPerRowLimitFilter:
		return bigtable.CellsPerRowLimitFilter(int(v.CellsPerRowLimitFilter)), true
	case *btpb.RowFilter_CellsPerRowOffsetFilter:
		return bigtable.CellsPerRowOffsetFilter(int(v.CellsPerRowOffsetFilter)), true
	case *btpb.RowFilter_CellsPerColumnLimitFilter:
		return bigtable.LatestNFilter(int(v.CellsPerColumnLimitFilter)), true
	case *btpb.RowFilter_StripValueTransformer:
		return bigtable.StripValueFilter(), true
	case *btpb.RowFilter_ApplyLabelTransformer:
		return bigtable.LabelFilter(v.ApplyLabelTransformer), true
	}
	return nil, false
}

// mustClientFilter is clientFilter of a filter generated without
// anyBounds, which the client can always build.
func (x *btDiff) mustClientFilter(f *btpb.RowFilter) bigtable.Filter {
	cf, ok := clientFilter(f)
	if !ok {
		x.fail("the generator made a filter the Go client cannot build: %v", prototext.Format(f))
	}
	return cf
}

// describeFilter renders a filter for the log: as the Go client prints
// it, or as protobuf text.
func describeFilter(f *btpb.RowFilter) string {
	if f == nil {
		return "none"
	}
	if cf, ok := clientFilter(f); ok {
		return cf.String()
	}
	return strings.Join(strings.Fields(prototext.MarshalOptions{}.Format(f)), " ")
}

// tableName is the test table's full name on either side.
func tableName() string {
	return fmt.Sprintf("projects/%s/instances/%s/tables/%s", btProject, btInstance, btDiffTable)
}

// rawReadRows sends a ReadRows request through the generated stub and
// assembles the streamed chunks into rows, as a client library does.
func (s *btSide) rawReadRows(ctx context.Context, req *btpb.ReadRowsRequest) ([]bigtable.Row, error) {
	stream, err := s.raw.ReadRows(ctx, req)
	if err != nil {
		return nil, err
	}
	var rows []bigtable.Row
	var cur bigtable.Row
	var key, fam, qual string
	var cell *bigtable.ReadItem // the cell being assembled
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			if cur != nil || cell != nil {
				return rows, fmt.Errorf("the stream ended inside row %q", key)
			}
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		for _, ch := range resp.Chunks {
			// A row key starts a row; bttest repeats it on every chunk of
			// the row.
			switch k := string(ch.RowKey); {
			case k == "":
			case cur == nil:
				key, cur = k, bigtable.Row{}
			case k != key:
				return rows, fmt.Errorf("row %q begins inside row %q", k, key)
			}
			if ch.FamilyName != nil {
				fam = ch.FamilyName.Value
			}
			if ch.Qualifier != nil {
				qual = string(ch.Qualifier.Value)
			}
			if ch.GetResetRow() {
				cur, cell = nil, nil
				continue
			}
			if cur == nil {
				return rows, fmt.Errorf("a chunk without a row key after row %q", key)
			}
			if cell == nil {
				cell = &bigtable.ReadItem{Row: key, Column: fam + ":" + qual, Timestamp: bigtable.Timestamp(ch.TimestampMicros), Labels: ch.Labels}
			}
			cell.Value = append(cell.Value, ch.Value...)
			if ch.ValueSize == 0 {
				cur[fam] = append(cur[fam], *cell)
				cell = nil
			}
			if ch.GetCommitRow() {
				rows = append(rows, cur)
				cur = nil
			}
		}
	}
}

// rawRowSet is a random row set as the service receives it: keys and
// ranges with every kind of bound, unset ones included.
func (x *btDiff) rawRowSet() *btpb.RowSet {
	rs := &btpb.RowSet{}
	for range x.r.IntN(3) {
		rs.RowKeys = append(rs.RowKeys, []byte(x.key()))
	}
	for range x.r.IntN(3) {
		a, b := x.key(), x.key()
		if a > b {
			a, b = b, a
		}
		r := &btpb.RowRange{}
		switch x.r.IntN(3) {
		case 0:
			r.StartKey = &btpb.RowRange_StartKeyClosed{StartKeyClosed: []byte(a)}
		case 1:
			r.StartKey = &btpb.RowRange_StartKeyOpen{StartKeyOpen: []byte(a)}
		}
		switch x.r.IntN(3) {
		case 0:
			r.EndKey = &btpb.RowRange_EndKeyClosed{EndKeyClosed: []byte(b)}
		case 1:
			r.EndKey = &btpb.RowRange_EndKeyOpen{EndKeyOpen: []byte(b)}
		}
		rs.RowRanges = append(rs.RowRanges, r)
	}
	return rs
}
