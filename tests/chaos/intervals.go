package chaos

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Serving intervals (issue 9: "across the whole run, each tablet's
// serving intervals on different servers never overlap"). Each tablet
// server's log, one file per process with a harness line at the start of
// each incarnation, says when it began and stopped serving key ranges:
//
//	loaded tablet            since=T   the load began: not served here before T
//	created tablet           since=T   the same for a new table's tablets
//	unloaded tablet          at=T      Unload had returned: not served after T
//	dropped table            at=T      the table's tablets, the same
//	lost its lock; not serving   since=T   the lease ended (or the loss was
//	                                       noticed) at T: nothing served after
//	holds its lock again; serving since=T  the retake began at T
//
// The times are the server's own, written at full precision (slog's are
// truncated to milliseconds); a line without one falls back to the line's
// time, plus a millisecond for an end. The harness adds what it knows
// (Incarnation): when the process exited (a kill -9, or a zombie that
// fenced itself) and when it was SIGSTOPped and continued. A stopped
// process serves nothing; after SIGCONT it serves again unless it has
// lost its lock (which is what fencing must see to). So a range serves
// from its start line while the server holds its lock and runs, until its
// end line, a lock loss, a stop, the exit, or the end of the run.
//
// Every bound is taken on the safe side: a start no later than the real
// start, an end no earlier than the real end. All processes run on one
// machine and read the same wall clock, so times from different logs
// compare directly, and causally ordered events (an unload's answer, then
// the master's load elsewhere) have ordered times. The check therefore
// allows no slack: two intervals on different servers (or incarnations)
// whose ranges of one table overlap must not overlap in time, touching
// ends allowed. (A process whose wall clock is skewed on purpose, as in
// TestChaosClockSkew, would break that; TestChaos injects no skew.)

// Incarnation is what the harness knows of one run of a process.
type Incarnation struct {
	Started time.Time
	// Exited is when the harness saw it exit; zero: it still runs.
	Exited time.Time
	Pauses []Pause
}

// Pause is a SIGSTOP: Stopped is taken once the process is seen stopped,
// Continued before SIGCONT is sent (zero: never continued).
type Pause struct {
	Stopped, Continued time.Time
}

// ServingLog is one tablet server process's log and incarnations.
type ServingLog struct {
	Proc         string
	Text         string
	Incarnations []Incarnation
}

// Interval is a time a server served a key range of a table.
type Interval struct {
	Proc        string // the process, and #incarnation
	Incarnation int
	Server      string // the server id its log gives
	Table       string
	Start, End  []byte // [Start, End); an empty End is the end of the table
	From, To    time.Time
	// Why the interval began and ended ("loaded", "unloaded", "lock lost",
	// "exit", "end of run", …).
	Began, Ended string
}

func (iv Interval) String() string {
	end := strconv.Quote(string(iv.End))
	if len(iv.End) == 0 {
		end = "+inf"
	}
	return fmt.Sprintf("%s#%d (%s) served %s [%q, %s) from %s (%s) to %s (%s)", iv.Proc, iv.Incarnation, iv.Server, iv.Table, iv.Start, end,
		iv.From.Format(preciseLayout), iv.Began, iv.To.Format(preciseLayout), iv.Ended)
}

const preciseLayout = "15:04:05.000000000"

// harnessStart begins each incarnation's part of a log (Proc.start).
const harnessStart = "=== chaos harness: starting "

type servingEvent struct {
	at    time.Time
	kind  string // add, remove, drop, lost, relock, stop, cont, exit
	why   string
	table string
	start []byte
	end   []byte
	line  int
}

type openRange struct {
	table      string
	start, end []byte
	since      time.Time // valid while serving
	why        string
}

// ServingIntervals reads the logs into intervals; open ones end at end.
func ServingIntervals(logs []ServingLog, end time.Time) ([]Interval, error) {
	var out []Interval
	for _, l := range logs {
		parts := splitIncarnations(l.Text)
		if len(parts) != len(l.Incarnations) {
			return nil, fmt.Errorf("%s: the log has %d incarnations, the harness started %d", l.Proc, len(parts), len(l.Incarnations))
		}
		for i, text := range parts {
			ivs, err := incarnationIntervals(l.Proc, i+1, text, l.Incarnations[i], end)
			if err != nil {
				return nil, err
			}
			out = append(out, ivs...)
		}
	}
	return out, nil
}

func splitIncarnations(text string) []string {
	var parts []string
	var cur *strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, harnessStart) {
			parts = append(parts, "")
			cur = &strings.Builder{}
		}
		if cur != nil {
			cur.WriteString(line)
			cur.WriteByte('\n')
			parts[len(parts)-1] = cur.String()
		}
	}
	return parts
}

