package bigtableapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	adminpb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
)

func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		name, table, instance string // table "": InvalidArgument
	}{
		{"projects/p/instances/i/tables/t", "t", "projects/p/instances/i"},
		{"projects/my-proj/instances/my.inst/tables/users_2", "users_2", "projects/my-proj/instances/my.inst"},
		{"projects/tables/instances/tables/tables/tables", "tables", "projects/tables/instances/tables"},
		{"", "", ""},
		{"t", "", ""},
		{"tables/t", "", ""},
		{"projects/p/instances/i/tables/", "", ""},
		{"projects/p/instances/i/tables/t/x", "", ""},
		{"projects//instances/i/tables/t", "", ""},
		{"projects/p/instances//tables/t", "", ""},
		{"project/p/instances/i/tables/t", "", ""},
		{"projects/p/instances/i/tables/t/authorizedViews/v", "", ""},
	} {
		n, err := parseTable(tc.name)
		if tc.table == "" {
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("parseTable(%q) = %v, %v; want InvalidArgument", tc.name, n, err)
			}
			continue
		}
		if err != nil || n.table != tc.table || n.instance != tc.instance || n.String() != tc.name {
			t.Errorf("parseTable(%q) = %+v, %v", tc.name, n, err)
		}
	}
	for name, ok := range map[string]bool{
		"projects/p/instances/i": true, "projects/p/instances/": false, "projects/p": false, "projects/p/instances/i/tables/t": false, "": false,
	} {
		if _, err := parseInstance(name); (err == nil) != ok {
			t.Errorf("parseInstance(%q): %v", name, err)
		}
	}
	if _, err := dataTable("projects/p/instances/i/tables/t", "projects/p/instances/i/tables/t/authorizedViews/v", ""); status.Code(err) != codes.Unimplemented {
		t.Errorf("an authorized view: %v", err)
	}
	for id, ok := range map[string]bool{"t": true, "_x": true, "a.b-c_d9": true, "-a": false, ".a": false, "a/b": false, "": false,
		strings.Repeat("a", 50): true, strings.Repeat("a", 51): false, "naïve": false} {
		if validTableID(id) != ok {
			t.Errorf("validTableID(%q) = %v", id, !ok)
		}
	}
}

// Proto filter builders, for the tables below.
func pchain(fs ...*btpb.RowFilter) *btpb.RowFilter {
	return &btpb.RowFilter{Filter: &btpb.RowFilter_Chain_{Chain: &btpb.RowFilter_Chain{Filters: fs}}}
}

func pinterleave(fs ...*btpb.RowFilter) *btpb.RowFilter {
	return &btpb.RowFilter{Filter: &btpb.RowFilter_Interleave_{Interleave: &btpb.RowFilter_Interleave{Filters: fs}}}
}

func pcond(p, t, f *btpb.RowFilter) *btpb.RowFilter {
	return &btpb.RowFilter{Filter: &btpb.RowFilter_Condition_{Condition: &btpb.RowFilter_Condition{PredicateFilter: p, TrueFilter: t, FalseFilter: f}}}
}

func pfamily(re string) *btpb.RowFilter {
	return &btpb.RowFilter{Filter: &btpb.RowFilter_FamilyNameRegexFilter{FamilyNameRegexFilter: re}}
}

func plabel(l string) *btpb.RowFilter {
	return &btpb.RowFilter{Filter: &btpb.RowFilter_ApplyLabelTransformer{ApplyLabelTransformer: l}}
}

