package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Summary is what a run prints at its end, pass or fail.
type Summary struct {
	Seed uint64
	// Start is when the load began; Duration how long it ran.
	Start    time.Time
	Duration time.Duration
	Counts   map[string]Counts
	Faults   []Fault
	// Linearizable is porcupine's verdict on the register history of
	// RegisterOps operations over RegisterRows rows; HTML names the
	// drawing of a failing path.
	Linearizable porcupine.CheckResult
	RegisterOps  int
	RegisterRows int
	HTML         string
	Set          SetResult
	Counters     []CounterResult
	// Tablets is the number of tablets the coverage check saw; Coverage
	// is its error, if any.
	Tablets  int
	Coverage error
	// Intervals is the number of tablet serving intervals read from the
	// tablet servers' logs; Overlaps are pairs of them on different
	// servers that overlap in keys and time; IntervalsErr says why they
	// could not be read.
	Intervals    int
	Overlaps     []Overlap
	IntervalsErr error
	// Exits are the processes' exits that no nemesis caused.
	Exits []Exit
}

// LostWrites counts acknowledged writes missing at the end: set keys,
// and counter increments below the acknowledged number.
func (s Summary) LostWrites() int {
	n := len(s.Set.Lost)
	for _, c := range s.Counters {
		if c.Final < c.Acked {
			n += int(c.Acked - c.Final)
		}
	}
	return n
}

// LongestWindow is the longest unavailability over all faults.
func (s Summary) LongestWindow() (Fault, bool) {
	var best Fault
	found := false
	for _, f := range s.Faults {
		if !found || f.Window > best.Window {
			best, found = f, true
		}
	}
	return best, found
}

func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos summary (seed %d, replay with CELLAR_CHAOS_SEED=%d; %v of load)\n", s.Seed, s.Seed, s.Duration.Round(time.Second))
	var total Counts
	for _, c := range s.Counts {
		total.Attempted += c.Attempted
		total.Acked += c.Acked
		total.Failed += c.Failed
		total.Unknown += c.Unknown
	}
	fmt.Fprintf(&b, "operations: attempted %d, acknowledged %d, failed %d, unknown %d (%.0f/s)\n", total.Attempted, total.Acked,
		total.Failed, total.Unknown, float64(total.Attempted)/max(s.Duration.Seconds(), 1))
	b.WriteString(describeCounts(s.Counts))
	byKind := map[Kind]int{}
	for _, f := range s.Faults {
		byKind[f.Kind]++
	}
	var kinds []string
	for k, v := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "faults injected: %d (%s)\n", len(s.Faults), strings.Join(kinds, ", "))
	for i, f := range s.Faults {
		fmt.Fprintf(&b, "  %2d %-29s %-22s at %7.1fs  back %6.2fs after the heal  unavailable %6.2fs (%s)%s\n", i+1, f.Kind, f.Target,
			f.Injected.Sub(s.Start).Seconds(), f.Recovered.Sub(f.Healed).Seconds(), f.Window.Seconds(), f.Stream, noteOf(f.Note))
	}
	verdict := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable", porcupine.Illegal: "NOT LINEARIZABLE", porcupine.Unknown: "unknown (the checker timed out)"}[s.Linearizable]
	fmt.Fprintf(&b, "register: %s (%d operations over %d rows)", verdict, s.RegisterOps, s.RegisterRows)
	if s.HTML != "" {
		fmt.Fprintf(&b, "; failing path drawn in %s", s.HTML)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "set: %d acknowledged, %d attempted, %d present; lost %d, never written but present %d\n",
		s.Set.Acked, s.Set.Attempted, s.Set.Present, len(s.Set.Lost), len(s.Set.Phantom))
	for _, c := range s.Counters {
		fmt.Fprintf(&b, "counter %s: final %d (Bigtable API %d), acknowledged %d, unknown %d: in range %v\n", c.Row, c.Final,
			c.ReadThroughBigtableAPI, c.Acked, c.Unknown, c.OK)
	}
	fmt.Fprintf(&b, "acknowledged writes lost: %d\n", s.LostWrites())
	if f, ok := s.LongestWindow(); ok {
		fmt.Fprintf(&b, "longest unavailability: %v (%s on %s, stream %s)\n", f.Window.Round(time.Millisecond), f.Kind, f.Target, f.Stream)
	}
	fmt.Fprintf(&b, "unexpected process exits: %d\n", len(s.Exits))
	for _, e := range s.Exits {
		fmt.Fprintf(&b, "  %s at %7.1fs (%s): %s\n", e.Proc, e.At.Sub(s.Start).Seconds(), e.Err, e.Last)
	}
	if s.Coverage != nil {
		fmt.Fprintf(&b, "tablet coverage: FAILED: %v\n", s.Coverage)
	} else {
		fmt.Fprintf(&b, "tablet coverage: %d tablets cover their tables without gaps or overlaps\n", s.Tablets)
	}
	switch {
	case s.IntervalsErr != nil:
		fmt.Fprintf(&b, "serving intervals: FAILED to read them: %v\n", s.IntervalsErr)
	case len(s.Overlaps) > 0:
		fmt.Fprintf(&b, "serving intervals: %d from the tablet servers' logs; %d OVERLAP on different servers:\n", s.Intervals, len(s.Overlaps))
		for _, o := range s.Overlaps {
			fmt.Fprintf(&b, "  %v\n", o)
		}
	default:
		fmt.Fprintf(&b, "serving intervals: %d from the tablet servers' logs; none overlaps another server's\n", s.Intervals)
	}
	return b.String()
}
