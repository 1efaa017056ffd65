package tabletserver

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

func int8Value(t *testing.T, n int64) []byte {
	t.Helper()
	b, err := model.EncodeValue(model.TypeInt8, n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func setBytes(family, qualifier string, value []byte) *pb.Mutation {
	return &pb.Mutation{Mutation: &pb.Mutation_SetCell_{SetCell: &pb.Mutation_SetCell{Family: family, Qualifier: []byte(qualifier), Timestamp: -1, Value: value}}}
}

// loadTyped writes rows k00..k29 (tablets split at "m": k.. is in the
// first): f:n is the BIGINT i-10 except every fifth row, which has none;
// g:s is "even" or "odd". Row k07 has an older f:n version too.
func loadTyped(t *testing.T, ts *testServer) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		ms := []*pb.Mutation{set("g", "s", []string{"even", "odd"}[i%2])}
		if i%5 != 0 {
			ms = append(ms, setBytes("f", "n", int8Value(t, int64(i-10))))
		}
		row := []byte(fmt.Sprintf("k%02d", i))
		if i == 7 {
			if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: row, Mutations: []*pb.Mutation{setBytes("f", "n", int8Value(t, 1000))}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: row, Mutations: ms}); err != nil {
			t.Fatal(err)
		}
	}
	// Rows past the split at "m", so that a scan crosses it.
	for i := 0; i < 4; i++ {
		if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte(fmt.Sprintf("z%d", i)),
			Mutations: []*pb.Mutation{set("g", "s", "z"), setBytes("f", "n", int8Value(t, int64(100+i)))}}); err != nil {
			t.Fatal(err)
		}
	}
}

func scanKeys(t *testing.T, ts *testServer, req *pb.ScanRequest) ([]string, []*pb.Row) {
	t.Helper()
	stream, err := ts.cli.Scan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var rows []*pb.Row
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return keys, rows
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range msg.Rows {
			keys = append(keys, string(r.Key))
			rows = append(rows, r)
		}
	}
}