// TestTranslateFilter covers every case of the RowFilter oneof, by the
// model's compact notation of the result, and whether the model's
// validation (which the tablet servers run) accepts it.
func TestTranslateFilter(t *testing.T) {
	for _, tc := range []struct {
		in    *btpb.RowFilter
		want  string
		valid bool
	}{
		{&btpb.RowFilter{}, "pass", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_PassAllFilter{PassAllFilter: true}}, "pass", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_PassAllFilter{PassAllFilter: false}}, "pass(false)", false},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_BlockAllFilter{BlockAllFilter: true}}, "block", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_Sink{Sink: true}}, "sink", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_StripValueTransformer{StripValueTransformer: true}}, "strip", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_StripValueTransformer{StripValueTransformer: false}}, "strip(false)", false},
		{pchain(pfamily("cf"), plabel("x")), `chain(family("cf"),label("x"))`, true},
		{pchain(pfamily("cf")), `chain(family("cf"))`, false},
		{pchain(plabel("a"), plabel("b")), `chain(label("a"),label("b"))`, false},
		{pinterleave(plabel("a"), plabel("b")), `interleave(label("a"),label("b"))`, true},
		{pcond(pfamily("a"), plabel("t"), nil), `cond(family("a"),label("t"),-)`, true},
		{pcond(nil, nil, pfamily("b")), `cond(-,-,family("b"))`, true},
		{pcond(&btpb.RowFilter{Filter: &btpb.RowFilter_Sink{Sink: true}}, nil, nil), `cond(sink,-,-)`, false},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_RowKeyRegexFilter{RowKeyRegexFilter: []byte("r\xff.*")}}, `key("r\xff.*")`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_RowKeyRegexFilter{RowKeyRegexFilter: []byte("(")}}, `key("(")`, false},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_RowSampleFilter{RowSampleFilter: 0.25}}, "sample(0.25)", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_RowSampleFilter{RowSampleFilter: 1}}, "sample(1)", false},
		{pfamily("c:f"), `family("c:f")`, false},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ColumnQualifierRegexFilter{ColumnQualifierRegexFilter: []byte("q.*")}}, `qual("q.*")`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte("\\C+")}}, `value("\\C+")`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ColumnRangeFilter{ColumnRangeFilter: &btpb.ColumnRange{FamilyName: "cf",
			StartQualifier: &btpb.ColumnRange_StartQualifierClosed{StartQualifierClosed: []byte("a")},
			EndQualifier:   &btpb.ColumnRange_EndQualifierOpen{EndQualifierOpen: []byte("c")}}}}, `cols("cf",["a","c"))`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ColumnRangeFilter{ColumnRangeFilter: &btpb.ColumnRange{FamilyName: "cf",
			StartQualifier: &btpb.ColumnRange_StartQualifierOpen{StartQualifierOpen: []byte("a")},
			EndQualifier:   &btpb.ColumnRange_EndQualifierClosed{EndQualifierClosed: []byte("c")}}}}, `cols("cf",("a","c"])`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ColumnRangeFilter{ColumnRangeFilter: &btpb.ColumnRange{FamilyName: "cf"}}}, `cols("cf",(*,*))`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ColumnRangeFilter{ColumnRangeFilter: &btpb.ColumnRange{FamilyName: "cf",
			StartQualifier: &btpb.ColumnRange_StartQualifierClosed{StartQualifierClosed: []byte("d")},
			EndQualifier:   &btpb.ColumnRange_EndQualifierOpen{EndQualifierOpen: []byte("c")}}}}, `cols("cf",["d","c"))`, false},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ValueRangeFilter{ValueRangeFilter: &btpb.ValueRange{
			StartValue: &btpb.ValueRange_StartValueOpen{StartValueOpen: []byte("a")},
			EndValue:   &btpb.ValueRange_EndValueOpen{EndValueOpen: []byte("b")}}}}, `values(("a","b"))`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ValueRangeFilter{ValueRangeFilter: &btpb.ValueRange{
			StartValue: &btpb.ValueRange_StartValueClosed{StartValueClosed: []byte("a")},
			EndValue:   &btpb.ValueRange_EndValueClosed{EndValueClosed: []byte("a")}}}}, `values(["a","a"])`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_TimestampRangeFilter{TimestampRangeFilter: &btpb.TimestampRange{StartTimestampMicros: 1000, EndTimestampMicros: 5000}}}, "ts(1000,5000)", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_TimestampRangeFilter{TimestampRangeFilter: &btpb.TimestampRange{StartTimestampMicros: 5000, EndTimestampMicros: 1000}}}, "ts(5000,1000)", false},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_CellsPerRowOffsetFilter{CellsPerRowOffsetFilter: 2}}, "row_offset(2)", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_CellsPerRowLimitFilter{CellsPerRowLimitFilter: 3}}, "row_limit(3)", true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_CellsPerRowLimitFilter{CellsPerRowLimitFilter: 0}}, "row_limit(0)", false},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_CellsPerColumnLimitFilter{CellsPerColumnLimitFilter: 1}}, "col_limit(1)", true},
		{plabel("ok-1"), `label("ok-1")`, true},
		{plabel("Bad"), `label("Bad")`, false},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ValueBitmaskFilter{ValueBitmaskFilter: &btpb.ValueBitmask{Mask: []byte{0x0f}}}}, `bitmask("\x0f")`, true},
		{&btpb.RowFilter{Filter: &btpb.RowFilter_ValueBitmaskFilter{ValueBitmaskFilter: &btpb.ValueBitmask{}}}, `bitmask("")`, false},
	} {
		got, err := translateFilter(tc.in)
		if err != nil {
			t.Errorf("%v: %v", tc.in, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("%v: got %s, want %s", tc.in, got, tc.want)
		}
		if err := got.Validate(); (err == nil) != tc.valid || (err != nil && !errors.Is(err, model.ErrInvalidArgument)) {
			t.Errorf("%s: validation %v, want valid=%v", got, err, tc.valid)
		} else if err != nil && status.Code(toStatus(err)) != codes.InvalidArgument {
			t.Errorf("%s: %v maps to %s", got, err, status.Code(toStatus(err)))
		}
	}
	if f, err := translateFilter(nil); f != nil || err != nil {
		t.Errorf("no filter: %v %v", f, err)
	}
	// What the tree cannot carry is refused here.
	huge := &btpb.RowFilter{Filter: &btpb.RowFilter_ValueRegexFilter{ValueRegexFilter: make([]byte, MaxFilterBytes)}}
	if _, err := translateFilter(huge); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a filter over %d bytes: %v", MaxFilterBytes, err)
	}
	deep := pfamily("x")
	for range maxFilterNesting + 1 {
		deep = pchain(deep, pfamily("y"))
	}
	if _, err := translateFilter(deep); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a filter nested %d deep: %v", maxFilterNesting+1, err)
	}
}

