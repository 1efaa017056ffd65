package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// defaultSeed makes the short run in make test the same every time;
// CELLAR_CHAOS_SEED replays or varies it.
const defaultSeed = 9

// recoveryBound is the bound this suite states: after each fault heals,
// every workload stream through both doors is answered again within it.
// With 3s leases a failover takes a few seconds; the rest is slack for a
// loaded 2-core machine.
const recoveryBound = 60 * time.Second

// TestChaos runs the cluster under the eight clients and the nemesis, and
// checks the histories. By default it is the short run of make test:
// every fault kind twice, in an order the seed picks (3 to 5 minutes).
// With CELLAR_CHAOS_DURATION (make soak) it injects random faults for
// that long. CELLAR_CHAOS_SEED sets the seed, which the summary prints.
// CELLAR_CHAOS_FAULTS runs a comma-separated list of fault kinds in order
// instead of the short run (for example eight pause-chubby-leader).
func TestChaos(t *testing.T) {
	seed := Seed(t, defaultSeed)
	var soak time.Duration
	if s := os.Getenv("CELLAR_CHAOS_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 {
			t.Fatalf("CELLAR_CHAOS_DURATION=%q: want a positive duration such as 30m", s)
		}
		soak = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), soak+15*time.Minute)
	defer cancel()

	bin, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, Options{Bin: bin, Dir: filepath.Join(t.TempDir(), "cluster")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the processes' logs end:\n%s", c.LogTails(25))
		}
		c.Close(context.Background())
	})
	w, err := NewWorkloads(ctx, c, WorkloadOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	w.Start(ctx)
	defer w.Stop()
	n := NewNemesis(c, w, seed, NemesisOptions{RecoveryBound: recoveryBound, Logf: t.Logf})

	// Warm up: every stream is answered before the first fault.
	warm := time.Now()
	if err := n.waitRecovered(ctx, &Fault{Healed: warm}); err != nil {
		t.Fatalf("before any fault: %v", err)
	}
	if err := sleep(ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	schedule := ShortSchedule(seed, 2)
	if s := os.Getenv("CELLAR_CHAOS_FAULTS"); s != "" {
		// A chosen list of faults, in order (to repeat one kind).
		schedule = nil
		for _, k := range strings.Split(s, ",") {
			schedule = append(schedule, Kind(strings.TrimSpace(k)))
		}
	}
	var runErr error
	if soak > 0 {
		runErr = n.RunFor(ctx, soak)
	} else {
		for _, k := range schedule {
			if runErr = n.Run(ctx, k); runErr != nil {
				break
			}
		}
	}
	// A last stretch of load on the healed cluster, then the checks.
	sleep(ctx, 3*time.Second)
	w.Stop()
	sum := Summary{Seed: seed, Start: w.Rec.start, Duration: time.Since(w.Rec.start), Counts: w.Rec.Counts(), Faults: n.Faults}
	defer func() { sum.Exits = c.UnexpectedExits(); t.Logf("\n%s", sum) }()
	if runErr != nil {
		t.Errorf("nemesis: %v", runErr)
	}
	if err := w.Errors(); err != nil {
		t.Errorf("clients: %v", err)
	}
	sum.Tablets, sum.Coverage = n.CheckCoverage(ctx, RegisterTable, SetTable, CounterTable)
	if sum.Coverage != nil {
		t.Errorf("tablet coverage: %v", sum.Coverage)
	}
	// Serving intervals over the whole run, up to now (every process
	// still runs; what each served last ends here).
	if logs, err := c.ServingLogs(); err != nil {
		sum.IntervalsErr = err
	} else {
		var ivs []Interval
		ivs, sum.IntervalsErr = ServingIntervals(logs, time.Now())
		sum.Intervals, sum.Overlaps = len(ivs), CheckServingIntervals(ivs)
	}
	if sum.IntervalsErr != nil {
		t.Errorf("serving intervals: %v", sum.IntervalsErr)
	}
	for _, o := range sum.Overlaps {
		t.Errorf("a tablet served on two servers at once:\n  %v", o)
	}
	if sum.Set, err = w.CheckSet(ctx); err != nil {
		t.Errorf("set: %v", err)
	}
	if len(sum.Set.Lost) > 0 || len(sum.Set.Phantom) > 0 {
		t.Errorf("set: acknowledged inserts lost: %q; present but never written: %q", sum.Set.Lost, sum.Set.Phantom)
	}
	if sum.Counters, err = w.CheckCounters(ctx); err != nil {
		t.Errorf("counters: %v", err)
	}
	for _, cr := range sum.Counters {
		if !cr.OK {
			t.Errorf("counter %s: final %d (Bigtable API %d) outside [acknowledged %d, attempted %d]", cr.Row, cr.Final,
				cr.ReadThroughBigtableAPI, cr.Acked, cr.Acked+cr.Unknown)
		}
	}
	html := filepath.Join(os.TempDir(), fmt.Sprintf("cellar-chaos-%d-register.html", seed))
	f, err := os.Create(html)
	if err != nil {
		t.Fatal(err)
	}
	sum.RegisterRows = len(w.Rec.RowsOf())
	sum.Linearizable, sum.RegisterOps, err = w.Rec.CheckRegister(5*time.Minute, f)
	f.Close()
	if err != nil {
		t.Error(err)
	}
	switch sum.Linearizable {
	case porcupine.Illegal:
		sum.HTML = html
		t.Errorf("the register history is not linearizable; the failing path is drawn in %s", html)
	case porcupine.Unknown:
		os.Remove(html)
		t.Errorf("porcupine could not decide the register history in time")
	default:
		os.Remove(html)
	}
	for _, s := range Streams() {
		if sum.Counts[s].Acked == 0 {
			t.Errorf("stream %s acknowledged no operation", s)
		}
	}
}
