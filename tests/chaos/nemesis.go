package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cellardb/cellar/kv/masterpb"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds of this package. Kills and pauses pick their victim
// when they strike: the tablet server serving the register's current
// rows, the active master, the Chubby leader or a follower.
const (
	KillTabletServer          Kind = "kill-tabletserver"            // kill -9, restarted after the hold
	KillTabletServerLeaveDead Kind = "kill-tabletserver-leave-dead" // kill -9, left dead through the heal check
	KillMaster                Kind = "kill-master"                  // kill -9 the active master; the standby takes over; left dead through the heal check
	KillChubbyLeader          Kind = "kill-chubby-leader"           // kill -9, restarted after the hold
	KillChubbyFollower        Kind = "kill-chubby-follower"         // kill -9, left dead through the heal check
	KillGateway               Kind = "kill-gateway"                 // kill -9, restarted after the hold; clients reconnect
	PauseTabletServer         Kind = "pause-tabletserver"           // SIGSTOP longer than the lease, then SIGCONT: a zombie that must fence
	PauseMaster               Kind = "pause-master"                 // the same for the active master
	PauseChubbyLeader         Kind = "pause-chubby-leader"          // SIGSTOP the Chubby leader past an election but within the lease, then SIGCONT: it comes back as a follower
	SplitTablet               Kind = "split"                        // forced split of the register's tablet at a current row
	MoveTablet                Kind = "move"                         // forced move of the register's tablet
	MergeTablets              Kind = "merge"                        // forced merge of the register's tablet with a neighbour
)

// Kinds lists the fault kinds this package injects.
func Kinds() []Kind {
	return []Kind{KillTabletServer, KillTabletServerLeaveDead, KillMaster, KillChubbyLeader, KillChubbyFollower,
		KillGateway, PauseTabletServer, PauseMaster, PauseChubbyLeader, SplitTablet, MoveTablet, MergeTablets}
}

// Fault is one injected fault and what it cost.
type Fault struct {
	Kind   Kind
	Target string // the process, or the tablet
	// Injected, Healed and Recovered are when the fault struck, when the
	// nemesis undid it (restart, SIGCONT; for a process left dead, at
	// once), and when every workload stream had been answered again.
	Injected, Healed, Recovered time.Time
	// Window is the longest time any stream went unanswered between the
	// injection and the recovery, and Stream that stream.
	Window time.Duration
	Stream string
	Note   string

	paused *Proc // the zombie of a pause
}

// NemesisOptions configure the nemesis. Zero fields get the defaults.
type NemesisOptions struct {
	// Lease is the cluster's Chubby lease; pauses last longer than
	// Lease+Grace so that the paused process's session expires.
	Lease, Grace time.Duration
	// RecoveryBound is how long after a heal every workload stream must
	// be answered again (default 60s).
	RecoveryBound time.Duration
	// Quiet is the pause between faults (default 2s, plus up to as much
	// again at random).
	Quiet time.Duration
	// Logf reports progress (required: a test's t.Logf).
	Logf func(format string, args ...any)
}

// Nemesis injects faults into a cluster under a workload.
type Nemesis struct {
	c      *Cluster
	w      *Workloads
	r      *rand.Rand
	opts   NemesisOptions
	Faults []Fault
}

