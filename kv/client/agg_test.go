package client_test

import (
	"fmt"
	"math/big"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

func encode(t *testing.T, ty model.ValueType, v any) []byte {
	t.Helper()
	b, err := model.EncodeValue(ty, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadTyped writes rows a0..z9 over the cluster's three tablets (split at
// "g" and "p"): f:n is the BIGINT i-100 (none in every seventh row), f:s
// the TEXT "x", "y" or "z" by i%3, f:d the NUMERIC "0.1" or "0.25".
func loadTyped(t *testing.T, cl *cluster) (keys []string, n []int64) {
	t.Helper()
	var ms []*model.RowMutation
	for i := 0; i < 260; i++ {
		key := fmt.Sprintf("%c%d", 'a'+i/10, i%10)
		m := &model.RowMutation{Row: []byte(key), Mutations: []model.Mutation{
			model.SetCell("f", []byte("s"), model.ServerTimestamp, []byte{"xyz"[i%3]}),
			model.SetCell("f", []byte("d"), model.ServerTimestamp, []byte([]string{"0.1", "0.25"}[i%2])),
		}}
		if i%7 != 0 {
			m.Mutations = append(m.Mutations, model.SetCell("f", []byte("n"), model.ServerTimestamp, encode(t, model.TypeInt8, int64(i-100))))
		}
		ms = append(ms, m)
		keys = append(keys, key)
		n = append(n, int64(i-100))
	}
	for i, err := range cl.c.ApplyBulk(ctx(t), "t", ms) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	return keys, n
}

func TestFilterConditions(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	loadTyped(t, cl)
	// n >= 100 (i >= 200: rows u0..z9, but not u3 and the other seventh ones), only s
	// returned, with a limit that counts passing rows only.
	f := client.Filter{QualifierRegex: "s", Conditions: []model.Condition{
		{Family: "f", Qualifier: []byte("n"), Type: model.TypeInt8, Op: model.CondGE, Operand: encode(t, model.TypeInt8, int64(100))},
	}}
	sc := cl.c.Scan(c, "t", model.RowRange{}, f, 5)
	var keys []string
	for sc.Next() {
		if cells := sc.Row().Cells; len(cells) != 1 || string(cells[0].Qualifier) != "s" {
			t.Fatalf("cells %v", cells)
		}
		keys = append(keys, string(sc.Row().Key))
	}
	if sc.Err() != nil || strings.Join(keys, ",") != "u0,u1,u2,u4,u5" {
		t.Fatalf("scan: %v %v", keys, sc.Err())
	}
	// IS NULL across all tablets: the seventh rows.
	sc = cl.c.Scan(c, "t", model.RowRange{}, client.Filter{Conditions: []model.Condition{
		{Family: "f", Qualifier: []byte("n"), Type: model.TypeInt8, Op: model.CondIsNull}}}, 0)
	count := 0
	for sc.Next() {
		count++
	}
	if sc.Err() != nil || count != 38 {
		t.Fatalf("IS NULL: %d rows, %v", count, sc.Err())
	}
	if _, found, err := cl.c.ReadRow(c, "t", []byte("a1"), f); err != nil || found {
		t.Fatalf("ReadRow a1 (n = -99): %v %v", found, err)
	}
	if _, found, err := cl.c.ReadRow(c, "t", []byte("v1"), f); err != nil || !found {
		t.Fatalf("ReadRow v1 (n = 111): %v %v", found, err)
	}
	bad := client.Filter{Conditions: []model.Condition{{Family: "f", Qualifier: []byte("n"), Type: model.TypeInt8, Op: model.CondLT, Operand: []byte("x")}}}
	if _, _, err := cl.c.ReadRow(c, "t", []byte("v1"), bad); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a bad operand: %v", err)
	}
}

func TestAggregateAcrossTablets(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	_, ns := loadTyped(t, cl)
	n := client.ColumnRef{Family: "f", Qualifier: []byte("n"), Type: model.TypeInt8}
	d := client.ColumnRef{Family: "f", Qualifier: []byte("d"), Type: model.TypeNumeric}
	spec := client.AggregateSpec{
		GroupBy: []client.GroupKey{{Column: client.ColumnRef{Family: "f", Qualifier: []byte("s"), Type: model.TypeText}}},
		Aggs: []client.AggSpec{{Func: client.AggCountRows}, {Func: client.AggCount, Column: n}, {Func: client.AggSum, Column: n},
			{Func: client.AggMin, Column: n}, {Func: client.AggMax, Column: n}, {Func: client.AggSum, Column: d}},
	}
	// WHERE n <> 0 over [c, x): i in [20, 230) but not 100.
	f := client.Filter{Conditions: []model.Condition{{Family: "f", Qualifier: []byte("n"), Type: model.TypeInt8, Op: model.CondNE, Operand: encode(t, model.TypeInt8, int64(0))}}}
	groups, err := cl.c.Aggregate(c, "t", []model.RowRange{{Start: []byte("c"), End: []byte("x")}}, f, spec)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		rows, count, sum, min, max int64
		dsum                       *big.Rat
	}
	wants := map[string]*want{}
	for i := 20; i < 230; i++ {
		if i%7 == 0 || i == 100 {
			continue // NULL fails n <> 0; so does 0
		}
		s := string("xyz"[i%3])
		w := wants[s]
		if w == nil {
			w = &want{min: 1 << 62, max: -1 << 62, dsum: new(big.Rat)}
			wants[s] = w
		}
		w.rows++
		w.count++
		w.sum += ns[i]
		w.min, w.max = min(w.min, ns[i]), max(w.max, ns[i])
		r, _ := new(big.Rat).SetString([]string{"0.1", "0.25"}[i%2])
		w.dsum.Add(w.dsum, r)
	}
	if len(groups) != 3 {
		t.Fatalf("%d groups: %v", len(groups), groups)
	}
	for _, g := range groups {
		s, ok := g.Key[0].(string)
		w := wants[s]
		if !ok || w == nil || string(g.RawKey[0]) != s {
			t.Fatalf("group key %v", g.Key)
		}
		v := g.Values
		if v[0].Count != w.rows || v[1].Count != w.count || v[2].Count != w.count || v[3].Count != w.count {
			t.Errorf("group %s: counts %d %d %d %d, want %d %d", s, v[0].Count, v[1].Count, v[2].Count, v[3].Count, w.rows, w.count)
		}
		if sum, ok := v[2].Value.(*big.Int); !ok || sum.Int64() != w.sum || string(v[2].Raw) != fmt.Sprint(w.sum) {
			t.Errorf("group %s: sum %v, want %d", s, v[2].Value, w.sum)
		}
		if v[3].Value != w.min || v[4].Value != w.max {
			t.Errorf("group %s: min %v max %v, want %d %d", s, v[3].Value, v[4].Value, w.min, w.max)
		}
		if got, want := v[5].Value, w.dsum.FloatString(2); got != want {
			t.Errorf("group %s: numeric sum %v, want %s", s, got, want)
		}
	}

	// No GROUP BY, over no rows: one group, COUNT 0, SUM NULL.
	groups, err = cl.c.Aggregate(c, "t", []model.RowRange{{Start: []byte("zz")}}, client.Filter{}, client.AggregateSpec{
		Aggs: []client.AggSpec{{Func: client.AggCountRows}, {Func: client.AggSum, Column: n}}})
	if err != nil || len(groups) != 1 || groups[0].Values[0].Count != 0 || groups[0].Values[1].Count != 0 || groups[0].Values[1].Value != nil {
		t.Fatalf("over no rows: %+v %v", groups, err)
	}
	// COUNT(*) of the whole table, reading only what it must.
	groups, err = cl.c.Aggregate(c, "t", []model.RowRange{{}}, client.Filter{Families: []string{"f"}}, client.AggregateSpec{
		Aggs: []client.AggSpec{{Func: client.AggCountRows}}})
	if err != nil || len(groups) != 1 || groups[0].Values[0].Count != 260 {
		t.Fatalf("count(*): %+v %v", groups, err)
	}
	// Grouped by a nullable column: one NULL group.
	groups, err = cl.c.Aggregate(c, "t", []model.RowRange{{}}, client.Filter{}, client.AggregateSpec{
		GroupBy: []client.GroupKey{{Column: n}}, Aggs: []client.AggSpec{{Func: client.AggCountRows}}})
	if err != nil || len(groups) != 260-38+1 {
		t.Fatalf("group by n: %d groups, %v", len(groups), err)
	}
	nulls := 0
	for _, g := range groups {
		if g.Key[0] == nil {
			nulls++
			if g.RawKey[0] != nil || g.Values[0].Count != 38 {
				t.Fatalf("NULL group: %+v", g)
			}
		}
	}
	if nulls != 1 {
		t.Fatalf("%d NULL groups", nulls)
	}
	// A bad spec is the caller's error.
	if _, err := cl.c.Aggregate(c, "t", []model.RowRange{{}}, client.Filter{}, client.AggregateSpec{
		Aggs: []client.AggSpec{{Func: client.AggSum, Column: client.ColumnRef{Family: "f", Qualifier: []byte("s"), Type: model.TypeText}}}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("SUM of text: %v", err)
	}
}

// TestAggregateResumes groups more rows by row key than one server call
// may make groups: the client follows resume_after and loses nothing.
func TestAggregateResumes(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	const rows = 10_000 + 321
	var ms []*model.RowMutation
	for i := 0; i < rows; i++ {
		ms = append(ms, set(fmt.Sprintf("a%05d", i), "v"))
	}
	ms = append(ms, set("h", "v"), set("q", "v"))
	for i, err := range cl.c.ApplyBulk(c, "t", ms) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	cl.calls.Store(0)
	groups, err := cl.c.Aggregate(c, "t", []model.RowRange{{}}, client.Filter{}, client.AggregateSpec{
		GroupBy: []client.GroupKey{{RowKey: true}}, Aggs: []client.AggSpec{{Func: client.AggCountRows}}})
	if err != nil || len(groups) != rows+2 {
		t.Fatalf("%d groups, %v", len(groups), err)
	}
	for i, g := range groups[:rows] {
		if want := fmt.Sprintf("a%05d", i); string(g.Key[0].([]byte)) != want || g.Values[0].Count != 1 {
			t.Fatalf("group %d: %q %d", i, g.Key[0], g.Values[0].Count)
		}
	}
	if string(groups[rows].Key[0].([]byte)) != "h" || string(groups[rows+1].Key[0].([]byte)) != "q" {
		t.Fatalf("last groups %q %q", groups[rows].Key[0], groups[rows+1].Key[0])
	}
	if n := cl.calls.Load(); n < 4 { // two calls in the first tablet, one in each other
		t.Fatalf("%d calls", n)
	}
	// Several ranges, with a resume inside the first tablet's.
	ranges := []model.RowRange{{Start: []byte("a00100"), End: []byte("a06000")}, {Start: []byte("a06001"), End: []byte("a09000")},
		{Start: []byte("a09500"), End: []byte("h\x00")}, {Start: []byte("q")}}
	groups, err = cl.c.Aggregate(c, "t", ranges, client.Filter{}, client.AggregateSpec{
		GroupBy: []client.GroupKey{{RowKey: true}}, Aggs: []client.AggSpec{{Func: client.AggCountRows}}})
	var want []string
	for i := 100; i < rows; i++ {
		if i < 6000 || i > 6000 && i < 9000 || i >= 9500 {
			want = append(want, fmt.Sprintf("a%05d", i))
		}
	}
	want = append(want, "h", "q")
	if err != nil || len(groups) != len(want) {
		t.Fatalf("several ranges: %d groups, want %d, %v", len(groups), len(want), err)
	}
	for i, g := range groups {
		if string(g.Key[0].([]byte)) != want[i] || g.Values[0].Count != 1 {
			t.Fatalf("several ranges: group %d: %q %d, want %q", i, g.Key[0], g.Values[0].Count, want[i])
		}
	}
}

// TestSelectiveScanResumes scans a tablet where the filter passes few of
// many rows: the server stops its call early and the scanner resumes
// after the last row it read, losing nothing.
func TestSelectiveScanResumes(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	const rows = 100_000 + 2_000 // past the server's bound on dropped rows per call
	var ms []*model.RowMutation
	for i := 0; i < rows; i++ {
		v := "n"
		if i%20_000 == 7 || i == rows-1 {
			v = "y"
		}
		ms = append(ms, set(fmt.Sprintf("a%06d", i), v))
	}
	for len(ms) > 0 {
		n := min(len(ms), 5000)
		for i, err := range cl.c.ApplyBulk(c, "t", ms[:n]) {
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
		}
		ms = ms[n:]
	}
	cl.calls.Store(0)
	sc := cl.c.Scan(c, "t", model.RowRange{End: []byte("g")}, client.Filter{Conditions: []model.Condition{
		{Family: "f", Qualifier: []byte("q"), Type: model.TypeText, Op: model.CondEQ, Operand: []byte("y")}}}, 0)
	var keys []string
	for sc.Next() {
		keys = append(keys, string(sc.Row().Key))
	}
	if sc.Err() != nil || strings.Join(keys, ",") != "a000007,a020007,a040007,a060007,a080007,a100007,a101999" {
		t.Fatalf("scan: %v %v", keys, sc.Err())
	}
	// The locations are cached: the calls are the scan's, two (or more if
	// the server's time budget ran out first).
	if n := cl.calls.Load(); n < 2 {
		t.Fatalf("%d calls", n)
	}
}

// TestWireNumbers: the client sends model's and its own enums by number.
func TestWireNumbers(t *testing.T) {
	ops := map[model.CondOp]pb.Condition_Op{model.CondEQ: pb.Condition_EQ, model.CondNE: pb.Condition_NE, model.CondLT: pb.Condition_LT,
		model.CondLE: pb.Condition_LE, model.CondGT: pb.Condition_GT, model.CondGE: pb.Condition_GE, model.CondPrefix: pb.Condition_PREFIX,
		model.CondIsNull: pb.Condition_IS_NULL, model.CondIsNotNull: pb.Condition_IS_NOT_NULL}
	for m, p := range ops {
		if int32(m) != int32(p) {
			t.Errorf("%s is %d, the wire's %s %d", m, m, p, p)
		}
	}
	funcs := map[client.AggFunc]pb.AggSpec_Func{client.AggCountRows: pb.AggSpec_COUNT_ROWS, client.AggCount: pb.AggSpec_COUNT,
		client.AggSum: pb.AggSpec_SUM, client.AggMin: pb.AggSpec_MIN, client.AggMax: pb.AggSpec_MAX}
	for c, p := range funcs {
		if int32(c) != int32(p) {
			t.Errorf("%s is %d, the wire's %s %d", c, c, p, p)
		}
	}
}

// TestAggregateOverSeveralRanges aggregates random lists of ranges (row
// points, ranges inside a tablet and across the splits at "g" and "p",
// one to the table's end) and checks each result against a Scan of the
// same ranges, and that each tablet is called once however many ranges
// it holds.
func TestAggregateOverSeveralRanges(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	keys, ns := loadTyped(t, cl)
	n := client.ColumnRef{Family: "f", Qualifier: []byte("n"), Type: model.TypeInt8}
	spec := client.AggregateSpec{Aggs: []client.AggSpec{{Func: client.AggCountRows}, {Func: client.AggSum, Column: n},
		{Func: client.AggMin, Column: n}, {Func: client.AggMax, Column: n}}}
	if _, err := cl.c.Aggregate(c, "t", []model.RowRange{{}}, client.Filter{}, spec); err != nil {
		t.Fatal(err) // and the tablets' locations are cached
	}
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		// Cut points picked from the keys and from between them, sorted.
		var cuts []string
		for i := 0; i < 2+r.Intn(8); i++ {
			k := keys[r.Intn(len(keys))]
			if r.Intn(3) == 0 {
				k = k[:1]
			}
			cuts = append(cuts, k)
		}
		sort.Strings(cuts)
		cuts = slices.Compact(cuts)
		var ranges []model.RowRange
		for i := 0; i+1 < len(cuts); i += 2 {
			if r.Intn(3) == 0 { // a point
				ranges = append(ranges, model.RowRange{Start: []byte(cuts[i]), End: []byte(cuts[i] + "\x00")})
			} else {
				ranges = append(ranges, model.RowRange{Start: []byte(cuts[i]), End: []byte(cuts[i+1])})
			}
		}
		if len(cuts)%2 == 1 && r.Intn(2) == 0 {
			ranges = append(ranges, model.RowRange{Start: []byte(cuts[len(cuts)-1])})
		}
		var count, sum int64
		var min, max *int64
		tablets := map[int]bool{}
		for i, k := range keys {
			in := false
			for _, rg := range ranges {
				if k >= string(rg.Start) && (len(rg.End) == 0 || k < string(rg.End)) {
					in = true
				}
			}
			if !in {
				continue
			}
			count++
			if i%7 == 0 {
				continue
			}
			v := ns[i]
			sum += v
			if min == nil || v < *min {
				min = &v
			}
			if max == nil || v > *max {
				max = &v
			}
		}
		for i, tb := range [][2]string{{"", "g"}, {"g", "p"}, {"p", ""}} {
			for _, rg := range ranges {
				if (tb[1] == "" || string(rg.Start) < tb[1]) && (len(rg.End) == 0 || string(rg.End) > tb[0]) {
					tablets[i] = true
				}
			}
		}
		cl.calls.Store(0)
		groups, err := cl.c.Aggregate(c, "t", ranges, client.Filter{}, spec)
		if err != nil || len(groups) != 1 {
			t.Fatalf("ranges %q: %+v %v", ranges, groups, err)
		}
		v := groups[0].Values
		if v[0].Count != count {
			t.Fatalf("ranges %q: count %d, want %d", ranges, v[0].Count, count)
		}
		if min == nil {
			if v[1].Value != nil || v[2].Value != nil || v[3].Value != nil {
				t.Fatalf("ranges %q: sum %v min %v max %v over no values", ranges, v[1].Value, v[2].Value, v[3].Value)
			}
		} else if v[1].Value.(*big.Int).Int64() != sum || v[2].Value != *min || v[3].Value != *max {
			t.Fatalf("ranges %q: sum %v min %v max %v, want %d %d %d", ranges, v[1].Value, v[2].Value, v[3].Value, sum, *min, *max)
		}
		if calls := cl.calls.Load(); int(calls) != len(tablets) {
			t.Fatalf("ranges %q: %d calls for %d tablets", ranges, calls, len(tablets))
		}
	}
	for _, bad := range [][]model.RowRange{
		{{Start: []byte("b"), End: []byte("a")}},
		{{Start: []byte("a"), End: []byte("c")}, {Start: []byte("b"), End: []byte("d")}},
		{{Start: []byte("a")}, {Start: []byte("b"), End: []byte("d")}},
	} {
		if _, err := cl.c.Aggregate(c, "t", bad, client.Filter{}, spec); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("ranges %q: %v", bad, err)
		}
	}
}
