package chaos

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Outcome is what a client knows of an operation after it returned.
type Outcome int

const (
	// OK: the operation took effect (a refused compare-and-swap or a
	// duplicate insert is OK too: the server answered, and the answer
	// says what happened).
	OK Outcome = iota
	// Failed: the operation certainly did not take effect.
	Failed
	// Unknown: it may or may not have taken effect, now or later (a
	// deadline, a lost connection, an error after the request was sent).
	Unknown
)

// RegisterInput is one register operation: a read, a blind write of
// Value, or a compare-and-swap from Expected to Value ("" is the empty
// register: the row has no cell).
type RegisterInput struct {
	Op       string // read, write, cas
	Value    string
	Expected string
	Door     string // bigtable or sql, for the visualisation
}

// RegisterOutput is what the operation returned.
type RegisterOutput struct {
	Value   string // read
	Swapped bool   // cas
	Unknown bool
}

// RegisterModel is a register per row: porcupine checks each row's
// history on its own (Metadata holds the row). An operation whose outcome
// is unknown may take effect at any time after its call, or never.
func RegisterModel() porcupine.NondeterministicModel {
	return porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			byRow := map[string][]porcupine.Operation{}
			var rows []string
			for _, op := range h {
				row := op.Metadata.(string)
				if _, ok := byRow[row]; !ok {
					rows = append(rows, row)
				}
				byRow[row] = append(byRow[row], op)
			}
			out := make([][]porcupine.Operation, 0, len(rows))
			for _, row := range rows {
				out = append(out, byRow[row])
			}
			return out
		},
		Init: func() []any { return []any{""} },
		Step: func(state, input, output any) []any {
			s, in, out := state.(string), input.(RegisterInput), output.(RegisterOutput)
			switch {
			case out.Unknown && in.Op == "read":
				return []any{s}
			case out.Unknown && in.Op == "cas" && in.Expected != s:
				return []any{s}
			case out.Unknown:
				return []any{s, in.Value}
			case in.Op == "read" && out.Value == s:
				return []any{s}
			case in.Op == "write":
				return []any{in.Value}
			case in.Op == "cas" && out.Swapped && in.Expected == s:
				return []any{in.Value}
			case in.Op == "cas" && !out.Swapped && in.Expected != s:
				return []any{s}
			}
			return nil
		},
		Equal: func(a, b any) bool { return a.(string) == b.(string) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(RegisterInput), output.(RegisterOutput)
			switch {
			case out.Unknown:
				return fmt.Sprintf("%s %s(%q→%q) unknown", in.Door, in.Op, in.Expected, in.Value)
			case in.Op == "read":
				return fmt.Sprintf("%s read → %q", in.Door, out.Value)
			case in.Op == "write":
				return fmt.Sprintf("%s write %q", in.Door, in.Value)
			}
			return fmt.Sprintf("%s cas(%q→%q) swapped=%v", in.Door, in.Expected, in.Value, out.Swapped)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("%q", state) },
	}
}

// Counts are one workload stream's operations.
type Counts struct {
	Attempted, Acked, Failed, Unknown int
}

// Recorder collects the clients' histories: the register operations for
// porcupine, per-stream counts, and when each stream was served, for the
// unavailability windows. It is safe for concurrent use.
type Recorder struct {
	start time.Time

	mu       sync.Mutex
	register []porcupine.Operation
	counts   map[string]*Counts
	// served holds, per stream, the [call, return] offsets of the
	// operations the cluster answered (OK outcomes), in return order.
	served map[string][][2]time.Duration
}

// NewRecorder starts a history at the current time.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now(), counts: map[string]*Counts{}, served: map[string][][2]time.Duration{}}
}

// Since is the offset of t in the history.
func (r *Recorder) Since(t time.Time) time.Duration { return t.Sub(r.start) }

// Op records one operation of a stream that was called at call and has
// just returned with outcome o.
func (r *Recorder) Op(stream string, call time.Time, o Outcome) {
	ret := time.Since(r.start)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.counts[stream]
	if c == nil {
		c = &Counts{}
		r.counts[stream] = c
	}
	c.Attempted++
	switch o {
	case OK:
		c.Acked++
		r.served[stream] = append(r.served[stream], [2]time.Duration{call.Sub(r.start), ret})
	case Failed:
		c.Failed++
	case Unknown:
		c.Unknown++
	}
}

// Register records a register operation of a client on row.
func (r *Recorder) Register(client int, row string, call time.Time, in RegisterInput, out RegisterOutput) {
	ret := time.Since(r.start).Nanoseconds()
	if out.Unknown {
		// It may take effect at any later time.
		ret = 1 << 62
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.register = append(r.register, porcupine.Operation{ClientId: client, Input: in, Output: out,
		Call: call.Sub(r.start).Nanoseconds(), Return: ret, Metadata: row})
}

// Counts returns a copy of the per-stream counts.
func (r *Recorder) Counts() map[string]Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]Counts{}
	for k, v := range r.counts {
		out[k] = *v
	}
	return out
}

// Seen returns the names of the streams seen, sorted.
func (r *Recorder) Seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.counts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ServedSince reports whether stream had an operation answered that was
// called at or after t.
func (r *Recorder) ServedSince(stream string, t time.Time) bool {
	off := t.Sub(r.start)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.served[stream]
	for i := len(s) - 1; i >= 0; i-- {
		if s[i][0] >= off {
			return true
		}
		if s[i][1] < off {
			break
		}
	}
	return false
}

// LongestGap is the longest time in [from, to] during which stream had no
// operation answered: the gaps between answers, from from to the first
// and from the last to to. It returns the stream's gap and its start.
func (r *Recorder) LongestGap(stream string, from, to time.Time) (gap time.Duration, at time.Time) {
	lo, hi := from.Sub(r.start), to.Sub(r.start)
	r.mu.Lock()
	var rets []time.Duration
	for _, s := range r.served[stream] {
		if s[1] >= lo && s[1] <= hi {
			rets = append(rets, s[1])
		}
	}
	r.mu.Unlock()
	slices.Sort(rets)
	prev := lo
	for _, ret := range append(rets, hi) {
		if ret-prev > gap {
			gap, at = ret-prev, r.start.Add(prev)
		}
		prev = ret
	}
	return gap, at
}

// CheckRegister checks the register history with porcupine. On a
// violation it writes the visualisation of the failing path to html (if
// not nil).
func (r *Recorder) CheckRegister(timeout time.Duration, html io.Writer) (porcupine.CheckResult, int, error) {
	r.mu.Lock()
	h := append([]porcupine.Operation(nil), r.register...)
	r.mu.Unlock()
	nm := RegisterModel()
	model := nm.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, h, timeout)
	if res == porcupine.Illegal && html != nil {
		if err := porcupine.Visualize(model, info, html); err != nil {
			return res, len(h), fmt.Errorf("draw the failing history: %w", err)
		}
	}
	return res, len(h), nil
}

// RowsOf returns the rows the register history touched.
func (r *Recorder) RowsOf() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, op := range r.register {
		seen[op.Metadata.(string)] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describeCounts formats counts for the summary, one stream a line.
func describeCounts(counts map[string]Counts) string {
	var names []string
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		c := counts[n]
		fmt.Fprintf(&b, "  %-18s attempted %6d  acknowledged %6d  failed %5d  unknown %5d\n", n, c.Attempted, c.Acked, c.Failed, c.Unknown)
	}
	return b.String()
}
