package tabletserver

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// encodeRF is the wire form of a row filter, as kv/client sends it (the
// client's encoder is tested end to end in kv/client).
func encodeRF(f *model.RowFilter) *pb.RowFilter {
	if f == nil {
		return nil
	}
	out := &pb.RowFilter{Kind: pb.RowFilter_Kind(f.Kind), Regex: f.Regex, Probability: f.Probability, Family: f.Family,
		N: f.N, Label: f.Label, Mask: f.Mask, FlagFalse: f.FlagFalse,
		Predicate: encodeRF(f.Predicate), TrueFilter: encodeRF(f.True), FalseFilter: encodeRF(f.False)}
	for i := range f.Filters {
		out.Filters = append(out.Filters, encodeRF(&f.Filters[i]))
	}
	for _, b := range []struct {
		in  model.Bound
		dst **pb.Bound
	}{{f.Start, &out.Start}, {f.End, &out.End}} {
		if b.in.Kind != model.BoundUnbounded || b.in.Value != nil {
			*b.dst = &pb.Bound{Kind: pb.Bound_Kind(b.in.Kind), Value: b.in.Value}
		}
	}
	if f.Time != (model.TimeRange{}) {
		out.Time = &pb.TimeRange{Start: f.Time.Start, End: f.Time.End}
	}
	return out
}

// Shorthands for filters.
func rfFamily(re string) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterFamilyRegex, Regex: []byte(re)}
}
func rfQual(re string) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterQualifierRegex, Regex: []byte(re)}
}
func rfValue(re string) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterValueRegex, Regex: []byte(re)}
}
func rfLabel(l string) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterApplyLabel, Label: l}
}
func rfChain(fs ...model.RowFilter) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterChain, Filters: fs}
}
func rfInterleave(fs ...model.RowFilter) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterInterleave, Filters: fs}
}

var (
	rfStrip = model.RowFilter{Kind: model.RowFilterStripValue}
	rfSink  = model.RowFilter{Kind: model.RowFilterSink}
	rfBlock = model.RowFilter{Kind: model.RowFilterBlockAll}
)

func withRF(f model.RowFilter) *pb.Filter { return &pb.Filter{RowFilter: encodeRF(&f)} }

func setAt(family, qualifier string, ts int64, value string) *pb.Mutation {
	return &pb.Mutation{Mutation: &pb.Mutation_SetCell_{SetCell: &pb.Mutation_SetCell{Family: family, Qualifier: []byte(qualifier), Timestamp: ts, Value: []byte(value)}}}
}

// fmtRow renders a row's cells as family:qualifier@ms=value[label],
// separated by spaces.
func fmtRow(r *pb.Row) string {
	var parts []string
	for _, c := range r.GetCells() {
		s := fmt.Sprintf("%s:%s@%d=%s", c.Family, c.Qualifier, c.Timestamp/1000, c.Value)
		if len(c.Labels) > 0 {
			s += "[" + strings.Join(c.Labels, ",") + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// fmtRows renders rows as key{cells}, separated by "; ".
func fmtRows(rows []*pb.Row) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, string(r.Key)+"{"+fmtRow(r)+"}")
	}
	return strings.Join(parts, "; ")
}

func scanRows(t *testing.T, ts *testServer, req *pb.ScanRequest) []*pb.Row {
	t.Helper()
	var rows []*pb.Row
	for _, m := range scanMessages(t, ts, req) {
		rows = append(rows, m.Rows...)
	}
	return rows
}