func TestTimestampRules(t *testing.T) {
	set := func(ts int64) *btpb.Mutation {
		return &btpb.Mutation{Mutation: &btpb.Mutation_SetCell_{SetCell: &btpb.Mutation_SetCell{FamilyName: "cf", ColumnQualifier: []byte("q"), TimestampMicros: ts}}}
	}
	delCol := func(start, end int64) *btpb.Mutation {
		return &btpb.Mutation{Mutation: &btpb.Mutation_DeleteFromColumn_{DeleteFromColumn: &btpb.Mutation_DeleteFromColumn{FamilyName: "cf",
			ColumnQualifier: []byte("q"), TimeRange: &btpb.TimestampRange{StartTimestampMicros: start, EndTimestampMicros: end}}}}
	}
	for _, tc := range []struct {
		m    *btpb.Mutation
		want string // the model mutation, or the error code
	}{
		{set(-1), "set cf:q@-1"}, // the tablet assigns it
		{set(0), "set cf:q@0"},
		{set(1000), "set cf:q@1000"},
		{set(1001), "InvalidArgument"},
		{set(999), "InvalidArgument"},
		{set(-2), "InvalidArgument"},
		{set(-1000), "InvalidArgument"},
		{set(9223372036854775000), "set cf:q@9223372036854775000"}, // the largest aligned timestamp
		{delCol(0, 0), "delete-column cf:q [0,0)"},
		{delCol(1000, 3000), "delete-column cf:q [1000,3000)"},
		{delCol(2000, 0), "delete-column cf:q [2000,0)"},
		{delCol(1500, 3000), "InvalidArgument"},
		{delCol(1000, 2500), "InvalidArgument"},
		{delCol(3000, 3000), "InvalidArgument"},
		{delCol(3000, 1000), "InvalidArgument"},
		{delCol(-1000, 0), "InvalidArgument"},
		{&btpb.Mutation{Mutation: &btpb.Mutation_DeleteFromFamily_{DeleteFromFamily: &btpb.Mutation_DeleteFromFamily{FamilyName: "cf"}}}, "delete-family cf:@0"},
		{&btpb.Mutation{Mutation: &btpb.Mutation_DeleteFromRow_{DeleteFromRow: &btpb.Mutation_DeleteFromRow{}}}, "delete-row :@0"},
		{&btpb.Mutation{Mutation: &btpb.Mutation_AddToCell_{AddToCell: &btpb.Mutation_AddToCell{FamilyName: "cf"}}}, "InvalidArgument"},
		{&btpb.Mutation{Mutation: &btpb.Mutation_MergeToCell_{MergeToCell: &btpb.Mutation_MergeToCell{FamilyName: "cf"}}}, "InvalidArgument"},
		{&btpb.Mutation{}, "InvalidArgument"},
	} {
		ms, err := translateMutations([]*btpb.Mutation{tc.m})
		got := ""
		if err != nil {
			got = status.Code(err).String()
		} else {
			m := ms[0]
			got = fmt.Sprintf("%s %s:%s@%d", m.Kind, m.Family, m.Qualifier, m.Timestamp)
			if m.Kind == model.KindDeleteColumn {
				got = fmt.Sprintf("%s %s:%s [%d,%d)", m.Kind, m.Family, m.Qualifier, m.Range.Start, m.Range.End)
			}
		}
		if got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.m, got, tc.want)
		}
	}
	if _, err := translateMutations(nil); status.Code(err) != codes.InvalidArgument {
		t.Errorf("no mutations: %v", err)
	}
	if _, err := translateMutations(make([]*btpb.Mutation, MaxMutations+1)); status.Code(err) != codes.InvalidArgument {
		t.Errorf("too many mutations: %v", err)
	}
	if ms, err := translateBranch(nil); ms != nil || err != nil {
		t.Errorf("an empty branch: %v %v", ms, err)
	}
	for key, code := range map[string]codes.Code{"": codes.InvalidArgument, "k": codes.OK,
		strings.Repeat("k", model.MaxRowKeyLen): codes.OK, strings.Repeat("k", model.MaxRowKeyLen+1): codes.InvalidArgument} {
		if got := status.Code(checkRowKey([]byte(key))); got != code {
			t.Errorf("row key of %d bytes: %s, want %s", len(key), got, code)
		}
	}
}

