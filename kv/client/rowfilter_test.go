package client_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
)

func qualRF(re string) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterQualifierRegex, Regex: []byte(re)}
}
func valueRF(re string) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterValueRegex, Regex: []byte(re)}
}
func labelRF(l string) model.RowFilter {
	return model.RowFilter{Kind: model.RowFilterApplyLabel, Label: l}
}
func chainRF(fs ...model.RowFilter) *model.RowFilter {
	return &model.RowFilter{Kind: model.RowFilterChain, Filters: fs}
}

// rowString renders a row as key{family:qualifier=value[label] ...}.
func rowString(r model.Row) string {
	var b strings.Builder
	b.WriteString(string(r.Key) + "{")
	for i, c := range r.Cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%s=%s", c.Family, c.Qualifier, c.Value)
		if r.Labels != nil && len(r.Labels[i]) > 0 {
			b.WriteString("[" + strings.Join(r.Labels[i], ",") + "]")
		}
	}
	b.WriteByte('}')
	return b.String()
}

func scanAll(t *testing.T, sc *client.Scanner) []string {
	t.Helper()
	var out []string
	for sc.Next() {
		out = append(out, rowString(sc.Row()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRowFilterAcrossTablets reads through row filters over t's three
// tablets: labels and stripped values come back in model.Row, and a
// scan's limit counts the rows the filter keeps.
func TestRowFilterAcrossTablets(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	var ms []*model.RowMutation
	for i := range 26 {
		m := set(string(rune('a'+i)), fmt.Sprint(i))
		m.Mutations = append(m.Mutations, model.SetCell("f", []byte("r"), model.ServerTimestamp, []byte("x")))
		ms = append(ms, m)
	}
	for i, err := range cl.c.ApplyBulk(c, "t", ms) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	// Rows whose f:q starts with 1 (b and k to t, on all three tablets):
	// f:q labelled, and f:r stripped.
	f := client.Filter{RowFilter: &model.RowFilter{Kind: model.RowFilterCondition,
		Predicate: chainRF(qualRF("q"), valueRF("1.*")),
		True: &model.RowFilter{Kind: model.RowFilterInterleave, Filters: []model.RowFilter{
			*chainRF(qualRF("q"), labelRF("one")),
			*chainRF(qualRF("r"), model.RowFilter{Kind: model.RowFilterStripValue}),
		}}}}
	var want []string
	for _, k := range "bklmnopqrst" {
		want = append(want, fmt.Sprintf("%c{f:q=%d[one] f:r=}", k, k-'a'))
	}
	if got := scanAll(t, cl.c.Scan(c, "t", model.RowRange{}, f, 0)); !slices.Equal(got, want) {
		t.Errorf("scan: %v\nwant %v", got, want)
	}
	if got := scanAll(t, cl.c.Scan(c, "t", model.RowRange{Start: []byte("c")}, f, 3)); !slices.Equal(got, want[1:4]) {
		t.Errorf("scan with a limit: %v", got)
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if got := scanAll(t, cl.c.ScanReversed(c, "t", model.RowRange{}, f, 0)); !slices.Equal(got, rev) {
		t.Errorf("reversed scan: %v\nwant %v", got, rev)
	}
	if got := scanAll(t, cl.c.ScanReversed(c, "t", model.RowRange{End: []byte("q")}, f, 4)); !slices.Equal(got, rev[4:8]) {
		t.Errorf("reversed scan with a limit: %v", got)
	}
	row, found, err := cl.c.ReadRow(c, "t", []byte("m"), f)
	if err != nil || !found || rowString(row) != want[3] {
		t.Errorf("ReadRow: %v %v %v", rowString(row), found, err)
	}
	if _, found, err := cl.c.ReadRow(c, "t", []byte("c"), f); err != nil || found {
		t.Errorf("ReadRow of a row the filter drops: %v %v", found, err)
	}
	// Without labels, Labels stays nil.
	row, found, err = cl.c.ReadRow(c, "t", []byte("x"), client.Filter{RowFilter: &model.RowFilter{Kind: model.RowFilterCellsPerRowLimit, N: 1}})
	if err != nil || !found || row.Labels != nil || rowString(row) != "x{f:q=23}" {
		t.Errorf("ReadRow without labels: %v %v %v (labels %v)", rowString(row), found, err, row.Labels)
	}

	// CheckAndMutate with a row filter as the predicate.
	for _, tc := range []struct {
		row  string
		want bool
	}{{"k", true}, {"c", false}, {"z", false}} {
		ok, err := cl.c.CheckAndMutate(c, "t", []byte(tc.row), client.Filter{RowFilter: chainRF(qualRF("q"), valueRF("1.*"))},
			[]model.Mutation{model.SetCell("f", []byte("hit"), model.ServerTimestamp, []byte("1"))},
			[]model.Mutation{model.SetCell("f", []byte("miss"), model.ServerTimestamp, []byte("1"))})
		if err != nil || ok != tc.want {
			t.Fatalf("CheckAndMutate(%s): %v %v, want %v", tc.row, ok, err, tc.want)
		}
		q := "miss"
		if tc.want {
			q = "hit"
		}
		if _, found, err := cl.c.ReadRow(c, "t", []byte(tc.row), client.Filter{QualifierRegex: q}); err != nil || !found {
			t.Fatalf("CheckAndMutate(%s) did not write f:%s: %v", tc.row, q, err)
		}
	}

	// A tree too deep to send fails before any RPC, as does a cyclic one;
	// an invalid one fails at the server.
	cyclic := &model.RowFilter{Kind: model.RowFilterCondition}
	cyclic.Predicate = cyclic
	cl.calls.Store(0)
	for _, bad := range []*model.RowFilter{cyclic, chainRF(qualRF("a"), *cyclic)} {
		bf := client.Filter{RowFilter: bad}
		if _, _, err := cl.c.ReadRow(c, "t", []byte("a"), bf); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "deeper") {
			t.Errorf("ReadRow through a cyclic filter: %v", err)
		}
		sc := cl.c.ScanReversed(c, "t", model.RowRange{}, bf, 0)
		if sc.Next() || status.Code(sc.Err()) != codes.InvalidArgument {
			t.Errorf("ScanReversed through a cyclic filter: %v", sc.Err())
		}
		if _, err := cl.c.CheckAndMutate(c, "t", []byte("a"), bf, nil, nil); status.Code(err) != codes.InvalidArgument {
			t.Errorf("CheckAndMutate through a cyclic filter: %v", err)
		}
	}
	if n := cl.calls.Load(); n != 0 {
		t.Errorf("%d RPCs for filters that cannot be sent", n)
	}
	sc := cl.c.Scan(c, "t", model.RowRange{}, client.Filter{RowFilter: chainRF(qualRF("a"))}, 0)
	if sc.Next() || status.Code(sc.Err()) != codes.InvalidArgument || !strings.Contains(sc.Err().Error(), "at least two") {
		t.Errorf("a chain of one: %v", sc.Err())
	}
	if _, err := cl.c.Aggregate(c, "t", []model.RowRange{model.RowRange{}}, client.Filter{RowFilter: chainRF(qualRF("a"), qualRF("b"))},
		client.AggregateSpec{Aggs: []client.AggSpec{{Func: client.AggCountRows}}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Aggregate with a row filter: %v", err)
	}
}

// TestRowFilterMatchesLocalEvaluation compares, for random data and
// random filters, what the servers return through a row filter with what
// evaluating the same filter here on the unfiltered rows gives: forward
// and reversed scans (with and without limits) across the three tablets,
// and point reads. Row samples are left out (the servers draw their own
// numbers).
func TestRowFilterMatchesLocalEvaluation(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	valid, nonEmpty := 0, 0
	schema := model.Schema{Families: []model.Family{{Name: "f"}, {Name: "g"}, {Name: "h"}}}
	for dataset := range 3 {
		cl := newClusterWith(t, schema)
		c := ctx(t)
		keys := randRows(t, r, cl)
		var base []model.Row
		sc := cl.c.Scan(c, "t", model.RowRange{}, client.Filter{}, 0)
		for sc.Next() {
			base = append(base, sc.Row())
		}
		if sc.Err() != nil {
			t.Fatal(sc.Err())
		}
		for i := 0; i < 150; i++ {
			rf := randRowFilter(r, 0, true)
			if hasSample(&rf) {
				i--
				continue
			}
			f := client.Filter{RowFilter: &rf}
			compiled, cerr := model.CompileRowFilter(&rf)
			if cerr != nil {
				sc := cl.c.Scan(c, "t", model.RowRange{}, f, 0)
				if sc.Next() || status.Code(sc.Err()) != codes.InvalidArgument {
					t.Fatalf("dataset %d: %v is invalid (%v), yet the scan says %v", dataset, rf, cerr, sc.Err())
				}
				continue
			}
			valid++
			ev := compiled.NewEvaluator(nil)
			var want []string
			wantByKey := map[string]string{}
			for _, row := range base {
				out := ev.Eval(row.Key, row.Cells)
				if len(out) == 0 {
					continue
				}
				lr := model.Row{Key: row.Key}
				for _, lc := range out {
					lr.Cells = append(lr.Cells, lc.Cell)
					lr.Labels = append(lr.Labels, lc.Labels)
				}
				s := rowString(lr)
				want = append(want, s)
				wantByKey[string(row.Key)] = s
			}
			if len(want) > 0 {
				nonEmpty++
			}
			limit := int64(0)
			if r.IntN(3) == 0 {
				limit = 1 + r.Int64N(4)
			}
			got := scanAll(t, cl.c.Scan(c, "t", model.RowRange{}, f, limit))
			if w := firstN(want, limit); !slices.Equal(got, w) {
				t.Fatalf("dataset %d, filter %v, limit %d:\n got %v\nwant %v", dataset, rf, limit, got, w)
			}
			rev := slices.Clone(want)
			slices.Reverse(rev)
			got = scanAll(t, cl.c.ScanReversed(c, "t", model.RowRange{}, f, limit))
			if w := firstN(rev, limit); !slices.Equal(got, w) {
				t.Fatalf("dataset %d, filter %v, reversed, limit %d:\n got %v\nwant %v", dataset, rf, limit, got, w)
			}
			key := keys[r.IntN(len(keys))]
			row, found, err := cl.c.ReadRow(c, "t", []byte(key), f)
			if err != nil || found != (wantByKey[key] != "") || (found && rowString(row) != wantByKey[key]) {
				t.Fatalf("dataset %d, filter %v, ReadRow(%q): %v %v %v, want %q", dataset, rf, key, rowString(row), found, err, wantByKey[key])
			}
		}
	}
	// The generator must make enough valid filters that pass something
	// for the comparison to mean much.
	t.Logf("%d valid filters of 450, %d with output", valid, nonEmpty)
	if valid < 150 || nonEmpty < 100 {
		t.Fatalf("only %d valid filters of 450, %d with output", valid, nonEmpty)
	}
}

func firstN(rows []string, n int64) []string {
	if n > 0 && int64(len(rows)) > n {
		return rows[:n]
	}
	return rows
}

// randRows writes random rows across t's tablets ("g" and "p" split
// them) and returns their keys.
func randRows(t *testing.T, r *rand.Rand, cl *cluster) []string {
	t.Helper()
	keys := []string{"", "a", "b\xff", "f\n", "g", "g\x00", "k", "ox", "p", "q", "zz", "\xff"}
	quals := []string{"", "x", "xy", "y", "\xe9", "\n"}
	vals := []string{"", "v", "vw", "w", "\x00", "\xe9\xff", "\x0f\xf0"}
	var ms []*model.RowMutation
	var used []string
	for _, k := range keys {
		if k == "" || r.IntN(4) == 0 {
			continue
		}
		m := &model.RowMutation{Row: []byte(k)}
		for _, fam := range []string{"f", "g", "h"} {
			for _, q := range quals {
				if r.IntN(3) > 0 {
					continue
				}
				for ts := int64(5); ts >= 1; ts-- {
					if r.IntN(2) == 0 {
						m.Mutations = append(m.Mutations, model.SetCell(fam, []byte(q), ts*1000, []byte(vals[r.IntN(len(vals))])))
					}
				}
			}
		}
		if len(m.Mutations) == 0 {
			m.Mutations = append(m.Mutations, model.SetCell("f", nil, 1000, []byte("v")))
		}
		ms = append(ms, m)
		used = append(used, k)
	}
	for i, err := range cl.c.ApplyBulk(context.Background(), "t", ms) {
		if err != nil {
			t.Fatalf("row %q: %v", ms[i].Row, err)
		}
	}
	return append(used, "missing")
}

// randRowFilter returns a random filter tree over families f, g and h;
// it may be invalid.
func randRowFilter(r *rand.Rand, depth int, sinks bool) model.RowFilter {
	regexes := []string{"", ".*", "f", "g|h", "x.*", ".", "..", "[^x]*", `\xe9`, `\xff.*`, "(?s).*", "[a-g]+", "v.*", "(?i)X|Y"}
	vals := []string{"", "v", "vw", "w", "\x00", "\xe9"}
	bound := func() model.Bound {
		return model.Bound{Kind: model.BoundKind(r.IntN(3)), Value: []byte(vals[r.IntN(len(vals))])}
	}
	kinds := int(model.RowFilterApplyLabel) + 1
	if depth >= 4 {
		kinds = int(model.RowFilterRowKeyRegex) // the flags only, as leaves
	}
	for {
		f := model.RowFilter{Kind: model.RowFilterKind(r.IntN(kinds))}
		if depth < 3 && r.IntN(2) == 0 {
			f.Kind = []model.RowFilterKind{model.RowFilterChain, model.RowFilterInterleave, model.RowFilterCondition}[r.IntN(3)]
		} else if sinks && r.IntN(6) == 0 {
			f.Kind = model.RowFilterSink
		}
		switch f.Kind {
		case model.RowFilterChain, model.RowFilterInterleave:
			if depth >= 4 {
				continue
			}
			for range 2 + r.IntN(2) {
				f.Filters = append(f.Filters, randRowFilter(r, depth+1, sinks))
			}
		case model.RowFilterCondition:
			if depth >= 4 {
				continue
			}
			for _, dst := range []**model.RowFilter{&f.Predicate, &f.True, &f.False} {
				if r.IntN(5) > 0 {
					sub := randRowFilter(r, depth+1, false)
					*dst = &sub
				}
			}
		case model.RowFilterSink:
			if !sinks {
				continue
			}
		case model.RowFilterRowKeyRegex, model.RowFilterFamilyRegex, model.RowFilterQualifierRegex, model.RowFilterValueRegex:
			f.Regex = []byte(regexes[r.IntN(len(regexes))])
		case model.RowFilterRowSample:
			f.Probability = 0.5
		case model.RowFilterColumnRange:
			f.Family = []string{"f", "g", "h"}[r.IntN(3)]
			f.Start, f.End = bound(), bound()
		case model.RowFilterValueRange:
			f.Start, f.End = bound(), bound()
		case model.RowFilterTimestampRange:
			f.Time = model.TimeRange{Start: int64(r.IntN(4)) * 1000, End: int64(r.IntN(7)) * 1000}
		case model.RowFilterValueBitmask:
			f.Mask = []byte([]string{"\x00", "\x0f", "v", "\x00\x00"}[r.IntN(4)])
		case model.RowFilterCellsPerRowOffset, model.RowFilterCellsPerRowLimit, model.RowFilterCellsPerColumnLimit:
			f.N = int32(r.IntN(5))
		case model.RowFilterApplyLabel:
			f.Label = []string{"l1", "l2", "x-y"}[r.IntN(3)]
		}
		return f
	}
}

func hasSample(f *model.RowFilter) bool {
	if f == nil {
		return false
	}
	if f.Kind == model.RowFilterRowSample {
		return true
	}
	for i := range f.Filters {
		if hasSample(&f.Filters[i]) {
			return true
		}
	}
	return hasSample(f.Predicate) || hasSample(f.True) || hasSample(f.False)
}

// TestSampleRowKeys samples t's three tablets: one sample per tablet, in
// key order, the last with an empty key, each offset the bytes of the
// tablets up to it, whichever servers hold them.
func TestSampleRowKeys(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	var ms []*model.RowMutation
	for i := range 26 {
		ms = append(ms, set(string(rune('a'+i)), strings.Repeat("v", 100*(i+1))))
	}
	for i, err := range cl.c.ApplyBulk(c, "t", ms) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if err := cl.a.store.FlushAll(c); err != nil {
		t.Fatal(err)
	}
	sizes := func(s *server) map[string]int64 { // by tablet end
		out := map[string]int64{}
		for _, tb := range s.store.Tablets() {
			if tb.Table() == "t" {
				out[string(tb.Range().End)] = int64(tb.Size())
			}
		}
		return out
	}
	check := func(what string, c *client.Client, g, p, end int64) {
		t.Helper()
		got, err := c.SampleRowKeys(ctx(t), "t")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want := []client.SampleRowKey{{Key: []byte("g"), OffsetBytes: g}, {Key: []byte("p"), OffsetBytes: g + p}, {OffsetBytes: g + p + end}}
		if len(got) != len(want) {
			t.Fatalf("%s: %d samples, want 3: %v", what, len(got), got)
		}
		for i := range want {
			if !bytes.Equal(got[i].Key, want[i].Key) || got[i].OffsetBytes != want[i].OffsetBytes {
				t.Fatalf("%s: sample %d is %q at %d, want %q at %d", what, i, got[i].Key, got[i].OffsetBytes, want[i].Key, want[i].OffsetBytes)
			}
		}
	}
	a := sizes(cl.a)
	if a["g"] == 0 || a["p"] == 0 || a[""] == 0 {
		t.Fatalf("the tablets' sizes: %v", a)
	}
	check("one server", cl.c, a["g"], a["p"], a[""])

	// The middle tablet moves to b, with other data: a new client finds
	// it there.
	for _, row := range []string{"h", "i", "j"} {
		if err := cl.b.store.Apply(c, "t", set(row, strings.Repeat("w", 5000))); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.b.store.FlushAll(c); err != nil {
		t.Fatal(err)
	}
	describe(t, cl.meta, model.TabletDescriptor{Table: "t", Start: []byte("g"), End: []byte("p"), Addr: cl.b.addr})
	b := sizes(cl.b)
	fresh := client.New(client.Options{Root: cl.root})
	defer fresh.Close()
	check("two servers", fresh, a["g"], b["p"], a[""])

	// The old client still locates the middle tablet at a; once a no
	// longer serves it, a's answer lacks it and the client looks again.
	for _, tb := range cl.a.store.Tablets() {
		if tb.Table() == "t" && string(tb.Range().End) == "p" {
			if _, err := cl.a.store.Unload(c, tb.ID()); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("a stale location", cl.c, a["g"], b["p"], a[""])

	if _, err := cl.c.SampleRowKeys(c, "nosuch"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("an unknown table: %v", err)
	}
}