// rowFilterFixture writes rows on both of t's tablets (split at "m").
func rowFilterFixture(t *testing.T, ts *testServer) {
	t.Helper()
	ctx := context.Background()
	for row, ms := range map[string][]*pb.Mutation{
		"a1": {setAt("f", "a", 3000, "v1"), setAt("f", "a", 2000, "v0"), setAt("f", "b", 1000, "w"), setAt("g", "c", 1000, "x")},
		"a2": {setAt("f", "b", 1000, "w2"), setAt("g", "c", 1000, "y")},
		"n1": {setAt("f", "a", 1000, "v3"), setAt("g", "c", 1000, "z")},
		"n2": {setAt("g", "c", 2000, "zz")},
	} {
		if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte(row), Mutations: ms}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRowFilterReadRow(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	rowFilterFixture(t, ts)
	sinkCond := rfInterleave(
		rfChain(rfFamily("g"), rfLabel("sunk"), rfSink),
		model.RowFilter{Kind: model.RowFilterCondition, Predicate: ptr(rfQual("a")), True: ptr(rfChain(rfFamily("f"), rfStrip))},
	)
	for _, tc := range []struct {
		name string
		row  string
		f    *pb.Filter
		want string // "" for not found
	}{
		{"labels and strip", "a1", withRF(rfChain(rfFamily("f"), rfLabel("lf"), rfStrip)), "f:a@3=[lf] f:a@2=[lf] f:b@1=[lf]"},
		{"cells per row limit", "a1", withRF(model.RowFilter{Kind: model.RowFilterCellsPerRowLimit, N: 2}), "f:a@3=v1 f:a@2=v0"},
		{"cells per column limit", "a1", withRF(model.RowFilter{Kind: model.RowFilterCellsPerColumnLimit, N: 1}), "f:a@3=v1 f:b@1=w g:c@1=x"},
		{"condition true, with a sink", "a1", withRF(sinkCond), "f:a@3= f:a@2= f:b@1= g:c@1=x[sunk]"},
		{"condition false, with a sink", "a2", withRF(sinkCond), "g:c@1=y[sunk]"},
		{"only the sink", "n2", withRF(sinkCond), "g:c@2=zz[sunk]"},
		{"after the other steps", "a1", &pb.Filter{MaxVersions: 1, Families: []string{"f"}, RowFilter: encodeRF(ptr(rfQual("a")))}, "f:a@3=v1"},
		{"dropped", "a1", withRF(rfValue("nothing")), ""},
		{"blocks all", "a1", withRF(rfChain(rfFamily("f"), rfBlock)), ""},
		{"no family can pass", "a1", withRF(rfFamily("h.*")), ""},
	} {
		resp, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte(tc.row), Filter: tc.f})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.want == "" {
			if resp.Found {
				t.Errorf("%s: found %s", tc.name, fmtRow(resp.Row))
			}
			continue
		}
		if got := fmtRow(resp.Row); !resp.Found || got != tc.want {
			t.Errorf("%s: %v %s, want %s", tc.name, resp.Found, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestRowFilterReadsLess checks that a row filter narrows the families
// read and that one that blocks everything reads nothing, by the read
// statistics (which count what the store read).
func TestRowFilterReadsLess(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	rowFilterFixture(t, ts)
	for _, tc := range []struct {
		name  string
		f     model.RowFilter
		cells int64
		rows  int
	}{
		{"family g only", rfChain(rfFamily("g"), rfLabel("x")), 4, 4},
		{"family f only", rfFamily("f"), 5, 3},
		{"both families", rfQual("a|c"), 9, 4},
		{"blocks all", rfChain(rfQual("a"), rfBlock), 0, 0},
		{"no family matches", rfFamily("nope"), 0, 0},
	} {
		f := withRF(tc.f)
		f.WantStats = true
		st, rows := lastStats(t, scanMessages(t, ts, &pb.ScanRequest{Table: "t", Filter: f}))
		if st.Cells != tc.cells || rows != tc.rows {
			t.Errorf("%s: read %d cells (want %d), returned %d rows (want %d)", tc.name, st.Cells, tc.cells, rows, tc.rows)
		}
	}
	// A condition's family is read for it, and dropped after, when the
	// row filter narrows the read.
	f := withRF(rfFamily("g"))
	f.Conditions = []*pb.Condition{{Family: "f", Qualifier: []byte("b"), Type: int32(model.TypeText), Op: pb.Condition_IS_NOT_NULL}}
	if got := fmtRows(scanRows(t, ts, &pb.ScanRequest{Table: "t", Filter: f})); got != "a1{g:c@1=x}; a2{g:c@1=y}" {
		t.Errorf("a condition on another family: %s", got)
	}
	// ReadRow reads nothing for a filter that blocks all.
	f = withRF(rfBlock)
	f.WantStats = true
	resp, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("a1"), Filter: f})
	if err != nil || resp.Found || resp.Stats == nil || resp.Stats.Rows != 0 || resp.Stats.Cells != 0 {
		t.Fatalf("ReadRow through block_all: %v %v", resp, err)
	}
}

func TestRowFilterScan(t *testing.T) {
	ts := startServer(t)
	rowFilterFixture(t, ts)
	f := withRF(rfInterleave(rfChain(rfQual("a"), rfLabel("qa")), rfChain(rfFamily("g"), model.RowFilter{Kind: model.RowFilterCellsPerColumnLimit, N: 1}, rfStrip)))
	want := []string{"a1{f:a@3=v1[qa] f:a@2=v0[qa] g:c@1=}", "a2{g:c@1=}", "n1{f:a@1=v3[qa] g:c@1=}", "n2{g:c@2=}"}
	if got := fmtRows(scanRows(t, ts, &pb.ScanRequest{Table: "t", Filter: f})); got != strings.Join(want, "; ") {
		t.Errorf("scan: %s", got)
	}
	slices.Reverse(want)
	if got := fmtRows(scanRows(t, ts, &pb.ScanRequest{Table: "t", Filter: f, Reversed: true})); got != strings.Join(want, "; ") {
		t.Errorf("reversed scan: %s", got)
	}
	// A row limit counts the rows the row filter keeps.
	f = withRF(rfQual("a"))
	if got := fmtRows(scanRows(t, ts, &pb.ScanRequest{Table: "t", Filter: f, RowLimit: 1, Reversed: true})); got != "n1{f:a@1=v3}" {
		t.Errorf("reversed scan with a limit: %s", got)
	}
	if got := fmtRows(scanRows(t, ts, &pb.ScanRequest{Table: "t", Filter: f, RowLimit: 2})); got != "a1{f:a@3=v1 f:a@2=v0}; n1{f:a@1=v3}" {
		t.Errorf("scan with a limit: %s", got)
	}
}

// TestRowFilterRowSample draws from an injected source: 0.1 and 0.9 in
// turn, one draw per row that reaches the sample, so a probability of
// 0.5 keeps every other row.
func TestRowFilterRowSample(t *testing.T) {
	var n atomic.Int64
	ts := startServer(t, func(o *Options) {
		o.Rand = func() float64 {
			if n.Add(1)%2 == 1 {
				return 0.1
			}
			return 0.9
		}
	})
	ctx := context.Background()
	for i := range 10 {
		if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: fmt.Appendf(nil, "r%d", i), Mutations: []*pb.Mutation{set("f", "a", "v")}}); err != nil {
			t.Fatal(err)
		}
	}
	sample := model.RowFilter{Kind: model.RowFilterRowSample, Probability: 0.5}
	var keys []string
	for _, r := range scanRows(t, ts, &pb.ScanRequest{Table: "t", Filter: withRF(sample)}) {
		keys = append(keys, string(r.Key))
	}
	if got := strings.Join(keys, ","); got != "r0,r2,r4,r6,r8" {
		t.Fatalf("sampled rows: %s", got)
	}
	// The sample sits after a filter that leaves r1 empty: r1 draws
	// nothing, so the turns shift.
	keys = nil
	for _, r := range scanRows(t, ts, &pb.ScanRequest{Table: "t", Filter: withRF(rfChain(model.RowFilter{Kind: model.RowFilterRowKeyRegex, Regex: []byte("r[^1]")}, sample))}) {
		keys = append(keys, string(r.Key))
	}
	if got := strings.Join(keys, ","); got != "r0,r3,r5,r7,r9" {
		t.Fatalf("sampled rows after a key filter: %s", got)
	}
}