// NewNemesis makes a nemesis whose choices follow seed.
func NewNemesis(c *Cluster, w *Workloads, seed uint64, opts NemesisOptions) *Nemesis {
	if opts.Lease <= 0 {
		opts.Lease = c.opts.Lease
	}
	if opts.Grace <= 0 {
		opts.Grace = c.opts.Grace
	}
	if opts.RecoveryBound <= 0 {
		opts.RecoveryBound = 60 * time.Second
	}
	if opts.Quiet <= 0 {
		opts.Quiet = 2 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &Nemesis{c: c, w: w, r: rand.New(rand.NewPCG(seed, 0x6e656d)), opts: opts}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// ShortSchedule is every kind rounds times, each round in an order the
// seed picks, except that a round's split, move and merge come in that
// order (at the places the seed picked for the three).
func ShortSchedule(seed uint64, rounds int) []Kind {
	r := rand.New(rand.NewPCG(seed, 0x73636864))
	var out []Kind
	for range rounds {
		ks := Kinds()
		r.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
		// A merge needs a neighbour, so the round's split comes first;
		// the move in between most often leaves the two halves on
		// different servers, so that the merge moves one of them first.
		ordered := []Kind{SplitTablet, MoveTablet, MergeTablets}
		var at []int
		for _, k := range ordered {
			at = append(at, slices.Index(ks, k))
		}
		slices.Sort(at)
		for i, k := range ordered {
			ks[at[i]] = k
		}
		out = append(out, ks...)
	}
	return out
}

// RunFor injects random faults until d has passed.
func (n *Nemesis) RunFor(ctx context.Context, d time.Duration) error {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		kinds := Kinds()
		if err := n.Run(ctx, kinds[n.r.IntN(len(kinds))]); err != nil {
			return err
		}
	}
	return nil
}

// Run injects one fault, holds it, heals it, waits until every workload
// stream is answered again (within RecoveryBound), restarts whatever is
// still down, and pauses.
func (n *Nemesis) Run(ctx context.Context, k Kind) error {
	f := Fault{Kind: k}
	err := n.run(ctx, &f)
	if err == nil && f.paused != nil {
		f.Note = n.zombie(ctx, f.paused, f.Healed)
	}
	if err == nil {
		f.Window, f.Stream = n.window(f)
		n.opts.Logf("fault %d %s on %s: healed %v after injection, recovered %v after the heal; longest unavailability %v (%s)%s",
			len(n.Faults)+1, k, f.Target, f.Healed.Sub(f.Injected).Round(time.Millisecond), f.Recovered.Sub(f.Healed).Round(time.Millisecond),
			f.Window.Round(time.Millisecond), f.Stream, noteOf(f.Note))
		n.Faults = append(n.Faults, f)
	}
	if err != nil {
		return fmt.Errorf("fault %s on %s: %w", k, f.Target, err)
	}
	if err := n.restore(ctx); err != nil {
		return fmt.Errorf("after fault %s on %s: %w", k, f.Target, err)
	}
	return sleep(ctx, n.opts.Quiet+time.Duration(n.r.Int64N(int64(n.opts.Quiet))))
}

func noteOf(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

func (n *Nemesis) run(ctx context.Context, f *Fault) error {
	hold := 2*time.Second + time.Duration(n.r.Int64N(int64(3*time.Second)))
	// A pause outlives the lease and the grace a failover adds, so that
	// the paused process's session surely expires.
	pause := n.opts.Lease + n.opts.Grace + 2*time.Second + time.Duration(n.r.Int64N(int64(2*time.Second)))
	kill := func(p *Proc, restart bool) error {
		f.Target = p.Name
		f.Injected = time.Now()
		if err := p.Kill(ctx); err != nil {
			return err
		}
		if restart {
			if err := sleep(ctx, hold); err != nil {
				return err
			}
			if err := p.Restart(ctx); err != nil {
				return err
			}
		}
		f.Healed = time.Now()
		return nil
	}
	switch f.Kind {
	case KillTabletServer, KillTabletServerLeaveDead:
		p, err := n.registerServer(ctx)
		if err != nil {
			return err
		}
		if err := kill(p, f.Kind == KillTabletServer); err != nil {
			return err
		}
	case KillMaster:
		p, _, err := n.c.ActiveMaster(ctx)
		if err != nil {
			return err
		}
		if err := kill(p, false); err != nil {
			return err
		}
	case KillChubbyLeader, KillChubbyFollower:
		leader, err := n.c.ChubbyLeader(ctx)
		if err != nil {
			return err
		}
		p := leader
		if f.Kind == KillChubbyFollower {
			var followers []*Proc
			for _, q := range n.c.ByRole(RoleChubby) {
				if q != leader && q.Alive() {
					followers = append(followers, q)
				}
			}
			if len(followers) == 0 {
				return errors.New("no live Chubby follower")
			}
			p = followers[n.r.IntN(len(followers))]
		}
		if err := kill(p, f.Kind == KillChubbyLeader); err != nil {
			return err
		}
	case KillGateway:
		if err := kill(n.c.ByRole(RoleGateway)[0], true); err != nil {
			return err
		}
	case PauseTabletServer, PauseMaster:
		var p *Proc
		var err error
		if f.Kind == PauseTabletServer {
			p, err = n.registerServer(ctx)
		} else {
			p, _, err = n.c.ActiveMaster(ctx)
		}
		if err != nil {
			return err
		}
		f.Target = p.Name
		f.paused = p
		// Its session expires while it is stopped: it must exit when it
		// runs again.
		p.ExpectExit()
		f.Injected = time.Now()
		if err := p.Stop(); err != nil {
			return err
		}
		if err := sleep(ctx, pause); err != nil {
			p.Cont()
			return err
		}
		if err := p.Cont(); err != nil {
			return err
		}
		f.Healed = time.Now()
	case PauseChubbyLeader:
		p, err := n.c.ChubbyLeader(ctx)
		if err != nil {
			return err
		}
		f.Target = p.Name
		f.Injected = time.Now()
		if err := p.Stop(); err != nil {
			return err
		}
		// Long past an election (10 round trips of 20ms), shorter than
		// the lease: the cell moves on, and the sessions must not notice
		// more than a failover.
		if err := sleep(ctx, time.Second+time.Duration(n.r.Int64N(int64(time.Second)))); err != nil {
			p.Cont()
			return err
		}
		if err := p.Cont(); err != nil {
			return err
		}
		f.Healed = time.Now()
	case SplitTablet, MoveTablet, MergeTablets:
		if err := n.tabletOp(ctx, f); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	return n.waitRecovered(ctx, f)
}

// zombie reports what a paused process did once it ran again: a tablet
// server or master whose session expired while it was stopped must find
// out and exit (its tablets or the master lock are another's now). What
// it may have done meanwhile is for the histories to show.
func (n *Nemesis) zombie(ctx context.Context, p *Proc, cont time.Time) string {
	limit := 2 * (n.opts.Lease + n.opts.Grace)
	for p.Alive() && time.Since(cont) < limit {
		if sleep(ctx, 100*time.Millisecond) != nil {
			break
		}
	}
	if p.Alive() {
		return fmt.Sprintf("the zombie still runs %v after SIGCONT", limit)
	}
	return fmt.Sprintf("the zombie fenced itself: exited within %v of SIGCONT", time.Since(cont).Round(100*time.Millisecond))
}

// registerServer is the tablet server serving the register's current
// rows: the one whose loss the clients feel.
func (n *Nemesis) registerServer(ctx context.Context) (*Proc, error) {
	var last error
	for range 20 {
		p, err := n.c.ServerOf(ctx, RegisterTable, n.w.RegisterRow(n.r.IntN(n.w.opts.RegisterRows)))
		if err == nil && p.Alive() && !p.Stopped() {
			return p, nil
		}
		last = err
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("find the register's tablet server: %w", last)
}

// tabletOp forces a split of the register's tablet at a current row, a
// move of it to another server, or a merge of it with a neighbour,
// through the active master.
func (n *Nemesis) tabletOp(ctx context.Context, f *Fault) error {
	row := n.w.RegisterRow(1 + n.r.IntN(n.w.opts.RegisterRows-1))
	_, m, err := n.c.ActiveMaster(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	f.Injected = time.Now()
	if f.Kind == SplitTablet {
		f.Target = fmt.Sprintf("%s at %s", RegisterTable, row)
		_, err = m.SplitTablet(cctx, &masterpb.SplitTabletRequest{Table: RegisterTable, Key: []byte(row)})
	} else if f.Kind == MergeTablets {
		f.Note, err = n.merge(cctx, m, row)
		f.Target = fmt.Sprintf("%s's tablet of %s", RegisterTable, row)
	} else {
		f.Target = fmt.Sprintf("%s's tablet of %s", RegisterTable, row)
		var resp *masterpb.MoveTabletResponse
		resp, err = m.MoveTablet(cctx, &masterpb.MoveTabletRequest{Tablet: &masterpb.TabletRef{Table: RegisterTable, Row: []byte(row)}})
		if err == nil {
			f.Note = "now on " + resp.Tablet.Server
		}
	}
	if err != nil {
		// A split at a row that already starts a tablet, a move that
		// races the balancer, or a merge of a table's only tablet, is
		// refused: the cluster said no, which is
		// not a violation. It is noted, and still counts as a fault
		// (the master did the work up to the refusal).
		f.Note = fmt.Sprintf("refused: %v", err)
	}
	f.Healed = time.Now()
	return nil
}

// merge merges the register's tablet holding row with its right
// neighbour, or, if it is the table's last tablet (the current rows sort
// last once the clients move on to fresh ones), its left neighbour with
// it. It returns what was merged, or the refusal.
func (n *Nemesis) merge(ctx context.Context, m masterpb.MasterClient, row string) (string, error) {
	resp, err := m.ListTablets(ctx, &masterpb.ListTabletsRequest{Table: RegisterTable})
	if err != nil {
		return "", err
	}
	at := []byte(row)
	for i, t := range resp.Tablets {
		if string(t.Start) <= row && (len(t.End) == 0 || row < string(t.End)) && len(t.End) == 0 && i > 0 {
			at = resp.Tablets[i-1].Start // the left neighbour, with this one
		}
	}
	mr, err := m.MergeTablets(ctx, &masterpb.MergeTabletsRequest{Table: RegisterTable, Row: at})
	if err != nil {
		return "", err
	}
	end := "+inf"
	if len(mr.Tablet.End) > 0 {
		end = fmt.Sprintf("%q", mr.Tablet.End)
	}
	note := fmt.Sprintf("merged into [%q, %s) on %s", mr.Tablet.Start, end, mr.Tablet.Server)
	if mr.MovedFrom != "" {
		note += fmt.Sprintf(", after moving the tablet at %q from %s", mr.MovedRangeStart, mr.MovedFrom)
	}
	return note, nil
}

// waitRecovered waits until every stream has been answered by an
// operation called after the heal.
func (n *Nemesis) waitRecovered(ctx context.Context, f *Fault) error {
	deadline := f.Healed.Add(n.opts.RecoveryBound)
	for {
		var waiting []string
		for _, s := range Streams() {
			if !n.w.Rec.ServedSince(s, f.Healed) {
				waiting = append(waiting, s)
			}
		}
		if len(waiting) == 0 {
			f.Recovered = time.Now()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not back to full service %v after the heal (the bound): %s still unanswered", n.opts.RecoveryBound, strings.Join(waiting, ", "))
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

func (n *Nemesis) window(f Fault) (time.Duration, string) {
	var best time.Duration
	var stream string
	for _, s := range Streams() {
		if g, _ := n.w.Rec.LongestGap(s, f.Injected, f.Recovered); g > best {
			best, stream = g, s
		}
	}
	return best, stream
}

// restore restarts every process that is down (left dead, a zombie
// that fenced itself, or one that exited by itself) and waits until every
// process runs and the master sees all tablet servers, restarting any
// that exits meanwhile, for up to RecoveryBound.
func (n *Nemesis) restore(ctx context.Context) error {
	for _, p := range n.c.Procs() {
		if p.Stopped() {
			if err := p.Cont(); err != nil {
				return err
			}
		}
	}
	// A zombie notices its lost session when it runs again: give it a
	// moment to exit before deciding it lives.
	if err := sleep(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	deadline := time.Now().Add(n.opts.RecoveryBound)
	servers := len(n.c.ByRole(RoleTabletServer))
	for {
		for _, p := range n.c.Procs() {
			if !p.Alive() {
				if err := p.Restart(ctx); err != nil {
					return err
				}
			}
		}
		err := n.c.serving(ctx, servers)
		if err == nil {
			for _, p := range n.c.Procs() {
				if !p.Alive() {
					err = fmt.Errorf("%s exited", p.Name)
				}
			}
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster did not come back to full strength within %v: %w", n.opts.RecoveryBound, err)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// CheckCoverage checks that the served tablets of each table cover its
// key space exactly: the first starts at the empty row, each next one
// where the one before ends, the last ends at the end, and none is still
// recovering. A move or split in flight may leave a moment's gap, so it
// retries for up to RecoveryBound before it reports the last problem.
func (n *Nemesis) CheckCoverage(ctx context.Context, tables ...string) (int, error) {
	deadline := time.Now().Add(n.opts.RecoveryBound)
	for {
		total, err := n.coverage(ctx, tables)
		if err == nil || time.Now().After(deadline) {
			return total, err
		}
		if err := sleep(ctx, time.Second); err != nil {
			return total, err
		}
	}
}

func (n *Nemesis) coverage(ctx context.Context, tables []string) (int, error) {
	total := 0
	for _, table := range tables {
		resp, err := n.c.Tablets(ctx, table)
		if err != nil {
			return 0, err
		}
		if len(resp.Recovering) > 0 {
			return 0, fmt.Errorf("%s: %d tablets still recovering", table, len(resp.Recovering))
		}
		ts := resp.Tablets
		sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i].Start, ts[j].Start) < 0 })
		total += len(ts)
		var want []byte
		for i, t := range ts {
			if !bytes.Equal(t.Start, want) {
				kind := "a gap"
				if bytes.Compare(t.Start, want) < 0 {
					kind = "an overlap"
				}
				return 0, fmt.Errorf("%s: %s before tablet %d [%q, %q) on %s: the previous tablet ends at %q", table, kind, i, t.Start, t.End, t.Server, want)
			}
			if len(t.End) == 0 {
				if i != len(ts)-1 {
					return 0, fmt.Errorf("%s: tablet %d [%q, <end>) on %s is not the last", table, i, t.Start, t.Server)
				}
				want = nil
				break
			}
			want = t.End
		}
		if len(ts) == 0 || want != nil {
			return 0, fmt.Errorf("%s: the tablets end at %q, not at the end of the table (%d tablets)", table, want, len(ts))
		}
	}
	return total, nil
}
