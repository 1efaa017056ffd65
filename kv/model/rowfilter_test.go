package model

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestRowFilterDataDriven runs testdata/rowfilter. Commands:
//
//	row                  sets the row: an optional line key=K, then one
//	                     cell a line as family:qualifier@ts=value (K,
//	                     qualifier and value take Go escapes such as \xff;
//	                     write @ in a qualifier as \x40)
//	filter [draws=(..)]  compiles the filter in the input (the notation of
//	                     RowFilter.String) and prints the row's output, one
//	                     cell a line with its labels, "(no row)" when empty,
//	                     or the compile error. draws are what row_sample
//	                     filters draw, in turn (default: none, so samples
//	                     pass nothing).
//	families all=(..)    prints Families(all) and BlocksAll for the filter
func TestRowFilterDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/rowfilter", func(t *testing.T, path string) {
		var key []byte
		var cells []Cell
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "row":
				key, cells = nil, nil
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if k, ok := strings.CutPrefix(line, "key="); ok {
						key = []byte(unescapeTest(t, k))
						continue
					}
					cells = append(cells, parseTestCell(t, line))
				}
				return ""
			case "filter":
				f, c, err := compileTestFilter(t, d.Input)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				var sample func() float64
				if d.HasArg("draws") {
					var draws []float64
					for _, a := range d.CmdArgs {
						if a.Key != "draws" {
							continue
						}
						for _, v := range a.Vals {
							x, err := strconv.ParseFloat(v, 64)
							if err != nil {
								t.Fatal(err)
							}
							draws = append(draws, x)
						}
					}
					i := 0
					sample = func() float64 { x := draws[i%len(draws)]; i++; return x }
				}
				out := c.NewEvaluator(sample).Eval(key, cells)
				if c.BlocksAll() && len(out) > 0 {
					t.Fatalf("%s: BlocksAll but output %v", f, out)
				}
				return formatCells(out)
			case "families":
				var all []string
				for _, a := range d.CmdArgs {
					if a.Key == "all" {
						all = append(all, a.Vals...)
					}
				}
				_, c, err := compileTestFilter(t, d.Input)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				fams := strings.Join(c.Families(all), " ")
				if fams == "" {
					fams = "(none)"
				}
				return fmt.Sprintf("families: %s\nblocks all: %v\n", fams, c.BlocksAll())
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// compileTestFilter parses and compiles a filter, checking on the way that
// its String form reads back the same and that a compile error wraps
// ErrInvalidArgument.
func compileTestFilter(t *testing.T, text string) (RowFilter, *CompiledRowFilter, error) {
	t.Helper()
	f, err := parseRowFilter(text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	s := f.String()
	g, err := parseRowFilter(s)
	if err != nil || g.String() != s {
		t.Fatalf("String %q does not read back: %v %q", s, err, g.String())
	}
	c, err := CompileRowFilter(&f)
	if err != nil && !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%s: error %v does not wrap ErrInvalidArgument", s, err)
	}
	return f, c, err
}

func unescapeTest(t testing.TB, s string) string {
	u, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`)
	if err != nil {
		t.Fatalf("unescape %q: %v", s, err)
	}
	return u
}

func parseTestCell(t *testing.T, line string) Cell {
	fam, rest, ok1 := strings.Cut(line, ":")
	qual, rest, ok2 := strings.Cut(rest, "@")
	ts, val, ok3 := strings.Cut(rest, "=")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !ok1 || !ok2 || !ok3 || err != nil {
		t.Fatalf("bad cell %q", line)
	}
	return Cell{Family: fam, Qualifier: []byte(unescapeTest(t, qual)), Timestamp: n, Value: []byte(unescapeTest(t, val))}
}

func escapeBytes(b []byte) string {
	q := strconv.Quote(string(b))
	return q[1 : len(q)-1]
}

func formatCells(cells []LabeledCell) string {
	if len(cells) == 0 {
		return "(no row)\n"
	}
	var b strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&b, "%s:%s@%d=%s", c.Family, escapeBytes(c.Qualifier), c.Timestamp, escapeBytes(c.Value))
		if len(c.Labels) > 0 {
			fmt.Fprintf(&b, " %v", c.Labels)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// parseRowFilter reads the notation of RowFilter.String. Strings may also
// be raw, in backquotes.
func parseRowFilter(s string) (RowFilter, error) {
	p := &rfParser{s: s}
	f, err := p.filter()
	if err == nil {
		if p.skip(); p.pos != len(p.s) {
			err = p.errorf("trailing text")
		}
	}
	return f, err
}

type rfParser struct {
	s   string
	pos int
}

func (p *rfParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at %d of %q: %s", p.pos, p.s, fmt.Sprintf(format, args...))
}

func (p *rfParser) skip() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *rfParser) peek() byte {
	if p.skip(); p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *rfParser) expect(c byte) error {
	if p.peek() != c {
		return p.errorf("want %q", c)
	}
	p.pos++
	return nil
}

func (p *rfParser) word() string {
	p.skip()
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] >= 'a' && p.s[p.pos] <= 'z' || p.s[p.pos] == '_' ||
		p.s[p.pos] >= '0' && p.s[p.pos] <= '9' || strings.IndexByte("+-.", p.s[p.pos]) >= 0) {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *rfParser) str() ([]byte, error) {
	p.skip()
	if p.pos >= len(p.s) {
		return nil, p.errorf("want a string")
	}
	quote := p.s[p.pos]
	if quote != '"' && quote != '`' {
		return nil, p.errorf("want a string")
	}
	end := p.pos + 1
	for end < len(p.s) && p.s[end] != quote {
		if p.s[end] == '\\' && quote == '"' {
			end++
		}
		end++
	}
	if end >= len(p.s) {
		return nil, p.errorf("unterminated string")
	}
	u, err := strconv.Unquote(p.s[p.pos : end+1])
	if err != nil {
		return nil, p.errorf("%v", err)
	}
	p.pos = end + 1
	return []byte(u), nil
}