// TestRowFilterResumes: a selective row filter over many rows stops after
// scanMaxDropped dropped rows with resume_after, forward and reversed, and
// resuming there finds every row once.
func TestRowFilterResumes(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	for i := range 30 {
		row := fmt.Sprintf("r%02d", i)
		if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte(row), Mutations: []*pb.Mutation{set("f", "a", "v"+row)}}); err != nil {
			t.Fatal(err)
		}
	}
	defer func(n int) { scanMaxDropped = n }(scanMaxDropped)
	scanMaxDropped = 4
	f := withRF(rfChain(rfValue("vr[02][05]"), rfLabel("hit")))
	for _, reversed := range []bool{false, true} {
		var keys []string
		calls, stops := 0, 0
		rng := &pb.RowRange{}
		for {
			calls++
			msgs := scanMessages(t, ts, &pb.ScanRequest{Table: "t", Ranges: []*pb.RowRange{rng}, Filter: f, Reversed: reversed})
			var last *pb.ScanResponse
			for _, m := range msgs {
				for _, r := range m.Rows {
					if len(r.Cells) != 1 || !slices.Equal(r.Cells[0].Labels, []string{"hit"}) {
						t.Fatalf("row %s: %s", r.Key, fmtRow(r))
					}
					keys = append(keys, string(r.Key))
				}
				last = m
			}
			if last == nil || !last.More {
				break
			}
			stops++
			if reversed {
				rng = &pb.RowRange{End: last.ResumeAfter}
			} else {
				rng = &pb.RowRange{Start: append(slices.Clone(last.ResumeAfter), 0)}
			}
			if calls > 30 {
				t.Fatal("the scan does not end")
			}
		}
		want := "r00,r05,r20,r25"
		if reversed {
			want = "r25,r20,r05,r00"
		}
		if got := strings.Join(keys, ","); got != want || stops < 3 {
			t.Errorf("reversed=%v: %s after %d stops, want %s", reversed, got, stops, want)
		}
	}
}

