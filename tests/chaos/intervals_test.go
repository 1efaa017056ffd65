package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServingIntervals runs the interval check on synthetic logs: each
// case is the servers' log lines and the harness's facts, at seconds
// after t0, and the overlaps expected (as "a/b" pairs of process names,
// or none).
func TestServingIntervals(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	precise := func(sec float64) string { return at(sec).Format("2006-01-02T15:04:05.000000000Z07:00") }
	// line writes a log line as the tablet server does; sec is the
	// precise time, and the line's own time is 5 ms later.
	line := func(sec float64, msg, rng, table string) string {
		lt := at(sec + 0.005).Format("2006-01-02T15:04:05.000Z07:00")
		attr := "since"
		if msg == "unloaded tablet" || msg == "dropped table" {
			attr = "at"
		}
		s := fmt.Sprintf("time=%s level=INFO msg=%q server=S tablet=1", lt, msg)
		if rng != "" {
			s += " range=" + strconv.Quote(rng)
		}
		if table != "" {
			s += " table=" + table
		}
		return s + " " + attr + "=" + precise(sec)
	}
	load := func(sec float64, rng string) string { return line(sec, "loaded tablet", rng, "reg") }
	unload := func(sec float64, rng string) string { return line(sec, "unloaded tablet", rng, "reg") }
	lost := func(sec float64) string { return line(sec, "lost its lock; not serving", "", "") }
	relock := func(sec float64) string { return line(sec, "holds its lock again; serving", "", "") }
	start := func(name string) string { return harnessStart + name + " at whenever" }
	all := `["", +inf)`
	lower, upper := `["", "m")`, `["m", +inf)`
	type proc struct {
		name  string
		lines []string
		incs  []Incarnation
	}
	one := func(startSec, exitSec float64) []Incarnation {
		inc := Incarnation{Started: at(startSec)}
		if exitSec > 0 {
			inc.Exited = at(exitSec)
		}
		return []Incarnation{inc}
	}
	for _, tc := range []struct {
		name      string
		procs     []proc
		intervals int
		overlaps  []string
	}{
		{
			name: "a move: unloaded before loaded elsewhere",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all), unload(10, all)}, one(0, 0)},
				{"ts-2", []string{start("ts-2"), load(10.001, all)}, one(0, 0)},
			},
			intervals: 2,
		},
		{
			name: "loaded elsewhere before the unload",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all), unload(10, all)}, one(0, 0)},
				{"ts-2", []string{start("ts-2"), load(9.999, all)}, one(0, 0)},
			},
			intervals: 2,
			overlaps:  []string{"ts-1/ts-2"},
		},
		{
			name: "no slack: the precise times overlap by a microsecond within one millisecond",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all), unload(10.0005, all)}, one(0, 0)},
				{"ts-2", []string{start("ts-2"), load(10.000499, all)}, one(0, 0)},
			},
			intervals: 2,
			overlaps:  []string{"ts-1/ts-2"},
		},
		{
			name: "disjoint ranges of one table may serve at once",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, lower)}, one(0, 0)},
				{"ts-2", []string{start("ts-2"), load(1, upper)}, one(0, 0)},
			},
			intervals: 2,
		},
		{
			name: "a kill ends serving at the exit the harness saw",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all)}, one(0, 5)},
				{"ts-2", []string{start("ts-2"), load(8, all)}, one(0, 0)},
			},
			intervals: 2,
		},
		{
			name: "a load elsewhere before the kill",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all)}, one(0, 5)},
				{"ts-2", []string{start("ts-2"), load(4, all)}, one(0, 0)},
			},
			intervals: 2,
			overlaps:  []string{"ts-1/ts-2"},
		},
		{
			name: "a zombie: stopped, lease over while stopped, reassigned, continued, fenced",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all), lost(7)}, []Incarnation{{Started: at(0), Exited: at(12.2),
					Pauses: []Pause{{Stopped: at(5), Continued: at(12)}}}}},
				{"ts-2", []string{start("ts-2"), load(9, all)}, one(0, 0)},
			},
			intervals: 2,
		},
		{
			name: "a zombie that serves after SIGCONT without noticing its lost lock",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all), lost(12.5)}, []Incarnation{{Started: at(0), Exited: at(13),
					Pauses: []Pause{{Stopped: at(5), Continued: at(12)}}}}},
				{"ts-2", []string{start("ts-2"), load(9, all)}, one(0, 0)},
			},
			intervals: 3, // ts-1 before the stop, after the SIGCONT; ts-2
			overlaps:  []string{"ts-1/ts-2"},
		},
		{
			name: "killed while stopped: nothing served after the stop",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all)}, []Incarnation{{Started: at(0), Exited: at(20),
					Pauses: []Pause{{Stopped: at(5)}}}}},
				{"ts-2", []string{start("ts-2"), load(9, all)}, one(0, 0)},
			},
			intervals: 2,
		},
		{
			name: "the lock lost and retaken: serving again from the retake",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, lower), lost(3), relock(4)}, one(0, 0)},
				{"ts-2", []string{start("ts-2"), load(3.5, lower), unload(3.9, lower)}, one(0, 0)},
			},
			intervals: 3,
		},
		{
			name: "a split on one server, then the upper half moves",
			procs: []proc{
				// The tablet [ , +inf) split on ts-1 (no line); its upper
				// half [m, +inf) moved to ts-2 at 6.
				{"ts-1", []string{start("ts-1"), load(1, all), unload(6, upper)}, one(0, 0)},
				{"ts-2", []string{start("ts-2"), load(6.01, upper)}, one(0, 0)},
			},
			intervals: 3, // ts-1 [m,+inf) to 6, ts-1 ["",m) to the end, ts-2
		},
		{
			name: "the lower half still served when loaded elsewhere",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all), unload(6, upper)}, one(0, 0)},
				{"ts-2", []string{start("ts-2"), load(7, lower)}, one(0, 0)},
			},
			intervals: 3,
			overlaps:  []string{"ts-1/ts-2"},
		},
		{
			name: "a merge after a move: both halves unloaded as one",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, lower), unload(3, lower)}, one(0, 0)},
				{"ts-2", []string{start("ts-2"), load(1, upper), load(3.1, lower), unload(9, all)}, one(0, 0)},
				{"ts-3", []string{start("ts-3"), load(9.1, all)}, one(0, 0)},
			},
			intervals: 4,
		},
		{
			name: "two incarnations of one process are two servers",
			procs: []proc{
				{"ts-1", []string{start("ts-1"), load(1, all), start("ts-1"), load(3, all)},
					[]Incarnation{{Started: at(0), Exited: at(4)}, {Started: at(2)}}},
			},
			intervals: 2,
			overlaps:  []string{"ts-1/ts-1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs []ServingLog
			for _, p := range tc.procs {
				logs = append(logs, ServingLog{Proc: p.name, Text: strings.Join(p.lines, "\n") + "\n", Incarnations: p.incs})
			}
			ivs, err := ServingIntervals(logs, at(100))
			if err != nil {
				t.Fatal(err)
			}
			if len(ivs) != tc.intervals {
				t.Errorf("%d intervals, want %d:\n%s", len(ivs), tc.intervals, describeIntervals(ivs))
			}
			var got []string
			for _, o := range CheckServingIntervals(ivs) {
				got = append(got, o.A.Proc+"/"+o.B.Proc)
			}
			if strings.Join(got, " ") != strings.Join(tc.overlaps, " ") {
				t.Errorf("overlaps %q, want %q; the intervals:\n%s", got, tc.overlaps, describeIntervals(ivs))
			}
		})
	}
}