func (p *rfParser) int() (int64, error) {
	w := p.word()
	n, err := strconv.ParseInt(w, 10, 64)
	if err != nil {
		return 0, p.errorf("%v", err)
	}
	return n, nil
}

// interval reads [a,b], (a,b), [*,b) and the like.
func (p *rfParser) interval() (start, end Bound, err error) {
	bound := func(kind BoundKind) (Bound, error) {
		if p.peek() == '*' {
			p.pos++
			return Bound{}, nil
		}
		v, err := p.str()
		return Bound{Kind: kind, Value: v}, err
	}
	kind := BoundClosed
	switch p.peek() {
	case '(':
		kind = BoundOpen
	case '[':
	default:
		return start, end, p.errorf("want [ or (")
	}
	p.pos++
	if start, err = bound(kind); err != nil {
		return
	}
	if err = p.expect(','); err != nil {
		return
	}
	unbounded := p.peek() == '*'
	var ev []byte
	if unbounded {
		p.pos++
	} else if ev, err = p.str(); err != nil {
		return
	}
	switch p.peek() {
	case ')':
		kind = BoundOpen
	case ']':
		kind = BoundClosed
	default:
		return start, end, p.errorf("want ] or )")
	}
	p.pos++
	if !unbounded {
		end = Bound{Kind: kind, Value: ev}
	}
	return start, end, nil
}

func (p *rfParser) filter() (f RowFilter, err error) {
	name := p.word()
	flags := map[string]RowFilterKind{"pass": RowFilterPassAll, "block": RowFilterBlockAll, "sink": RowFilterSink, "strip": RowFilterStripValue}
	if k, ok := flags[name]; ok {
		f.Kind = k
		if p.peek() == '(' {
			p.pos++
			if w := p.word(); w != "false" {
				return f, p.errorf("want false, have %q", w)
			}
			f.FlagFalse = true
			err = p.expect(')')
		}
		return f, err
	}
	if err := p.expect('('); err != nil {
		return f, err
	}
	switch name {
	case "chain", "interleave":
		f.Kind = RowFilterChain
		if name == "interleave" {
			f.Kind = RowFilterInterleave
		}
		for p.peek() != ')' {
			if len(f.Filters) > 0 {
				if err := p.expect(','); err != nil {
					return f, err
				}
			}
			sub, err := p.filter()
			if err != nil {
				return f, err
			}
			f.Filters = append(f.Filters, sub)
		}
	case "cond":
		f.Kind = RowFilterCondition
		for i, dst := range []**RowFilter{&f.Predicate, &f.True, &f.False} {
			if i > 0 {
				if err := p.expect(','); err != nil {
					return f, err
				}
			}
			if p.peek() == '-' {
				p.pos++
				continue
			}
			sub, err := p.filter()
			if err != nil {
				return f, err
			}
			*dst = &sub
		}
	case "key", "family", "qual", "value", "bitmask", "label":
		f.Kind = map[string]RowFilterKind{"key": RowFilterRowKeyRegex, "family": RowFilterFamilyRegex,
			"qual": RowFilterQualifierRegex, "value": RowFilterValueRegex, "bitmask": RowFilterValueBitmask,
			"label": RowFilterApplyLabel}[name]
		s, err := p.str()
		if err != nil {
			return f, err
		}
		switch name {
		case "bitmask":
			f.Mask = s
		case "label":
			f.Label = string(s)
		default:
			f.Regex = s
		}
	case "sample":
		f.Kind = RowFilterRowSample
		w := p.word()
		if f.Probability, err = strconv.ParseFloat(w, 64); err != nil {
			return f, p.errorf("%v", err)
		}
	case "cols":
		f.Kind = RowFilterColumnRange
		fam, err := p.str()
		if err != nil {
			return f, err
		}
		f.Family = string(fam)
		if err := p.expect(','); err != nil {
			return f, err
		}
		if f.Start, f.End, err = p.interval(); err != nil {
			return f, err
		}
	case "values":
		f.Kind = RowFilterValueRange
		if f.Start, f.End, err = p.interval(); err != nil {
			return f, err
		}
	case "ts":
		f.Kind = RowFilterTimestampRange
		if f.Time.Start, err = p.int(); err != nil {
			return f, err
		}
		if err := p.expect(','); err != nil {
			return f, err
		}
		if f.Time.End, err = p.int(); err != nil {
			return f, err
		}
	case "row_offset", "row_limit", "col_limit":
		f.Kind = map[string]RowFilterKind{"row_offset": RowFilterCellsPerRowOffset,
			"row_limit": RowFilterCellsPerRowLimit, "col_limit": RowFilterCellsPerColumnLimit}[name]
		n, err := p.int()
		if err != nil {
			return f, err
		}
		f.N = int32(n)
	default:
		return f, p.errorf("unknown filter %q", name)
	}
	return f, p.expect(')')
}

