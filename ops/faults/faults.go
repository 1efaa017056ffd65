// Package faults is the test-only fault control of a cellar process: a
// skewable wall clock and an HTTP endpoint, mounted on the process's -http
// server by -fault-injection, that fails fsyncs, emulates a power loss of
// the machine and jumps the clock. The chaos tests in tests/ drive real
// processes through it. Nothing here is for production: a process started
// without -fault-injection has none of it.
//
// The endpoints, all POST (GET /debug/faults shows the state):
//
//	/debug/faults/sync-fail?n=N&prefix=P  fail the next N fsyncs of dfs files whose name starts with P (N=-1: all until cleared)
//	/debug/faults/stall-syncs?prefix=P    hold the fsyncs of dfs files whose name starts with P until cleared or crashed
//	/debug/faults/clear                   stop failing and stalling fsyncs
//	/debug/faults/crash?torn=1&seed=S     power loss: cut unsynced data (torn=1: keep a seeded torn tail), then SIGKILL the process
//	/debug/faults/clock?skew=D            set the wall clock's offset from the real one (a Go duration, e.g. 1h or -1h)
package faults

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
)

// Clock is a wall clock that can be set off the real one, as an NTP step
// or a bad RTC sets a machine's clock. Only the wall reading moves: code
// that times leases must measure with Go's monotonic clock (time.Now and
// time.Since), which a skew leaves alone, and must never do arithmetic on
// this clock's readings. While skewed, Now returns readings without a
// monotonic part, so any such arithmetic sees the jump, as it would on a
// real machine. The zero value is the real clock.
type Clock struct {
	skew atomic.Int64
}

// Now returns the wall clock's reading.
func (c *Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	d := time.Duration(c.skew.Load())
	if d == 0 {
		return time.Now()
	}
	return time.Now().Round(0).Add(d)
}

// SetSkew sets the offset from the real clock; the clock jumps at once.
func (c *Clock) SetSkew(d time.Duration) { c.skew.Store(int64(d)) }

// Skew returns the offset from the real clock.
func (c *Clock) Skew() time.Duration { return time.Duration(c.skew.Load()) }

// Options configure the endpoint.
type Options struct {
	// FS is the process's dfs wrapped for faults (nil: the disk endpoints
	// answer 404, as in a process without a dfs).
	FS *dfs.Faulty
	// Clock is the process's wall clock.
	Clock *Clock
	// Logger hears every fault injected (nil: discarded).
	Logger *slog.Logger
	// Exit ends the process after a crash (default: SIGKILL to itself, so
	// that nothing, not even a deferred function, runs after the power
	// loss).
	Exit func()
}

func (o Options) defaults() Options {
	if o.Clock == nil {
		o.Clock = &Clock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Exit == nil {
		o.Exit = func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	}
	return o
}

// Mount adds the endpoints to mux.
func Mount(mux *http.ServeMux, opts Options) {
	opts = opts.defaults()
	h := &handler{opts: opts}
	mux.HandleFunc("GET /debug/faults", h.state)
	mux.HandleFunc("POST /debug/faults/clock", h.clock)
	if opts.FS != nil {
		mux.HandleFunc("POST /debug/faults/sync-fail", h.syncFail)
		mux.HandleFunc("POST /debug/faults/stall-syncs", h.stallSyncs)
		mux.HandleFunc("POST /debug/faults/clear", h.clear)
		mux.HandleFunc("POST /debug/faults/crash", h.crash)
	}
}

type handler struct {
	opts Options
}

// State is what GET /debug/faults returns.
type State struct {
	ClockSkew string          `json:"clock_skew"`
	Disk      dfs.FaultyStats `json:"disk"`
}

func (h *handler) state(w http.ResponseWriter, _ *http.Request) {
	st := State{ClockSkew: h.opts.Clock.Skew().String()}
	if h.opts.FS != nil {
		st.Disk = h.opts.FS.Stats()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

func (h *handler) clock(w http.ResponseWriter, r *http.Request) {
	d, err := time.ParseDuration(r.URL.Query().Get("skew"))
	if err != nil {
		http.Error(w, fmt.Sprintf("skew: %v", err), http.StatusBadRequest)
		return
	}
	h.opts.Clock.SetSkew(d)
	h.opts.Logger.Warn("fault injected: wall clock skewed", slog.Duration("skew", d))
	fmt.Fprintf(w, "clock skew %v\n", d)
}

func (h *handler) syncFail(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < -1 || n == 0 {
		http.Error(w, "n: want a count above 0, or -1 for every sync until cleared", http.StatusBadRequest)
		return
	}
	prefix := r.URL.Query().Get("prefix")
	h.opts.FS.FailSyncs(n, prefix)
	h.opts.Logger.Warn("fault injected: fsyncs fail", slog.Int("n", n), slog.String("prefix", prefix))
	fmt.Fprintf(w, "failing %d syncs under %q\n", n, prefix)
}

func (h *handler) stallSyncs(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	h.opts.FS.StallSyncs(prefix)
	h.opts.Logger.Warn("fault injected: fsyncs stall", slog.String("prefix", prefix))
	fmt.Fprintf(w, "stalling syncs under %q\n", prefix)
}

func (h *handler) clear(w http.ResponseWriter, _ *http.Request) {
	h.opts.FS.ClearFaults()
	h.opts.Logger.Warn("fault cleared: fsyncs go on and succeed")
	fmt.Fprintln(w, "cleared")
}

func (h *handler) crash(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var opts dfs.FaultyCrash
	opts.Torn = q.Get("torn") == "1" || q.Get("torn") == "true"
	if s := q.Get("seed"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			http.Error(w, fmt.Sprintf("seed: %v", err), http.StatusBadRequest)
			return
		}
		opts.Seed = seed
	}
	st, err := h.opts.FS.Crash(opts)
	// Logged and answered before the process dies: the test reads what the
	// crash undid. A failure to undo is reported but the process dies all
	// the same, as a machine does.
	h.opts.Logger.Error("fault injected: power loss; the process ends now", slog.Bool("torn", opts.Torn), slog.Int64("seed", opts.Seed),
		slog.Int("files_cut", st.Cut), slog.Int("files_removed", st.Removed), slog.Int64("torn_bytes", st.TornBytes), slog.Any("err", err))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		dfs.FaultyStats
		Err string `json:"err,omitempty"`
	}{st, errString(err)})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	h.opts.Exit()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