func incarnationIntervals(proc string, n int, text string, inc Incarnation, runEnd time.Time) ([]Interval, error) {
	var evs []servingEvent
	server := ""
	for i, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, "msg=") {
			continue
		}
		kv := parseLogfmt(line)
		msg := kv["msg"]
		var kind, why, precise string
		switch msg {
		case "loaded tablet":
			kind, why, precise = "add", "loaded", "since"
		case "created tablet":
			kind, why, precise = "add", "created", "since"
		case "unloaded tablet":
			kind, why, precise = "remove", "unloaded", "at"
		case "dropped table":
			kind, why, precise = "drop", "dropped", "at"
		case "lost its lock; not serving":
			kind, why, precise = "lost", "lock lost", "since"
		case "holds its lock again; serving":
			kind, why, precise = "relock", "lock retaken", "since"
		default:
			continue
		}
		if s := kv["server"]; s != "" {
			server = s
		}
		at, err := lineTime(kv, precise, kind == "remove" || kind == "drop" || kind == "lost")
		if err != nil {
			return nil, fmt.Errorf("%s#%d line %d: %v: %s", proc, n, i+1, err, line)
		}
		ev := servingEvent{at: at, kind: kind, why: why, table: kv["table"], line: i}
		if kind == "add" || kind == "remove" {
			if ev.start, ev.end, err = parseRange(kv["range"]); err != nil {
				return nil, fmt.Errorf("%s#%d line %d: %v: %s", proc, n, i+1, err, line)
			}
		}
		evs = append(evs, ev)
	}
	for _, p := range inc.Pauses {
		evs = append(evs, servingEvent{at: p.Stopped, kind: "stop", why: "SIGSTOP", line: -1})
		if !p.Continued.IsZero() {
			evs = append(evs, servingEvent{at: p.Continued, kind: "cont", why: "SIGCONT", line: -1})
		}
	}
	last, lastWhy := runEnd, "end of run"
	if !inc.Exited.IsZero() {
		last, lastWhy = inc.Exited, "exit"
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })

	var out []Interval
	var open []*openRange
	held, stopped := true, false
	serving := func() bool { return held && !stopped }
	closeRange := func(r *openRange, start, end []byte, at time.Time, why string) {
		if at.After(r.since) {
			out = append(out, Interval{Proc: proc, Incarnation: n, Server: server, Table: r.table, Start: start, End: end,
				From: r.since, To: at, Began: r.why, Ended: why})
		}
	}
	closeAll := func(at time.Time, why string) {
		for _, r := range open {
			closeRange(r, r.start, r.end, at, why)
		}
	}
	reopen := func(at time.Time, why string) {
		for _, r := range open {
			r.since, r.why = at, why
		}
	}
	for _, ev := range evs {
		if ev.at.After(last) {
			ev.at = last // logged after the harness saw the exit: cannot be
		}
		was := serving()
		switch ev.kind {
		case "add":
			open = append(open, &openRange{table: ev.table, start: ev.start, end: ev.end, since: ev.at, why: ev.why})
		case "remove", "drop":
			var keep []*openRange
			for _, r := range open {
				if r.table != ev.table {
					keep = append(keep, r)
					continue
				}
				if ev.kind == "drop" {
					if was {
						closeRange(r, r.start, r.end, ev.at, ev.why)
					}
					continue
				}
				lo, hi, ok := intersect(r.start, r.end, ev.start, ev.end)
				if !ok {
					keep = append(keep, r)
					continue
				}
				if was {
					closeRange(r, lo, hi, ev.at, ev.why)
				}
				// What is left of r on either side still serves since
				// r.since.
				if bytes.Compare(r.start, lo) < 0 {
					keep = append(keep, &openRange{table: r.table, start: r.start, end: lo, since: r.since, why: r.why})
				}
				if len(hi) > 0 && (len(r.end) == 0 || bytes.Compare(hi, r.end) < 0) {
					keep = append(keep, &openRange{table: r.table, start: hi, end: r.end, since: r.since, why: r.why})
				}
			}
			open = keep
		case "lost":
			held = false
		case "relock":
			held = true
		case "stop":
			stopped = true
		case "cont":
			stopped = false
		}
		switch now := serving(); {
		case was && !now:
			closeAll(ev.at, ev.why)
		case !was && now:
			reopen(ev.at, ev.why)
		}
	}
	if serving() {
		closeAll(last, lastWhy)
	}
	return out, nil
}