// refEval is an independent, simple and slow evaluator of the service's
// semantics, for the randomized test: it works on cells rather than
// positions, re-sorts with a comparator instead of merging positions, and
// compiles its regexes without cellar's translation (the patterns it meets
// are ASCII without \C, and it decodes the text as Latin-1 by itself).
type refEval struct {
	key    []byte
	sample func() float64
	sunk   []LabeledCell
}

func refCompare(a, b LabeledCell) int {
	if c := strings.Compare(a.Family, b.Family); c != 0 {
		return c
	}
	if c := bytes.Compare(a.Qualifier, b.Qualifier); c != 0 {
		return c
	}
	switch {
	case a.Timestamp > b.Timestamp:
		return -1
	case a.Timestamp < b.Timestamp:
		return 1
	}
	return 0
}

func refMatch(pattern, text []byte) bool {
	runes := make([]rune, len(text))
	for i, c := range text {
		runes[i] = rune(c)
	}
	return regexp.MustCompile(`^(?:` + string(pattern) + `)$`).MatchString(string(runes))
}

func refIn(b []byte, s, e Bound) bool {
	lo, hi := bytes.Compare(b, s.Value), bytes.Compare(b, e.Value)
	return (s.Kind == BoundUnbounded || s.Kind == BoundClosed && lo >= 0 || s.Kind == BoundOpen && lo > 0) &&
		(e.Kind == BoundUnbounded || e.Kind == BoundClosed && hi <= 0 || e.Kind == BoundOpen && hi < 0)
}

func (r *refEval) run(f *RowFilter, in []LabeledCell) []LabeledCell {
	if len(in) == 0 {
		return nil
	}
	keep := func(pred func(c LabeledCell) bool) []LabeledCell {
		var out []LabeledCell
		for _, c := range in {
			if pred(c) {
				out = append(out, c)
			}
		}
		return out
	}
	switch f.Kind {
	case RowFilterPassAll:
		return in
	case RowFilterBlockAll:
		return nil
	case RowFilterSink:
		r.sunk = append(r.sunk, in...)
		return nil
	case RowFilterChain:
		for i := range f.Filters {
			in = r.run(&f.Filters[i], in)
		}
		return in
	case RowFilterInterleave:
		var out []LabeledCell
		for i := range f.Filters {
			out = append(out, r.run(&f.Filters[i], in)...)
		}
		slices.SortStableFunc(out, refCompare)
		return out
	case RowFilterCondition:
		pred := &RowFilter{}
		if f.Predicate != nil {
			pred = f.Predicate
		}
		branch := f.False
		if len(r.run(pred, in)) > 0 {
			branch = f.True
		}
		if branch == nil {
			return nil
		}
		return r.run(branch, in)
	case RowFilterRowKeyRegex:
		if refMatch(f.Regex, r.key) {
			return in
		}
		return nil
	case RowFilterRowSample:
		if r.sample != nil && r.sample() < f.Probability {
			return in
		}
		return nil
	case RowFilterFamilyRegex:
		return keep(func(c LabeledCell) bool { return refMatch(f.Regex, []byte(c.Family)) })
	case RowFilterQualifierRegex:
		return keep(func(c LabeledCell) bool { return refMatch(f.Regex, c.Qualifier) })
	case RowFilterValueRegex:
		return keep(func(c LabeledCell) bool { return refMatch(f.Regex, c.Value) })
	case RowFilterColumnRange:
		return keep(func(c LabeledCell) bool { return c.Family == f.Family && refIn(c.Qualifier, f.Start, f.End) })
	case RowFilterValueRange:
		return keep(func(c LabeledCell) bool { return refIn(c.Value, f.Start, f.End) })
	case RowFilterTimestampRange:
		return keep(func(c LabeledCell) bool {
			return c.Timestamp >= f.Time.Start && (f.Time.End == 0 || c.Timestamp < f.Time.End)
		})
	case RowFilterValueBitmask:
		return keep(func(c LabeledCell) bool {
			if len(c.Value) != len(f.Mask) {
				return false
			}
			for i := range c.Value {
				if c.Value[i]&f.Mask[i] != f.Mask[i] {
					return false
				}
			}
			return true
		})
	case RowFilterCellsPerRowOffset:
		return in[min(int(f.N), len(in)):]
	case RowFilterCellsPerRowLimit:
		return in[:min(int(f.N), len(in))]
	case RowFilterCellsPerColumnLimit:
		var out []LabeledCell
		n := 0
		for i, c := range in {
			if i > 0 && (c.Family != in[i-1].Family || !bytes.Equal(c.Qualifier, in[i-1].Qualifier)) {
				n = 0
			}
			if n++; n <= int(f.N) {
				out = append(out, c)
			}
		}
		return out
	case RowFilterStripValue, RowFilterApplyLabel:
		out := make([]LabeledCell, len(in))
		for i, c := range in {
			if f.Kind == RowFilterStripValue {
				c.Value = nil
			} else {
				c.Labels = []string{f.Label}
			}
			out[i] = c
		}
		return out
	}
	panic("unknown kind")
}