func TestScanConditions(t *testing.T) {
	ts := startServer(t)
	loadTyped(t, ts)
	ge := &pb.Condition{Family: "f", Qualifier: []byte("n"), Type: int32(model.TypeInt8), Op: pb.Condition_GE, Operand: int8Value(t, 0)}

	// n >= 0 numerically (-10..-1 are bytewise greater), reading only
	// family g: the server reads f for the condition and drops it. The
	// row limit counts only rows that pass.
	keys, rows := scanKeys(t, ts, &pb.ScanRequest{Table: "t", RowLimit: 5,
		Filter: &pb.Filter{Families: []string{"g"}, Conditions: []*pb.Condition{ge}}})
	if got := strings.Join(keys, ","); got != "k11,k12,k13,k14,k16" {
		t.Fatalf("n >= 0, limit 5: %s", got)
	}
	for _, r := range rows {
		if len(r.Cells) != 1 || r.Cells[0].Family != "g" {
			t.Fatalf("row %s: cells %v", r.Key, r.Cells)
		}
	}
	// The newest version decides: k07's older 1000 does not count.
	keys, _ = scanKeys(t, ts, &pb.ScanRequest{Table: "t", Ranges: []*pb.RowRange{{Start: []byte("k"), End: []byte("k1")}},
		Filter: &pb.Filter{Conditions: []*pb.Condition{{Family: "f", Qualifier: []byte("n"), Type: int32(model.TypeInt8), Op: pb.Condition_GT, Operand: int8Value(t, 100)}}}})
	if len(keys) != 0 {
		t.Fatalf("n > 100 saw an old version: %v", keys)
	}
	// Two conditions (AND) across the tablet boundary: n >= 0 and s = "odd".
	odd := &pb.Condition{Family: "g", Qualifier: []byte("s"), Type: int32(model.TypeText), Op: pb.Condition_EQ, Operand: []byte("odd")}
	keys, _ = scanKeys(t, ts, &pb.ScanRequest{Table: "t", Ranges: []*pb.RowRange{{Start: []byte("k25")}},
		Filter: &pb.Filter{Conditions: []*pb.Condition{ge, odd}}})
	if got := strings.Join(keys, ","); got != "k27,k29" {
		t.Fatalf("n >= 0 and s = odd: %s", got)
	}
	// IS NULL on the absent column; NE never holds for NULL.
	keys, _ = scanKeys(t, ts, &pb.ScanRequest{Table: "t", Filter: &pb.Filter{Families: []string{"g"},
		Conditions: []*pb.Condition{{Family: "f", Qualifier: []byte("n"), Type: int32(model.TypeInt8), Op: pb.Condition_IS_NULL}}}})
	if got := strings.Join(keys, ","); got != "k00,k05,k10,k15,k20,k25" {
		t.Fatalf("n IS NULL: %s", got)
	}
	keys, _ = scanKeys(t, ts, &pb.ScanRequest{Table: "t", Filter: &pb.Filter{
		Conditions: []*pb.Condition{{Family: "f", Qualifier: []byte("n"), Type: int32(model.TypeInt8), Op: pb.Condition_NE, Operand: int8Value(t, 0)}}}})
	if len(keys) != 34-6 { // n = 0 is k10, which has no n
		t.Fatalf("n <> 0: %d rows: %v", len(keys), keys)
	}
	// Prefix on text.
	keys, _ = scanKeys(t, ts, &pb.ScanRequest{Table: "t", Filter: &pb.Filter{
		Conditions: []*pb.Condition{{Family: "g", Qualifier: []byte("s"), Type: int32(model.TypeText), Op: pb.Condition_PREFIX, Operand: []byte("o")}}}})
	if len(keys) != 15 {
		t.Fatalf("s prefix o: %v", keys)
	}

	// ReadRow applies the conditions too.
	ctx := context.Background()
	resp, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("k03"), Filter: &pb.Filter{Families: []string{"g"}, Conditions: []*pb.Condition{ge}}})
	if err != nil || resp.Found {
		t.Fatalf("ReadRow k03 (n = -7) with n >= 0: %v %v", resp, err)
	}
	resp, err = ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("k13"), Filter: &pb.Filter{Families: []string{"g"}, Conditions: []*pb.Condition{ge}}})
	if err != nil || !resp.Found || len(resp.Row.Cells) != 1 || resp.Row.Cells[0].Family != "g" {
		t.Fatalf("ReadRow k13 with n >= 0: %v %v", resp, err)
	}

	// Bad conditions are refused.
	for _, c := range []*pb.Condition{
		{Family: "f", Qualifier: []byte("n"), Type: int32(model.TypeInt8), Op: pb.Condition_Op(42)},
		{Family: "f", Qualifier: []byte("n"), Type: 99, Op: pb.Condition_EQ},
		{Family: "f", Qualifier: []byte("n"), Type: -1, Op: pb.Condition_EQ},
		{Family: "f", Qualifier: []byte("n"), Type: int32(model.TypeInt8), Op: pb.Condition_EQ, Operand: []byte{1, 2}},
		{Family: "f", Qualifier: []byte("n"), Type: int32(model.TypeJSONB), Op: pb.Condition_LT, Operand: []byte("{}")},
		{Family: "", Qualifier: []byte("n"), Type: int32(model.TypeInt8), Op: pb.Condition_IS_NULL},
	} {
		_, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("k13"), Filter: &pb.Filter{Conditions: []*pb.Condition{c}}})
		if code(err) != codes.InvalidArgument {
			t.Errorf("ReadRow with %v: %v", c, err)
		}
		stream, err := ts.cli.Scan(ctx, &pb.ScanRequest{Table: "t", Filter: &pb.Filter{Conditions: []*pb.Condition{c}}})
		if err == nil {
			_, err = stream.Recv()
		}
		if code(err) != codes.InvalidArgument {
			t.Errorf("Scan with %v: %v", c, err)
		}
	}
}

func TestCheckAndMutateConditions(t *testing.T) {
	ts := startServer(t)
	loadTyped(t, ts)
	ctx := context.Background()
	lt := &pb.Condition{Family: "f", Qualifier: []byte("n"), Type: int32(model.TypeInt8), Op: pb.Condition_LT, Operand: int8Value(t, 0)}
	for _, c := range []struct {
		row  string
		want bool
	}{{"k03", true}, {"k13", false}, {"k05", false}} {
		resp, err := ts.cli.CheckAndMutate(ctx, &pb.CheckAndMutateRequest{Table: "t", Row: []byte(c.row),
			Predicate: &pb.Filter{Families: []string{"g"}, Conditions: []*pb.Condition{lt}}, TrueMutations: []*pb.Mutation{set("g", "hit", "1")}})
		if err != nil || resp.PredicateMatched != c.want {
			t.Fatalf("%s: %v %v", c.row, resp, err)
		}
	}
}

// aggregate calls Aggregate until the server has no more, as the client
// does, and returns the responses.
func aggregate(t *testing.T, ts *testServer, req *pb.AggregateRequest) []*pb.AggregateResponse {
	t.Helper()
	var out []*pb.AggregateResponse
	for {
		resp, err := ts.cli.Aggregate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp)
		if !resp.More {
			return out
		}
		start := append(append([]byte(nil), resp.ResumeAfter...), 0)
		end := req.Ranges[0].End
		req.Ranges = []*pb.RowRange{{Start: start, End: end}}
	}
}

func col(family, qualifier string, ty model.ValueType) *pb.ColumnRef {
	return &pb.ColumnRef{Family: family, Qualifier: []byte(qualifier), Type: int32(ty)}
}