// lineTime is the event's time: the precise attribute, else the line's
// time (slog's, truncated to the millisecond) plus a millisecond for an
// end.
func lineTime(kv map[string]string, precise string, isEnd bool) (time.Time, error) {
	if v := kv[precise]; v != "" {
		return time.Parse(time.RFC3339Nano, v)
	}
	t, err := time.Parse(time.RFC3339Nano, kv["time"])
	if err != nil {
		return time.Time{}, fmt.Errorf("no time: %w", err)
	}
	if isEnd {
		t = t.Add(time.Millisecond)
	}
	return t, nil
}

// parseLogfmt reads slog's text format: key=value pairs, a value bare or
// Go-quoted.
func parseLogfmt(line string) map[string]string {
	out := map[string]string{}
	for len(line) > 0 {
		line = strings.TrimLeft(line, " ")
		eq := strings.IndexByte(line, '=')
		if eq <= 0 {
			break
		}
		key := line[:eq]
		line = line[eq+1:]
		if strings.HasPrefix(line, `"`) {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				break
			}
			v, _ := strconv.Unquote(q)
			out[key] = v
			line = line[len(q):]
			continue
		}
		sp := strings.IndexByte(line, ' ')
		if sp < 0 {
			sp = len(line)
		}
		out[key] = line[:sp]
		line = line[sp:]
	}
	return out
}

// parseRange reads model.RowRange's String: ["start", "end") or
// ["start", +inf).
func parseRange(s string) (start, end []byte, err error) {
	bad := fmt.Errorf("range %q is not [\"start\", \"end\") or [\"start\", +inf)", s)
	if !strings.HasPrefix(s, "[") {
		return nil, nil, bad
	}
	s = s[1:]
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return nil, nil, bad
	}
	st, _ := strconv.Unquote(q)
	s = strings.TrimPrefix(s[len(q):], ", ")
	switch {
	case s == "+inf)":
		return []byte(st), nil, nil
	case strings.HasPrefix(s, `"`):
		q, err := strconv.QuotedPrefix(s)
		if err != nil || s[len(q):] != ")" {
			return nil, nil, bad
		}
		e, _ := strconv.Unquote(q)
		return []byte(st), []byte(e), nil
	}
	return nil, nil, bad
}

// intersect is [s1,e1) ∩ [s2,e2), empty ends meaning the end of the table.
func intersect(s1, e1, s2, e2 []byte) (lo, hi []byte, ok bool) {
	lo = s1
	if bytes.Compare(s2, lo) > 0 {
		lo = s2
	}
	switch {
	case len(e1) == 0:
		hi = e2
	case len(e2) == 0:
		hi = e1
	case bytes.Compare(e1, e2) < 0:
		hi = e1
	default:
		hi = e2
	}
	return lo, hi, len(hi) == 0 || bytes.Compare(lo, hi) < 0
}

// Overlap is two intervals on different servers that overlap in keys and
// in time.
type Overlap struct{ A, B Interval }

func (o Overlap) String() string { return fmt.Sprintf("%v\n    and %v", o.A, o.B) }

// CheckServingIntervals returns every pair of intervals of different
// servers (or incarnations) whose ranges of a table overlap and whose
// times overlap ([From, To) each; touching is fine).
func CheckServingIntervals(ivs []Interval) []Overlap {
	var out []Overlap
	for i := range ivs {
		for j := i + 1; j < len(ivs); j++ {
			a, b := ivs[i], ivs[j]
			if a.Table != b.Table || (a.Proc == b.Proc && a.Incarnation == b.Incarnation) {
				continue
			}
			if _, _, ok := intersect(a.Start, a.End, b.Start, b.End); !ok {
				continue
			}
			if a.From.Before(b.To) && b.From.Before(a.To) {
				out = append(out, Overlap{A: a, B: b})
			}
		}
	}
	return out
}