func TestRowFilterCheckAndMutate(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	rowFilterFixture(t, ts)
	for _, tc := range []struct {
		name    string
		row     string
		f       model.RowFilter
		expects []*pb.Expect
		want    bool
	}{
		{"value matches", "a1", rfChain(rfFamily("f"), rfValue("v1")), nil, true},
		{"no such value", "a2", rfChain(rfFamily("f"), rfValue("v1")), nil, false},
		{"only a sink", "a2", rfInterleave(rfChain(rfFamily("g"), rfSink), rfBlock), nil, true},
		{"blocks all", "a1", rfBlock, nil, false},
		{"with an expect that holds", "a1", rfQual("b"), []*pb.Expect{{Family: "g", Qualifier: []byte("c"), Value: []byte("x")}}, true},
		{"with an expect that fails", "a1", rfQual("b"), []*pb.Expect{{Family: "g", Qualifier: []byte("c"), Absent: true}}, false},
	} {
		resp, err := ts.cli.CheckAndMutate(ctx, &pb.CheckAndMutateRequest{Table: "t", Row: []byte(tc.row), Predicate: withRF(tc.f),
			Expects: tc.expects, TrueMutations: []*pb.Mutation{set("g", "t", tc.name)}, FalseMutations: []*pb.Mutation{set("g", "f", tc.name)}})
		if err != nil || resp.PredicateMatched != tc.want {
			t.Fatalf("%s: %v %v, want %v", tc.name, resp, err, tc.want)
		}
		q := "f"
		if tc.want {
			q = "t"
		}
		got, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte(tc.row), Filter: &pb.Filter{Families: []string{"g"}, QualifierRegex: q, MaxVersions: 1}})
		if err != nil || !got.Found || string(got.Row.Cells[0].Value) != tc.name {
			t.Fatalf("%s: the mutation did not apply: %v %v", tc.name, got, err)
		}
	}
}