func refFilter(f *RowFilter, key []byte, cells []Cell, sample func() float64) []LabeledCell {
	r := &refEval{key: key, sample: sample}
	in := make([]LabeledCell, len(cells))
	for i, c := range cells {
		in[i] = LabeledCell{Cell: c}
	}
	out := r.run(f, in)
	all := append(r.sunk, out...)
	slices.SortStableFunc(all, refCompare)
	return all
}

func sameCells(a, b []LabeledCell) bool {
	return slices.EqualFunc(a, b, func(x, y LabeledCell) bool {
		return x.Family == y.Family && bytes.Equal(x.Qualifier, y.Qualifier) && x.Timestamp == y.Timestamp &&
			bytes.Equal(x.Value, y.Value) && slices.Equal(x.Labels, y.Labels)
	})
}

// randRow returns a row with unique (family, qualifier, timestamp) cells in
// the canonical order, bytes outside ASCII included.
func randRow(r *rand.Rand) ([]byte, []Cell) {
	keys := []string{"r", "row1", "\xffk", "k\n", ""}
	fams := []string{"a", "b", "c"}
	quals := []string{"", "x", "xy", "y", "\xe9", "\n"}
	vals := []string{"", "v", "vw", "w", "\x00", "\xe9\xff", "\x0f\xf0"}
	var cells []Cell
	for _, f := range fams {
		if r.IntN(3) == 0 {
			continue
		}
		for _, q := range quals {
			if r.IntN(2) == 0 {
				continue
			}
			for ts := int64(6); ts >= 0; ts-- {
				if r.IntN(3) == 0 {
					cells = append(cells, Cell{Family: f, Qualifier: []byte(q), Timestamp: ts * 1000, Value: []byte(vals[r.IntN(len(vals))])})
				}
			}
		}
	}
	slices.SortFunc(cells, func(a, b Cell) int { return refCompare(LabeledCell{Cell: a}, LabeledCell{Cell: b}) })
	return []byte(keys[r.IntN(len(keys))]), cells
}

// randFilter returns a random filter tree; it may be invalid.
func randFilter(r *rand.Rand, depth int, sinks bool) RowFilter {
	regexes := []string{"", ".*", "a", "b|c", "x.*", ".", "..", "[^x]*", `\xe9`, `\xff.*`, "(?s).*", "[a-c]+", "r.*", "(?i)X|Y"}
	vals := []string{"", "v", "vw", "w", "\x00", "\xe9"}
	bound := func() Bound {
		return Bound{Kind: BoundKind(r.IntN(3)), Value: []byte(vals[r.IntN(len(vals))])}
	}
	kinds := int(numRowFilterKinds)
	if depth >= 4 {
		kinds = int(RowFilterRowKeyRegex) // leaves only, and the flags
	}
	for {
		f := RowFilter{Kind: RowFilterKind(r.IntN(kinds))}
		if depth < 3 && r.IntN(2) == 0 {
			// Mostly combinators near the root, for interesting trees.
			f.Kind = []RowFilterKind{RowFilterChain, RowFilterInterleave, RowFilterCondition}[r.IntN(3)]
		} else if sinks && r.IntN(6) == 0 {
			f.Kind = RowFilterSink
		}
		switch f.Kind {
		case RowFilterChain, RowFilterInterleave:
			if depth >= 4 {
				continue
			}
			for range 2 + r.IntN(2) {
				f.Filters = append(f.Filters, randFilter(r, depth+1, sinks))
			}
		case RowFilterCondition:
			if depth >= 4 {
				continue
			}
			for _, dst := range []**RowFilter{&f.Predicate, &f.True, &f.False} {
				if r.IntN(5) > 0 {
					sub := randFilter(r, depth+1, false)
					*dst = &sub
				}
			}
		case RowFilterSink:
			if !sinks {
				continue
			}
		case RowFilterRowKeyRegex, RowFilterFamilyRegex, RowFilterQualifierRegex, RowFilterValueRegex:
			f.Regex = []byte(regexes[r.IntN(len(regexes))])
		case RowFilterRowSample:
			f.Probability = []float64{0.25, 0.5, 0.75}[r.IntN(3)]
		case RowFilterColumnRange:
			f.Family = []string{"a", "b", "c"}[r.IntN(3)]
			f.Start, f.End = bound(), bound()
		case RowFilterValueRange:
			f.Start, f.End = bound(), bound()
		case RowFilterTimestampRange:
			f.Time = TimeRange{Start: int64(r.IntN(4)) * 1000, End: int64(r.IntN(8)) * 1000}
		case RowFilterValueBitmask:
			f.Mask = []byte([]string{"\x00", "\x0f", "v", "\x00\x00"}[r.IntN(4)])
		case RowFilterCellsPerRowOffset, RowFilterCellsPerRowLimit, RowFilterCellsPerColumnLimit:
			f.N = int32(r.IntN(5))
		case RowFilterApplyLabel:
			f.Label = []string{"l1", "l2", "x-y"}[r.IntN(3)]
		}
		return f
	}
}