// TestErrorCodes maps what kv/client and the Admin answer to the codes
// the service uses.
func TestErrorCodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{status.Error(codes.NotFound, `table "t" not found`), codes.NotFound},
		{status.Error(codes.InvalidArgument, "bad regex"), codes.InvalidArgument},
		{status.Error(codes.FailedPrecondition, "increment of a 4-byte cell"), codes.FailedPrecondition},
		{status.Error(codes.FailedPrecondition, "not serving: tablet moved"), codes.Unavailable},
		{fmt.Errorf("lookup: %w", status.Error(codes.ResourceExhausted, "disk full")), codes.ResourceExhausted},
		{fmt.Errorf("%w (last: %v)", ctx.Err(), status.Error(codes.Unavailable, "x")), codes.Canceled},
		{fmt.Errorf("%w (last: %v)", context.DeadlineExceeded, status.Error(codes.Unavailable, "x")), codes.DeadlineExceeded},
		{fmt.Errorf("%w: table exists", model.ErrFailedPrecondition), codes.FailedPrecondition},
		{fmt.Errorf("%w: table missing", model.ErrNotFound), codes.NotFound},
		{fmt.Errorf("%w: bad schema", model.ErrInvalidArgument), codes.InvalidArgument},
		{fmt.Errorf("%w: find the master", model.ErrUnavailable), codes.Unavailable},
		{model.ErrNotServing, codes.Unavailable},
		{model.ErrClosed, codes.Unavailable},
		{model.ErrResourceExhausted, codes.ResourceExhausted},
		{model.Corruptf("f.sst", 10, "bad block"), codes.DataLoss},
		{errors.New("unclassified"), codes.Internal},
	} {
		got := toStatus(tc.err)
		if status.Code(got) != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, status.Code(got), tc.want)
		}
		if tc.err != nil && !strings.Contains(status.Convert(got).Message(), strings.TrimPrefix(status.Convert(tc.err).Message(), "not serving: ")) {
			t.Errorf("%v: the message %q is lost", tc.err, status.Convert(got).Message())
		}
	}
}