func describeIntervals(ivs []Interval) string {
	var b strings.Builder
	for _, iv := range ivs {
		fmt.Fprintf(&b, "  %v\n", iv)
	}
	return b.String()
}

// TestServingIntervalsOfRealLines parses lines as kv/tabletserver writes
// them, with quoting, and a log whose incarnations do not match.
func TestServingIntervalsOfRealLines(t *testing.T) {
	text := harnessStart + "ts-1 at 2026-11-22T20:00:00Z\n" +
		`time=2026-11-22T20:00:01.005Z level=INFO msg="loaded tablet" server=ts-1-1a2b tablet=3 range="[\"r0000-1\", +inf)" table=chaos_reg event="moved from ts-2-1a2c" since=2026-11-22T20:00:01.000000001Z` + "\n" +
		`time=2026-11-22T20:00:02.005Z level=INFO msg="unloaded tablet" server=ts-1-1a2b tablet=3 range="[\"r0000-1\", \"r0000-5\\x00\")" table=chaos_reg at=2026-11-22T20:00:02.000000002Z` + "\n" +
		`time=2026-11-22T20:00:03.005Z level=ERROR msg="lost its lock; not serving" server=ts-1-1a2b path=/ls/local/cellar/servers/ts-1-1a2b since=2026-11-22T20:00:03.000000003Z` + "\n"
	ivs, err := ServingIntervals([]ServingLog{{Proc: "ts-1", Text: text, Incarnations: []Incarnation{{}}}}, time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) != 2 {
		t.Fatalf("intervals:\n%s", describeIntervals(ivs))
	}
	a, b := ivs[0], ivs[1]
	if a.Server != "ts-1-1a2b" || a.Table != "chaos_reg" || string(a.Start) != "r0000-1" || string(a.End) != "r0000-5\x00" ||
		a.From.Nanosecond() != 1 || a.To.Nanosecond() != 2 || a.Ended != "unloaded" {
		t.Errorf("the unloaded part: %v", a)
	}
	if string(b.Start) != "r0000-5\x00" || len(b.End) != 0 || b.To.Nanosecond() != 3 || b.Ended != "lock lost" {
		t.Errorf("the rest, until the lock was lost: %v", b)
	}
	if _, err := ServingIntervals([]ServingLog{{Proc: "ts-1", Text: text}}, time.Now()); err == nil {
		t.Error("a log of one incarnation read with none known")
	}
}

// TestShortScheduleSplitsBeforeMerging: every round of the short run
// splits, then moves, then merges, so that a merge has a neighbour.
func TestShortScheduleSplitsBeforeMerging(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		ks := ShortSchedule(seed, 2)
		n := len(Kinds())
		if len(ks) != 2*n {
			t.Fatalf("seed %d: %d faults, want %d", seed, len(ks), 2*n)
		}
		for r := range 2 {
			round := ks[r*n : (r+1)*n]
			is, im, ig := slices.Index(round, SplitTablet), slices.Index(round, MoveTablet), slices.Index(round, MergeTablets)
			if !(is >= 0 && is < im && im < ig) {
				t.Fatalf("seed %d round %d: %v", seed, r, round)
			}
		}
	}
}