func hasKind(f *RowFilter, k RowFilterKind) bool {
	if f == nil {
		return false
	}
	if f.Kind == k {
		return true
	}
	for i := range f.Filters {
		if hasKind(&f.Filters[i], k) {
			return true
		}
	}
	return hasKind(f.Predicate, k) || hasKind(f.True, k) || hasKind(f.False, k)
}

// seeded returns a sampler that replays the same numbers for each call of
// the returned function's maker.
func seeded(seed uint64) func() func() float64 {
	return func() func() float64 { return rand.New(rand.NewPCG(seed, 7)).Float64 }
}

func TestRowFilterRandomized(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pass, block := RowFilter{}, RowFilter{Kind: RowFilterBlockAll}
	iters, valid := 3000, 0
	if testing.Short() {
		iters = 300
	}
	for i := range iters {
		f := randFilter(r, 0, r.IntN(2) == 0)
		c, err := CompileRowFilter(&f)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%s: %v", f, err)
			}
			continue
		}
		valid++
		sampler := seeded(uint64(i))
		ev := c.NewEvaluator(nil)
		eval := func(g *RowFilter, key []byte, cells []Cell) []LabeledCell {
			t.Helper()
			cg, err := CompileRowFilter(g)
			if err != nil {
				t.Fatalf("%s: %v", g, err)
			}
			return slices.Clone(cg.NewEvaluator(sampler()).Eval(key, cells))
		}
		sinks := hasKind(&f, RowFilterSink)
		for range 4 {
			key, cells := randRow(r)
			ev.sample = sampler()
			got := slices.Clone(ev.Eval(key, cells))
			want := refFilter(&f, key, cells, sampler())
			if !sameCells(got, want) {
				t.Fatalf("%s on %q %v:\n got %s\nwant %s", f, key, cells, formatCells(got), formatCells(want))
			}
			// Every output cell is an input cell, in the canonical order.
			for j, c := range got {
				if j > 0 && refCompare(got[j-1], c) > 0 {
					t.Fatalf("%s: output out of order: %s", f, formatCells(got))
				}
				k := slices.IndexFunc(cells, func(in Cell) bool {
					return in.Family == c.Family && bytes.Equal(in.Qualifier, c.Qualifier) && in.Timestamp == c.Timestamp
				})
				if k < 0 || c.Value != nil && !bytes.Equal(c.Value, cells[k].Value) {
					t.Fatalf("%s: output cell %v is not from the input", f, c)
				}
			}
			if c.BlocksAll() && len(got) > 0 {
				t.Fatalf("%s: BlocksAll, yet output %s", f, formatCells(got))
			}
			// Algebra: pass all is a unit of chain, block all one of
			// interleave; block all after f keeps only what f sinks.
			for _, g := range []RowFilter{
				{Kind: RowFilterChain, Filters: []RowFilter{f, pass}},
				{Kind: RowFilterChain, Filters: []RowFilter{pass, f}},
				{Kind: RowFilterInterleave, Filters: []RowFilter{f, block}},
				{Kind: RowFilterInterleave, Filters: []RowFilter{block, f}},
			} {
				if other := eval(&g, key, cells); !sameCells(other, got) {
					t.Fatalf("%s differs from %s:\n%s\n%s", g, f, formatCells(other), formatCells(got))
				}
			}
			blocked := eval(&RowFilter{Kind: RowFilterChain, Filters: []RowFilter{f, block}}, key, cells)
			if !sinks && len(blocked) > 0 || len(blocked) > len(got) {
				t.Fatalf("chain(%s, block) output %s", f, formatCells(blocked))
			}
			n := int32(1 + r.IntN(3))
			limited := eval(&RowFilter{Kind: RowFilterChain, Filters: []RowFilter{f, {Kind: RowFilterCellsPerRowLimit, N: n}}}, key, cells)
			if !sinks && len(limited) > int(n) {
				t.Fatalf("chain(%s, row_limit(%d)) output %d cells", f, n, len(limited))
			}
			perCol := eval(&RowFilter{Kind: RowFilterChain, Filters: []RowFilter{f, {Kind: RowFilterCellsPerColumnLimit, N: n}}}, key, cells)
			if !sinks {
				for j := int(n); j < len(perCol); j++ {
					if perCol[j].Family == perCol[j-int(n)].Family && bytes.Equal(perCol[j].Qualifier, perCol[j-int(n)].Qualifier) {
						t.Fatalf("chain(%s, col_limit(%d)) output %s", f, n, formatCells(perCol))
					}
				}
			}
			// Reading only Families(all) changes nothing (with a sampler
			// that does not care how often it is asked).
			half := func() float64 { return 0.5 }
			all := []string{"a", "b", "c"}
			need := c.Families(all)
			var narrowed []Cell
			for _, cell := range cells {
				if slices.Contains(need, cell.Family) {
					narrowed = append(narrowed, cell)
				}
			}
			full := slices.Clone(c.NewEvaluator(half).Eval(key, cells))
			if part := c.NewEvaluator(half).Eval(key, narrowed); !sameCells(full, part) {
				t.Fatalf("%s with only families %v:\n got %s\nwant %s", f, need, formatCells(part), formatCells(full))
			}
		}
	}
	if valid < iters/5 {
		t.Fatalf("only %d of %d random filters were valid", valid, iters)
	}
}