func TestRowSpans(t *testing.T) {
	closed := func(s, e string) *btpb.RowRange {
		return &btpb.RowRange{StartKey: &btpb.RowRange_StartKeyClosed{StartKeyClosed: []byte(s)}, EndKey: &btpb.RowRange_EndKeyClosed{EndKeyClosed: []byte(e)}}
	}
	open := func(s, e string) *btpb.RowRange {
		return &btpb.RowRange{StartKey: &btpb.RowRange_StartKeyOpen{StartKeyOpen: []byte(s)}, EndKey: &btpb.RowRange_EndKeyOpen{EndKeyOpen: []byte(e)}}
	}
	render := func(spans []span) string {
		var parts []string
		for _, s := range spans {
			end := "inf"
			if s.end != nil {
				end = fmt.Sprintf("%q", s.end)
			}
			p := fmt.Sprintf("[%q,%s)", s.start, end)
			if s.point {
				p = fmt.Sprintf("{%q}", s.start)
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, " ")
	}
	for _, tc := range []struct {
		set  *btpb.RowSet
		want string // or an error code
	}{
		{nil, `["",inf)`},
		{&btpb.RowSet{}, `["",inf)`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{{}}}, `["",inf)`},
		{&btpb.RowSet{RowKeys: [][]byte{[]byte("b"), []byte("a"), []byte("b")}}, `{"a"} {"b"}`},
		{&btpb.RowSet{RowKeys: [][]byte{[]byte("a"), []byte("a\x00")}}, `["a","a\x00\x00")`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{closed("b", "d")}}, `["b","d\x00")`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{open("b", "d")}}, `["b\x00","d")`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{open("b", "b")}}, ``},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{open("b", "b\x00")}}, ``},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{closed("b", "b")}}, `["b","b\x00")`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{open("x", "z"), closed("a", "c")}, RowKeys: [][]byte{[]byte("b"), []byte("y"), []byte("q")}},
			`["a","c\x00") {"q"} ["x\x00","z")`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{closed("a", "c"), closed("c", "e")}}, `["a","e\x00")`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{{StartKey: &btpb.RowRange_StartKeyClosed{StartKeyClosed: []byte("m")}}, closed("a", "b")}}, `["a","b\x00") ["m",inf)`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{{EndKey: &btpb.RowRange_EndKeyOpen{EndKeyOpen: []byte("m")}}}}, `["","m")`},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{closed("d", "b")}}, "InvalidArgument"},
		{&btpb.RowSet{RowKeys: [][]byte{{}}}, "InvalidArgument"},
		{&btpb.RowSet{RowKeys: [][]byte{make([]byte, model.MaxRowKeyLen+1)}}, "InvalidArgument"},
		{&btpb.RowSet{RowRanges: []*btpb.RowRange{closed("a", string(make([]byte, model.MaxRowKeyLen+1)))}}, "InvalidArgument"},
	} {
		spans, err := rowSpans(tc.set)
		got := render(spans)
		if err != nil {
			got = status.Code(err).String()
		}
		if got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.set, got, tc.want)
		}
	}
	for p, want := range map[string]string{"a": "b", "a\xff": "b", "\xff\xff": "", "ab\xff": "ac"} {
		if got := prefixEnd([]byte(p)); string(got) != want || (want == "" && got != nil) {
			t.Errorf("prefixEnd(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestSamplesIn(t *testing.T) {
	all := []client.SampleRowKey{{Key: []byte("g"), OffsetBytes: 100}, {Key: []byte("p"), OffsetBytes: 250}, {Key: nil, OffsetBytes: 400}}
	render := func(ss []client.SampleRowKey) string {
		var parts []string
		for _, s := range ss {
			parts = append(parts, fmt.Sprintf("%q@%d", s.Key, s.OffsetBytes))
		}
		return strings.Join(parts, " ")
	}
	rng := func(start, end string, endClosed bool) *btpb.RowRange {
		r := &btpb.RowRange{}
		if start != "" {
			r.StartKey = &btpb.RowRange_StartKeyClosed{StartKeyClosed: []byte(start)}
		}
		if end != "" {
			r.EndKey = &btpb.RowRange_EndKeyOpen{EndKeyOpen: []byte(end)}
			if endClosed {
				r.EndKey = &btpb.RowRange_EndKeyClosed{EndKeyClosed: []byte(end)}
			}
		}
		return r
	}
	for _, tc := range []struct {
		r    *btpb.RowRange
		want string
	}{
		{nil, `"g"@100 "p"@250 ""@400`},
		{rng("", "", false), `"g"@100 "p"@250 ""@400`},
		{rng("h", "", false), `"p"@150 ""@300`},
		{rng("g", "", false), `"p"@150 ""@300`},
		{rng("a", "k", false), `"g"@100 "k"@250`},
		{rng("h", "k", false), `"k"@150`},
		{rng("a", "p", false), `"g"@100 "p"@250`},
		{rng("a", "p", true), `"g"@100 "p"@250`},
		{rng("q", "z", false), `"z"@150`},
	} {
		var s span
		var end []byte
		if tc.r != nil {
			var ok bool
			var err error
			if s, ok, err = rangeSpan(tc.r); err != nil || !ok {
				t.Fatalf("%v: %v %v", tc.r, ok, err)
			}
			end = rangeEndKey(tc.r)
		}
		if got := render(samplesIn(all, s, end)); got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.r, got, tc.want)
		}
	}
}