func TestAggregate(t *testing.T) {
	ts := startServer(t)
	loadTyped(t, ts)
	n := col("f", "n", model.TypeInt8)
	aggs := []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}, {Func: pb.AggSpec_COUNT, Column: n},
		{Func: pb.AggSpec_SUM, Column: n}, {Func: pb.AggSpec_MIN, Column: n}, {Func: pb.AggSpec_MAX, Column: n}}
	req := &pb.AggregateRequest{Table: "t", Ranges: []*pb.RowRange{{Start: []byte("k"), End: []byte("l")}},
		GroupBy: []*pb.GroupKey{{What: &pb.GroupKey_Column{Column: col("g", "s", model.TypeText)}}}, Aggs: aggs}
	resps := aggregate(t, ts, req)
	if len(resps) != 1 || len(resps[0].Groups) != 2 {
		t.Fatalf("%v", resps)
	}
	// even rows: i = 0,2,...,28 (15 rows); f:n for those not divisible by
	// 5 (i = 2,4,6,8,12,14,16,18,22,24,26,28: 12 values), n = i - 10.
	// odd rows: i = 1,...,29 (15 rows), n for i not in {5,15,25}: 12 values.
	want := map[string][5]string{
		"even": {"15", "12", "60", "-8", "18"},
		"odd":  {"15", "12", "60", "-9", "19"},
	}
	for _, g := range resps[0].Groups {
		w, ok := want[string(g.Key[0])]
		if !ok || g.KeyNull[0] {
			t.Fatalf("group %q", g.Key)
		}
		got := [5]string{
			fmt.Sprint(g.Values[0].Count), fmt.Sprint(g.Values[1].Count), string(g.Values[2].Value),
			fmt.Sprint(decodeInt(t, g.Values[3].Value)), fmt.Sprint(decodeInt(t, g.Values[4].Value))}
		if got != w {
			t.Errorf("group %s: %v, want %v", g.Key[0], got, w)
		}
		if g.Values[2].Count != 12 || g.Values[3].Count != 12 {
			t.Errorf("group %s: non-null counts %d %d", g.Key[0], g.Values[2].Count, g.Values[3].Count)
		}
	}

	// Grouped by the nullable column itself, with a condition and a
	// family filter that decides which rows exist.
	resps = aggregate(t, ts, &pb.AggregateRequest{Table: "t", Ranges: []*pb.RowRange{{}},
		Filter:  &pb.Filter{Families: []string{"g"}, Conditions: []*pb.Condition{{Family: "g", Qualifier: []byte("s"), Type: int32(model.TypeText), Op: pb.Condition_NE, Operand: []byte("z")}}},
		GroupBy: []*pb.GroupKey{{What: &pb.GroupKey_Column{Column: n}}}, Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}}})
	groups := resps[0].Groups
	if len(groups) != 25 { // 24 values and NULL
		t.Fatalf("%d groups", len(groups))
	}
	nulls := 0
	for _, g := range groups {
		if g.KeyNull[0] {
			nulls++
			if g.Values[0].Count != 6 {
				t.Fatalf("NULL group counts %d", g.Values[0].Count)
			}
		}
	}
	if nulls != 1 {
		t.Fatalf("%d NULL groups", nulls)
	}

	// No group_by, COUNT_ROWS over everything: 34 rows, across the split.
	resps = aggregate(t, ts, &pb.AggregateRequest{Table: "t", Ranges: []*pb.RowRange{{}}, Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}, {Func: pb.AggSpec_SUM, Column: n}}})
	if g := resps[0].Groups; len(g) != 1 || g[0].Values[0].Count != 34 || string(g[0].Values[1].Value) != "526" {
		t.Fatalf("count(*): %v", resps[0])
	}
}

func decodeInt(t *testing.T, b []byte) int64 {
	t.Helper()
	v, err := model.DecodeValue(model.TypeInt8, b)
	if err != nil {
		t.Fatal(err)
	}
	return v.(int64)
}

func TestAggregateResumes(t *testing.T) {
	ts := startServer(t)
	loadTyped(t, ts)
	defer func(r, g int) { aggMaxRows, aggMaxGroups = r, g }(aggMaxRows, aggMaxGroups)
	aggMaxRows, aggMaxGroups = 7, 4
	// Grouped by row key: the group bound stops the calls.
	resps := aggregate(t, ts, &pb.AggregateRequest{Table: "t", Ranges: []*pb.RowRange{{End: []byte("l")}},
		GroupBy: []*pb.GroupKey{{What: &pb.GroupKey_RowKey{RowKey: true}}}, Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}}})
	var keys []string
	for _, r := range resps {
		if len(r.Groups) > 4 {
			t.Fatalf("%d groups in one call", len(r.Groups))
		}
		for _, g := range r.Groups {
			keys = append(keys, string(g.Key[0]))
		}
	}
	if len(resps) < 8 || len(keys) != 30 || keys[0] != "k00" || keys[29] != "k29" {
		t.Fatalf("%d calls, keys %v", len(resps), keys)
	}
	// One group: the row bound stops the calls; the partial counts add up.
	resps = aggregate(t, ts, &pb.AggregateRequest{Table: "t", Ranges: []*pb.RowRange{{End: []byte("l")}}, Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}}})
	total := int64(0)
	for _, r := range resps {
		total += r.Groups[0].Values[0].Count
	}
	if len(resps) != 5 || total != 30 {
		t.Fatalf("%d calls, %d rows", len(resps), total)
	}
}