// TestRowFilterMalformed: trees that are not valid filters, some not even
// valid trees, get InvalidArgument from every RPC that reads, never a
// panic.
func TestRowFilterMalformed(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	deep := &pb.RowFilter{}
	for range model.MaxRowFilterDepth + 5 {
		deep = &pb.RowFilter{Kind: pb.RowFilter_CHAIN, Filters: []*pb.RowFilter{{}, deep}}
	}
	deepCond := &pb.RowFilter{}
	for range 1000 {
		deepCond = &pb.RowFilter{Kind: pb.RowFilter_PASS_ALL_FILTER, Predicate: deepCond}
	}
	wide := &pb.RowFilter{Kind: pb.RowFilter_INTERLEAVE}
	for range maxRowFilterNodes + 1 {
		wide.Filters = append(wide.Filters, &pb.RowFilter{})
	}
	for _, tc := range []struct {
		name string
		f    *pb.RowFilter
		text string
	}{
		{"nesting too deep", deep, "deeper than 20"},
		{"nesting too deep in an unused field", deepCond, "deeper than 20"},
		{"too many filters", wide, "more than 16384 filters"},
		{"unknown kind", &pb.RowFilter{Kind: 99}, "unknown filter kind 99"},
		{"a kind beyond uint8", &pb.RowFilter{Kind: 256 + 2}, "unknown filter kind 258"},
		{"a negative kind", &pb.RowFilter{Kind: -1}, "unknown filter kind -1"},
		{"unknown bound kind", &pb.RowFilter{Kind: pb.RowFilter_VALUE_RANGE_FILTER, End: &pb.Bound{Kind: 7}}, "bound kind"},
		{"a bound kind beyond uint8", &pb.RowFilter{Kind: pb.RowFilter_VALUE_RANGE_FILTER, Start: &pb.Bound{Kind: 257}}, "bound kind 257"},
		{"a chain of one", &pb.RowFilter{Kind: pb.RowFilter_CHAIN, Filters: []*pb.RowFilter{{}}}, "at least two"},
		{"a bad regex", &pb.RowFilter{Kind: pb.RowFilter_VALUE_REGEX_FILTER, Regex: []byte("(")}, "value_regex_filter"},
		{"a bad regex deep down", encodeRF(ptr(rfChain(rfValue("x"), rfInterleave(rfValue("y"), rfQual("[z"))))), "chain[1].interleave[1]"},
		{"a sink in a condition", encodeRF(&model.RowFilter{Kind: model.RowFilterCondition, True: &rfSink}), "sink"},
		{"two labels in a chain", encodeRF(ptr(rfChain(rfLabel("a"), rfLabel("b")))), "label"},
		{"a false flag", &pb.RowFilter{Kind: pb.RowFilter_STRIP_VALUE_TRANSFORMER, FlagFalse: true}, "must be true"},
		{"a probability of 1", &pb.RowFilter{Kind: pb.RowFilter_ROW_SAMPLE_FILTER, Probability: 1}, "probability"},
		{"a long label", &pb.RowFilter{Kind: pb.RowFilter_APPLY_LABEL_TRANSFORMER, Label: "abcdefghijklmnop"}, "label"},
		{"an empty range", encodeRF(&model.RowFilter{Kind: model.RowFilterColumnRange, Family: "f",
			Start: model.Bound{Kind: model.BoundClosed, Value: []byte("b")}, End: model.Bound{Kind: model.BoundOpen, Value: []byte("a")}}), "empty"},
		{"a negative limit", &pb.RowFilter{Kind: pb.RowFilter_CELLS_PER_ROW_LIMIT_FILTER, N: -1}, "> 0"},
	} {
		f := &pb.Filter{RowFilter: tc.f}
		_, rerr := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("a"), Filter: f})
		var serr error
		if s, err := ts.cli.Scan(ctx, &pb.ScanRequest{Table: "t", Filter: f, Reversed: true}); err != nil {
			serr = err
		} else {
			_, serr = s.Recv()
		}
		_, cerr := ts.cli.CheckAndMutate(ctx, &pb.CheckAndMutateRequest{Table: "t", Row: []byte("a"), Predicate: f,
			TrueMutations: []*pb.Mutation{set("f", "a", "1")}})
		for i, err := range []error{rerr, serr, cerr} {
			if code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%s (RPC %d): %v, want InvalidArgument mentioning %q", tc.name, i, err, tc.text)
			}
		}
	}
	// Aggregate takes no row filter.
	_, err := ts.cli.Aggregate(ctx, &pb.AggregateRequest{Table: "t", Filter: withRF(rfQual("a")), Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}}})
	if code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "row filter") {
		t.Errorf("Aggregate with a row filter: %v", err)
	}
}