// TestRowFilterSimpleKinds checks pass and block alone on random rows.
func TestRowFilterSimpleKinds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pass, _ := CompileRowFilter(&RowFilter{})
	none, _ := CompileRowFilter(nil)
	block, _ := CompileRowFilter(&RowFilter{Kind: RowFilterBlockAll})
	for range 200 {
		key, cells := randRow(r)
		want := make([]LabeledCell, len(cells))
		for i, c := range cells {
			want[i] = LabeledCell{Cell: c}
		}
		if got := pass.NewEvaluator(nil).Eval(key, cells); !sameCells(got, want) {
			t.Fatalf("pass_all changed the row: %s", formatCells(got))
		}
		if got := none.NewEvaluator(nil).Eval(key, cells); !sameCells(got, want) {
			t.Fatalf("no filter changed the row: %s", formatCells(got))
		}
		if got := block.NewEvaluator(nil).Eval(key, cells); len(got) != 0 {
			t.Fatalf("block_all passed %s", formatCells(got))
		}
	}
	if !block.BlocksAll() || pass.BlocksAll() {
		t.Fatal("BlocksAll")
	}
}

// TestRowFilterRegexLatin1 pins down the byte-mode regex translation.
func TestRowFilterRegexLatin1(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          bool
	}{
		{`\C`, "\xff", true},
		{`\C`, "\n", true},
		{`.`, "\n", false},
		{`.`, "\xff", true},
		{`..`, "é", true}, // é in UTF-8 is two bytes, so two characters
		{`.`, "é", false},
		{"é", "é", true}, // a non-ASCII byte of the pattern stands for itself
		{"[é]", "\xc3", true},
		{"[é]{2}", "é", true},
		{`\xff`, "\xff", true},
		{`\xff`, "ÿ", false},
		{`\x{e9}`, "\xe9", true},
		{`a\Cb`, "a\nb", true},
		{`\C*`, "\x00\xff\n", true},
		{`\\C`, `\C`, true},
		{`[\\]C`, `\C`, true},
		{`\QC\C\E\C`, `C\Cx`, true},
		{`\Qa)|(b`, "a)|(b", true}, // an unclosed \Q quotes to the end
		{`[]]\C`, "]\n", true},
		{`[^]]\C`, "a\n", true},
		{`[[:alpha:]]\C`, "a\xff", true},
		{"(?i)\xc9", "\xe9", true}, // É and é in Latin-1
		{"(?i)É", "é", false},      // in UTF-8 their second bytes differ
		{`a|b`, "ab", false},       // a full match, not a search
		{`abc`, "abc", true},
		{`abc`, "abcd", false},
		{``, "", true},
		{``, "x", false},
		{`(abc)`, "abc", true},
		{`\x{100}`, "\xc4\x80", false},
		{`\pL`, "\xe9", true}, // é as a Latin-1 character
	} {
		re, err := compileByteRegexp([]byte(c.pattern))
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		var scratch []byte
		if got := re.match([]byte(c.text), &scratch); got != c.want {
			t.Errorf("%q on %q: %v, want %v", c.pattern, c.text, got, c.want)
		}
		if got := re.matchString(c.text, &scratch); got != c.want {
			t.Errorf("%q on string %q: %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
	for _, bad := range []string{`a)|(b`, `(`, `\`, `[\C]`, `x{1001}`, `\8`, `[z-a]`, `(?P<n>a)(?P<n>b)`} {
		if _, err := compileByteRegexp([]byte(bad)); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

// TestRowFilterNoAllocs checks that a scan's per-row evaluation allocates
// nothing once the evaluator's buffers have grown.
func TestRowFilterNoAllocs(t *testing.T) {
	if bi, ok := debug.ReadBuildInfo(); ok && slices.Contains(bi.Settings, debug.BuildSetting{Key: "-race", Value: "true"}) {
		t.Skip("the race detector makes sync.Pool, which regexp uses, drop items")
	}
	key, cells := benchRow()
	for _, text := range []string{
		`chain(family("cf1"),qual("q.*"),col_limit(1))`,
		`interleave(chain(family("cf1"),label("one")),chain(cols("cf2",["a","z"]),strip,label("two")),row_limit(3))`,
		`chain(cond(value("v1.*"),pass,block),interleave(sink,chain(row_offset(2),sink)),pass)`,
		`chain(value("\xff*"),key("r.*"))`,
	} {
		f, err := parseRowFilter(text)
		if err != nil {
			t.Fatal(err)
		}
		c, err := CompileRowFilter(&f)
		if err != nil {
			t.Fatal(err)
		}
		ev := c.NewEvaluator(nil)
		if n := testing.AllocsPerRun(100, func() { ev.Eval(key, cells) }); n != 0 {
			t.Errorf("%s: %v allocations per row", text, n)
		}
	}
}

func benchRow() ([]byte, []Cell) {
	var cells []Cell
	for _, c := range []struct {
		fam, qual string
		ts        int64
	}{
		{"cf1", "a", 3}, {"cf1", "q1", 3}, {"cf1", "q1", 2}, {"cf1", "q1", 1}, {"cf1", "q2", 5},
		{"cf1", "q2", 4}, {"cf2", "b", 9}, {"cf2", "q1", 3}, {"cf2", "q1", 2}, {"cf2", "z\xff", 1},
	} {
		cells = append(cells, Cell{Family: c.fam, Qualifier: []byte(c.qual), Timestamp: c.ts * 1000,
			Value: []byte(fmt.Sprintf("v%d-%s", c.ts, c.qual))})
	}
	return []byte("row-0001"), cells
}

// BenchmarkRowFilter evaluates a typical filter, the newest version of the
// q* columns of one family, over a row of ten cells.
func BenchmarkRowFilter(b *testing.B) {
	key, cells := benchRow()
	f := RowFilter{Kind: RowFilterChain, Filters: []RowFilter{
		{Kind: RowFilterFamilyRegex, Regex: []byte("cf1")},
		{Kind: RowFilterQualifierRegex, Regex: []byte("q.*")},
		{Kind: RowFilterCellsPerColumnLimit, N: 1},
	}}
	c, err := CompileRowFilter(&f)
	if err != nil {
		b.Fatal(err)
	}
	ev := c.NewEvaluator(nil)
	if got := len(ev.Eval(key, cells)); got != 2 {
		b.Fatalf("%d cells, want 2", got)
	}
	b.ReportAllocs()
	for b.Loop() {
		ev.Eval(key, cells)
	}
}

// fuzzBytes hands out the fuzzer's bytes, then zeros.
type fuzzBytes struct {
	b []byte
}

func (f *fuzzBytes) next() byte {
	if len(f.b) == 0 {
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c
}

func (f *fuzzBytes) bytes() []byte {
	n := int(f.next() % 8)
	n = min(n, len(f.b))
	out := f.b[:n]
	f.b = f.b[n:]
	return out
}

func (f *fuzzBytes) filter(depth int) RowFilter {
	k := f.next()
	out := RowFilter{Kind: RowFilterKind(k % (uint8(numRowFilterKinds) + 1)), FlagFalse: k&0x80 != 0 && k&0x40 != 0}
	switch out.Kind {
	case RowFilterChain, RowFilterInterleave:
		if depth > 25 {
			return out
		}
		for range f.next() % 4 {
			out.Filters = append(out.Filters, f.filter(depth+1))
		}
	case RowFilterCondition:
		if depth > 25 {
			return out
		}
		for _, dst := range []**RowFilter{&out.Predicate, &out.True, &out.False} {
			if f.next()%4 > 0 {
				sub := f.filter(depth + 1)
				*dst = &sub
			}
		}
	case RowFilterRowSample:
		out.Probability = float64(int8(f.next())) / 100
	case RowFilterColumnRange, RowFilterValueRange:
		out.Family = string(f.bytes())
		out.Start = Bound{Kind: BoundKind(f.next() % 4), Value: f.bytes()}
		out.End = Bound{Kind: BoundKind(f.next() % 4), Value: f.bytes()}
	case RowFilterTimestampRange:
		out.Time = TimeRange{Start: int64(int8(f.next())), End: int64(int8(f.next()))}
	case RowFilterCellsPerRowOffset, RowFilterCellsPerRowLimit, RowFilterCellsPerColumnLimit:
		out.N = int32(int8(f.next()))
	case RowFilterApplyLabel:
		out.Label = string(f.bytes())
	case RowFilterValueBitmask:
		out.Mask = f.bytes()
	default:
		out.Regex = f.bytes()
	}
	return out
}

func FuzzRowFilter(f *testing.F) {
	f.Add([]byte{2, 2, 8, 1, 'a', 17, 3}, []byte("a\x00x\x00v\x00a\x00y\x00w"))
	f.Add([]byte{3, 3, 5, 0, 19, 2, 'l', '1', 12, 2, '.', '*'}, []byte("b\x00\xff\x00\n"))
	f.Add([]byte{4, 1, 9, 2, '\\', 'C', 1, 16, 1}, []byte("c\x00q\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, tree, row []byte) {
		fb := &fuzzBytes{b: tree}
		rf := fb.filter(0)
		c, err := CompileRowFilter(&rf)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%s: %v", rf, err)
			}
			return
		}
		// The row: family, qualifier, value triples split at zero bytes,
		// sorted into the canonical order with timestamps from the index.
		parts := bytes.Split(row, []byte{0})
		var cells []Cell
		for i := 0; i+2 < len(parts) && len(cells) < 64; i += 3 {
			cells = append(cells, Cell{Family: string(parts[i]), Qualifier: parts[i+1], Timestamp: int64(i), Value: parts[i+2]})
		}
		slices.SortStableFunc(cells, func(a, b Cell) int { return refCompare(LabeledCell{Cell: a}, LabeledCell{Cell: b}) })
		rnd := rand.New(rand.NewPCG(uint64(len(tree)), uint64(len(row))))
		out := c.NewEvaluator(rnd.Float64).Eval(row, cells)
		for j := 1; j < len(out); j++ {
			if refCompare(out[j-1], out[j]) > 0 {
				t.Fatalf("%s: output out of order: %s", rf, formatCells(out))
			}
		}
		if c.BlocksAll() && len(out) > 0 {
			t.Fatalf("%s: BlocksAll, yet output", rf)
		}
		c.Families([]string{"a", "b", "c", ""})
		_ = rf.String()
	})
}

// TestRowFilterValidation covers what the notation of the data-driven
// tests cannot write.
func TestRowFilterValidation(t *testing.T) {
	nest := func(levels int, kind RowFilterKind) RowFilter {
		f := RowFilter{Kind: RowFilterFamilyRegex, Regex: []byte("a")}
		for range levels {
			switch kind {
			case RowFilterCondition:
				sub := f
				f = RowFilter{Kind: kind, Predicate: &sub}
			default:
				f = RowFilter{Kind: kind, Filters: []RowFilter{f, {}}}
			}
		}
		return f
	}
	for _, kind := range []RowFilterKind{RowFilterChain, RowFilterInterleave, RowFilterCondition} {
		ok := nest(MaxRowFilterDepth, kind)
		if err := ok.Validate(); err != nil {
			t.Errorf("%s nested %d deep: %v", kind, MaxRowFilterDepth, err)
		}
		deep := nest(MaxRowFilterDepth+1, kind)
		if err := deep.Validate(); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "deeper than 20") {
			t.Errorf("%s nested %d deep: %v", kind, MaxRowFilterDepth+1, err)
		}
	}
	// A cycle, which only Go code can build, stops at the depth limit.
	cyc := RowFilter{Kind: RowFilterCondition}
	cyc.Predicate = &cyc
	if err := cyc.Validate(); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("cycle: %v", err)
	}
	for _, f := range []RowFilter{
		{Kind: numRowFilterKinds},
		{Kind: 200},
		{Kind: RowFilterValueRange, Start: Bound{Kind: 3}},
		{Kind: RowFilterColumnRange, Family: "a", End: Bound{Kind: 9, Value: []byte("x")}},
		{Kind: RowFilterRowSample, Probability: math.NaN()},
		{Kind: RowFilterRowSample, Probability: math.Inf(1)},
		{Kind: RowFilterCellsPerRowLimit, N: math.MinInt32},
		{Kind: RowFilterApplyLabel, Label: "é"},
		{Kind: RowFilterQualifierRegex, Regex: []byte(`(?P<n>a)(?P<n>b)`)},
		{Kind: RowFilterInterleave, Filters: []RowFilter{{}, {Kind: RowFilterStripValue, FlagFalse: true}}},
	} {
		if err := f.Validate(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v", f, err)
		}
	}
	// FlagFalse means nothing to the kinds without a flag.
	if err := (&RowFilter{Kind: RowFilterApplyLabel, Label: "x", FlagFalse: true}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (*RowFilter)(nil).Validate(); err != nil {
		t.Errorf("nil filter: %v", err)
	}
	if got := (*CompiledRowFilter)(nil).Families([]string{"a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("nil filter families %v", got)
	}
	if (*CompiledRowFilter)(nil).BlocksAll() {
		t.Error("nil filter blocks all")
	}
	if got := (*CompiledRowFilter)(nil).NewEvaluator(nil).Eval(nil, []Cell{{Family: "a"}}); len(got) != 1 {
		t.Errorf("nil filter output %v", got)
	}
	if got := RowFilterKind(99).String(); got != "row_filter_kind(99)" {
		t.Error(got)
	}
}

// TestRowFilterEvaluatorReuse evaluates rows of different sizes through
// one evaluator, so that stale buffer contents would show.
func TestRowFilterEvaluatorReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	f, err := parseRowFilter(`interleave(chain(family("a|b"), col_limit(2), label("x")), chain(sink, row_offset(2)), cond(qual("x"), strip, block))`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompileRowFilter(&f)
	if err != nil {
		t.Fatal(err)
	}
	ev := c.NewEvaluator(nil)
	for range 300 {
		key, cells := randRow(r)
		got := ev.Eval(key, cells)
		if want := refFilter(&f, key, cells, nil); !sameCells(got, want) {
			t.Fatalf("on %v:\n got %s\nwant %s", cells, formatCells(got), formatCells(want))
		}
	}
}