func TestAggregateBadRequests(t *testing.T) {
	ts := startServer(t)
	loadTyped(t, ts)
	ctx := context.Background()
	n := col("f", "n", model.TypeInt8)
	for _, c := range []struct {
		req  *pb.AggregateRequest
		code codes.Code
	}{
		{&pb.AggregateRequest{Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", Aggs: []*pb.AggSpec{{Func: pb.AggSpec_SUM, Column: col("g", "s", model.TypeText)}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", Aggs: []*pb.AggSpec{{Func: pb.AggSpec_MAX, Column: col("g", "s", model.TypeJSONB)}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS, Column: n}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", Aggs: []*pb.AggSpec{{Func: pb.AggSpec_Func(9), Column: n}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", Aggs: []*pb.AggSpec{{Func: pb.AggSpec_SUM, Column: col("f", "n", 77)}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", GroupBy: []*pb.GroupKey{{}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", Ranges: []*pb.RowRange{{Start: []byte("b"), End: []byte("a")}}}, codes.InvalidArgument},
		{&pb.AggregateRequest{Table: "t", Filter: &pb.Filter{Conditions: []*pb.Condition{{Family: "f", Type: 3, Op: 77}}}}, codes.InvalidArgument},
		// A text cell summed as a bigint: the data is at fault.
		{&pb.AggregateRequest{Table: "t", Aggs: []*pb.AggSpec{{Func: pb.AggSpec_SUM, Column: col("g", "s", model.TypeInt8)}}}, codes.FailedPrecondition},
		{&pb.AggregateRequest{Table: "t", GroupBy: []*pb.GroupKey{{What: &pb.GroupKey_Column{Column: col("g", "s", model.TypeInt8)}}}}, codes.FailedPrecondition},
	} {
		if _, err := ts.cli.Aggregate(ctx, c.req); code(err) != c.code {
			t.Errorf("%v: %v, want %v", c.req, err, c.code)
		}
	}
}

func TestAggregateFencing(t *testing.T) {
	ts := startServer(t)
	loadTyped(t, ts)
	ts.coord.mu.Lock()
	var l *fakeLock
	for _, x := range ts.coord.locks {
		l = x
	}
	ts.coord.mu.Unlock()
	l.lose(true)
	_, err := ts.cli.Aggregate(context.Background(), &pb.AggregateRequest{Table: "t", Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}}})
	if code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "not serving") {
		t.Fatalf("after losing the lock: %v", err)
	}
}

// TestScanStopsEarlyForSelectiveFilters: a scan whose filter drops many
// rows stops with resume_after, and continuing after it sees every row.
func TestScanStopsEarlyForSelectiveFilters(t *testing.T) {
	ts := startServer(t)
	loadTyped(t, ts)
	defer func(n int) { scanMaxDropped = n }(scanMaxDropped)
	scanMaxDropped = 4
	odd := &pb.Condition{Family: "g", Qualifier: []byte("s"), Type: int32(model.TypeText), Op: pb.Condition_EQ, Operand: []byte("odd")}
	ctx := context.Background()
	var keys []string
	start, calls := []byte("k"), 0
	for {
		calls++
		stream, err := ts.cli.Scan(ctx, &pb.ScanRequest{Table: "t", Ranges: []*pb.RowRange{{Start: start, End: []byte("l")}},
			Filter: &pb.Filter{Conditions: []*pb.Condition{odd}}})
		if err != nil {
			t.Fatal(err)
		}
		var last *pb.ScanResponse
		for {
			msg, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range msg.Rows {
				keys = append(keys, string(r.Key))
			}
			last = msg
		}
		if last == nil || !last.More {
			break
		}
		start = append(append([]byte(nil), last.ResumeAfter...), 0)
	}
	if len(keys) != 15 || keys[0] != "k01" || keys[14] != "k29" || calls < 4 {
		t.Fatalf("%d calls: %v", calls, keys)
	}
	// Without a filter that drops rows, no early stop.
	keys, _ = scanKeys(t, ts, &pb.ScanRequest{Table: "t"})
	if len(keys) != 34 {
		t.Fatalf("plain scan: %d rows", len(keys))
	}
}