func TestGCRules(t *testing.T) {
	ver := func(n int32) *adminpb.GcRule {
		return &adminpb.GcRule{Rule: &adminpb.GcRule_MaxNumVersions{MaxNumVersions: n}}
	}
	age := func(d time.Duration) *adminpb.GcRule {
		return &adminpb.GcRule{Rule: &adminpb.GcRule_MaxAge{MaxAge: durationpb.New(d)}}
	}
	union := func(rs ...*adminpb.GcRule) *adminpb.GcRule {
		return &adminpb.GcRule{Rule: &adminpb.GcRule_Union_{Union: &adminpb.GcRule_Union{Rules: rs}}}
	}
	inter := func(rs ...*adminpb.GcRule) *adminpb.GcRule {
		return &adminpb.GcRule{Rule: &adminpb.GcRule_Intersection_{Intersection: &adminpb.GcRule_Intersection{Rules: rs}}}
	}
	for _, tc := range []struct {
		in    *adminpb.GcRule
		want  string
		valid bool
	}{
		{nil, "none", true},
		{&adminpb.GcRule{}, "none", true},
		{ver(3), "maxversions=3", true},
		{ver(0), "maxversions=0", false},
		{age(36 * time.Hour), "maxage=36h0m0s", true},
		{age(time.Microsecond), "maxage=1µs", false},
		{union(ver(2), age(time.Hour)), "(maxversions=2 || maxage=1h0m0s)", true},
		{inter(ver(1), union(age(time.Hour), ver(5))), "(maxversions=1 && (maxage=1h0m0s || maxversions=5))", true},
		{union(), "()", false},
	} {
		got, err := gcRuleFromProto(tc.in, 0)
		if err != nil {
			t.Errorf("%v: %v", tc.in, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("%v: got %s, want %s", tc.in, got, tc.want)
		}
		if err := got.Validate(); (err == nil) != tc.valid {
			t.Errorf("%s: validation %v, want valid=%v", got, err, tc.valid)
		}
		if tc.valid {
			back, err := gcRuleFromProto(gcRuleProto(got), 0)
			if err != nil || back.String() != got.String() {
				t.Errorf("%s: round trip %s %v", got, back, err)
			}
		}
	}
	if _, err := gcRuleFromProto(&adminpb.GcRule{Rule: &adminpb.GcRule_MaxAge{MaxAge: &durationpb.Duration{Seconds: 1, Nanos: -5}}}, 0); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a malformed duration: %v", err)
	}
	deep := ver(1)
	for range maxGCNesting + 1 {
		deep = union(deep)
	}
	if _, err := gcRuleFromProto(deep, 0); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a rule nested %d deep: %v", maxGCNesting+1, err)
	}
}

func TestOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "Rows is required") || !strings.Contains(err.Error(), "Admin is required") {
		t.Errorf("no Rows and no Admin: %v", err)
	}
	var rows Rows = (*client.Client)(nil) // kv/client's client is the Rows
	if err := (Options{Rows: rows, Admin: fakeAdmin{}, DropBatch: -1}).Validate(); err == nil {
		t.Error("a negative batch passes")
	}
	s, err := New(Options{Rows: rows, Admin: fakeAdmin{}})
	if err != nil {
		t.Fatal(err)
	}
	if o := s.data.opts; o.MaxResponseBytes != 1<<20 || o.MaxChunkValue != 1<<20 || o.DropBatch != 500 {
		t.Errorf("defaults: %+v", o)
	}
}

type fakeAdmin struct{}

func (fakeAdmin) Tables(context.Context) (map[string]model.Schema, error) { return nil, nil }
func (fakeAdmin) CreateTable(context.Context, string, model.Schema, [][]byte) error {
	return nil
}
func (fakeAdmin) DeleteTable(context.Context, string) error                               { return nil }
func (fakeAdmin) UpdateSchema(context.Context, string, *model.Schema, model.Schema) error { return nil }