// TestRowFilterDecodesFaithfully sends trees that use every field over
// the wire and checks that the server decodes each as it was.
func TestRowFilterDecodesFaithfully(t *testing.T) {
	closed := func(s string) model.Bound { return model.Bound{Kind: model.BoundClosed, Value: []byte(s)} }
	open := func(s string) model.Bound { return model.Bound{Kind: model.BoundOpen, Value: []byte(s)} }
	trees := []model.RowFilter{
		{},
		{Kind: model.RowFilterPassAll, FlagFalse: true},
		{Kind: model.RowFilterBlockAll},
		rfChain(rfFamily("f"), rfQual("\xff\x00"), rfValue("v.*"), rfLabel("l-1"), rfStrip),
		rfInterleave(rfSink, model.RowFilter{Kind: model.RowFilterRowKeyRegex, Regex: []byte("k")}, model.RowFilter{Kind: model.RowFilterRowSample, Probability: 0.25}),
		{Kind: model.RowFilterCondition, Predicate: ptr(rfQual("a")), False: ptr(rfBlock)},
		{Kind: model.RowFilterCondition, True: &model.RowFilter{}},
		{Kind: model.RowFilterColumnRange, Family: "g", Start: closed("a"), End: open("\xff")},
		{Kind: model.RowFilterValueRange, Start: open("a"), End: model.Bound{Kind: model.BoundUnbounded, Value: []byte("ignored")}},
		{Kind: model.RowFilterTimestampRange, Time: model.TimeRange{Start: 1000, End: 5000}},
		{Kind: model.RowFilterValueBitmask, Mask: []byte{0x0f, 0xf0}},
		{Kind: model.RowFilterCellsPerRowOffset, N: 3},
		{Kind: model.RowFilterCellsPerRowLimit, N: 4},
		{Kind: model.RowFilterCellsPerColumnLimit, N: 5},
		// Fields the kind does not use travel too.
		{Kind: model.RowFilterStripValue, N: 7, Label: "x", Family: "f", Filters: []model.RowFilter{{}}},
	}
	for _, want := range trees {
		b, err := proto.Marshal(&pb.Filter{RowFilter: encodeRF(&want)})
		if err != nil {
			t.Fatal(err)
		}
		var f pb.Filter
		if err := proto.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		got, err := rowFilterFromProto(f.RowFilter)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%v: decoded as %#v (%v), want %#v", want, got, err, want)
		}
	}
	// The enum's names are the model's kinds', so the numbers agree.
	for k := model.RowFilterPassAll; k <= model.RowFilterApplyLabel; k++ {
		if got, want := pb.RowFilter_Kind(k).String(), strings.ToUpper(k.String()); got != want {
			t.Errorf("kind %d is %s on the wire, %s in the model", k, got, want)
		}
	}
	if name := pb.RowFilter_Kind(model.RowFilterApplyLabel + 1).String(); !strings.HasPrefix(name, "2") {
		t.Errorf("the wire has a kind the model lacks: %s", name)
	}
}
