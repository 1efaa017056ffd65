package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellardb/cellar/coord"
	coordclient "github.com/cellardb/cellar/coord/client"
	coordpb "github.com/cellardb/cellar/coord/coordpb"
	"github.com/cellardb/cellar/tests/chaos"
	"github.com/cellardb/cellar/tests/chaos/netfault"
)

// leader asks every replica, at its own port (around the proxies), who
// the master is, and returns the id a majority names; 0 if none.
func (c *netCell) leader(ctx context.Context) uint64 {
	votes := map[uint64]int{}
	for id := range c.real {
		cc, err := grpc.NewClient("passthrough:///"+c.real[id][1], grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := coordpb.NewChubbyClient(cc).FindMaster(qctx, &coordpb.FindMasterRequest{})
		cancel()
		cc.Close()
		if err != nil {
			continue
		}
		for other, p := range c.client {
			if p.Addr() == resp.Master {
				votes[other]++
			}
		}
	}
	for id, n := range votes {
		if n > len(c.real)/2 {
			return id
		}
	}
	return 0
}

// raftFault applies f to the Raft connections from replica from to
// replica to: a rule for from on to's Raft proxy.
func (c *netCell) raftFault(from, to uint64, f netfault.Fault) {
	c.raft[to].SetFor(replicaName(from), f)
}

// healRaft lifts every Raft fault.
func (c *netCell) healRaft() {
	for _, p := range c.raft {
		p.HealAll()
	}
}

// lockHold is an interval of validated ownership of the lock: the
// holder's LockHeld was true at both ends (From is read after the first
// check that said so, To before the last), so it lies within the time
// the holder really owned the lock.
type lockHold struct {
	who      string
	seq      coord.Sequencer
	from, to time.Time
}

type lockLog struct {
	mu    sync.Mutex
	holds []lockHold
	seqs  []coord.Sequencer
}

// hold keeps the lock h just acquired until max has passed or it is no
// longer held, and records the validated interval.
func (l *lockLog) hold(ctx context.Context, who string, h *coordclient.Handle, max time.Duration) {
	seq, err := h.GetSequencer()
	if err != nil {
		return
	}
	l.mu.Lock()
	l.seqs = append(l.seqs, seq)
	l.mu.Unlock()
	if !h.LockHeld() {
		return
	}
	from := time.Now()
	to := from
	for time.Since(from) < max && ctx.Err() == nil {
		before := time.Now()
		if !h.LockHeld() {
			break
		}
		to = before
		time.Sleep(2 * time.Millisecond)
	}
	if to.After(from) {
		l.mu.Lock()
		l.holds = append(l.holds, lockHold{who: who, seq: seq, from: from, to: to})
		l.mu.Unlock()
	}
}

// check fails the test if two validated holds overlap or if lock
// generations do not grow with time.
func (l *lockLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	holds := slices.Clone(l.holds)
	l.mu.Unlock()
	sort.Slice(holds, func(i, j int) bool { return holds[i].from.Before(holds[j].from) })
	for i := 1; i < len(holds); i++ {
		a, b := holds[i-1], holds[i]
		if !a.to.Before(b.from) {
			t.Fatalf("the lock was held twice: %s (generation %d) until %s, %s (generation %d) from %s",
				a.who, a.seq.LockGeneration, a.to.Format(time.StampMicro), b.who, b.seq.LockGeneration, b.from.Format(time.StampMicro))
		}
		if a.seq.LockGeneration >= b.seq.LockGeneration {
			t.Fatalf("lock generation %d (%s) after generation %d (%s)", b.seq.LockGeneration, b.who, a.seq.LockGeneration, a.who)
		}
	}
}

// checkStale has the cell check every sequencer older than the newest:
// each must be refused as stale.
func (l *lockLog) checkStale(ctx context.Context, t *testing.T, c *coordclient.Client) int {
	t.Helper()
	l.mu.Lock()
	seqs := slices.Clone(l.seqs)
	l.mu.Unlock()
	var newest uint64
	for _, s := range seqs {
		newest = max(newest, s.LockGeneration)
	}
	n := 0
	for _, s := range seqs {
		if s.LockGeneration == newest {
			continue
		}
		if err := c.CheckSequencer(ctx, s); !errors.Is(err, coord.ErrStaleSequencer) {
			t.Fatalf("sequencer of generation %d (newest %d) checked: %v, want stale", s.LockGeneration, newest, err)
		}
		n++
	}
	return n
}

// failoverMark stands for a MASTER_FAILOVER event in an eventLog, and
// eventsLostMark for an EVENTS_LOST one.
const (
	failoverMark   = "<failover>"
	eventsLostMark = "<events-lost>"
)

// eventLog is what a watcher heard, in order: the names of children
// added, and a mark for each failover or events-lost event.
type eventLog struct {
	mu    sync.Mutex
	heard []string
}

func (e *eventLog) add(ev coordclient.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Type {
	case coord.EventChildAdded:
		e.heard = append(e.heard, path.Base(ev.Name))
	case coord.EventMasterFailover:
		e.heard = append(e.heard, failoverMark)
	case coord.EventEventsLost:
		e.heard = append(e.heard, eventsLostMark)
	}
}

// checkEvents compares what a watcher heard with the children the
// directory ended up with (sorted, named in creation order). Issue 9 asks
// more than the Chubby paper, whose failover event only warns that events
// may have been lost (section 2.9): every child must be heard of, exactly
// once and in order, across failovers, and nothing that was not created.
// The cell keeps events in its replicated state for that (coord/fsm), so
// an EVENTS_LOST event, which says a session's queue overflowed, fails the
// check too. It returns the children not heard of, in order, for the
// caller to explain, and counts the failover events.
func checkEvents(t *testing.T, heard, listed []string) (lost []string, failovers int) {
	t.Helper()
	var children []string
	for _, h := range heard {
		switch h {
		case failoverMark:
			failovers++
		case eventsLostMark:
			t.Errorf("the watcher was told that its events were lost (its queue overflowed)")
		default:
			children = append(children, h)
		}
	}
	for i := 1; i < len(children); i++ {
		if children[i] <= children[i-1] {
			t.Fatalf("child-added events out of order or repeated: %s after %s", children[i], children[i-1])
		}
	}
	lost, extra := diffSorted(listed, children)
	if len(extra) > 0 {
		t.Fatalf("the watcher heard of children that do not exist: %v", extra)
	}
	return lost, failovers
}

// TestChubbyLeaderFaults runs a three-replica cell, each replica's Raft
// and client ports behind proxies, with real clients of the cell, and
// faults the Raft links of the master's replica in four ways while the
// clients stay connected to every replica:
//
//   - partition: the leader and its followers cannot reach each other;
//   - deaf leader: a one-way blackhole, the followers' bytes never reach
//     the leader;
//   - mute leader: the other way, the leader's bytes never reach them;
//   - slow leader: 150 ms added each way on its links.
//
// After each of the first three a new master must be elected within a
// stated bound. Throughout, the test checks Chubby's invariants: a lock
// is never held by two sessions at once (validated holds of three
// contending sessions and of one whose session is cut off while it holds
// the lock), older sequencers are refused, an ephemeral file vanishes
// after its session expires, and a watcher hears of every child created
// in a directory, in order, without gaps or duplicates, across the
// failovers.
func TestChubbyLeaderFaults(t *testing.T) {
	seed := chaos.Seed(t, 9)
	const (
		failoverBound = 10 * time.Second // fault to a new master
		// Ephemeral file gone after its session was cut: the lease and,
		// across a failover, the grace the new master gives, plus the
		// election.
		expiryBound = 20 * time.Second
	)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildCellar(t)
	cell := startNetCell(t, bin, 3, "3s", "3s")
	addrs := strings.Split(cell.addrs(), ",")
	newClient := func(who string, opts coordclient.Options) *coordclient.Client {
		t.Helper()
		opts.Addrs, opts.Principal = addrs, who
		if opts.Grace == 0 {
			opts.Grace = 15 * time.Second
		}
		c := coordclient.New(opts)
		if err := c.Open(ctx); err != nil {
			t.Fatalf("session of %s: %v", who, err)
		}
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c.Close(cctx)
		})
		return c
	}
	admin := newClient("admin", coordclient.Options{})
	for _, dir := range []string{"/ls/local/chaos", "/ls/local/chaos/ev", "/ls/local/chaos/eph"} {
		h, _, err := admin.OpenNode(ctx, dir, coordclient.OpenOptions{Mode: coord.ModeWrite, Create: true, Directory: true})
		if err != nil {
			t.Fatal(err)
		}
		h.Close(ctx)
	}
	const lockName = "/ls/local/chaos/lock"
	ephDir, _, err := admin.OpenNode(ctx, "/ls/local/chaos/eph", coordclient.OpenOptions{Mode: coord.ModeRead})
	if err != nil {
		t.Fatal(err)
	}

	load, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	var locks lockLog

	// Three sessions contend for the lock, each holding it a little.
	for i := range 3 {
		who := fmt.Sprintf("locker%d", i)
		c := newClient(who, coordclient.Options{})
		r := rand.New(rand.NewPCG(seed, uint64(i+1)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, _, err := c.OpenNode(ctx, lockName, coordclient.OpenOptions{Mode: coord.ModeWrite, Create: true})
			if err != nil {
				t.Errorf("%s: open the lock: %v", who, err)
				return
			}
			for load.Err() == nil {
				actx, acancel := context.WithTimeout(load, 3*time.Second)
				err := h.Acquire(actx, coord.Exclusive)
				acancel()
				if err != nil {
					if errors.Is(err, coord.ErrSessionExpired) {
						t.Errorf("%s: session expired: %v", who, err)
						return
					}
					continue
				}
				locks.hold(load, who, h, time.Duration(5+r.IntN(40))*time.Millisecond)
				rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
				h.Release(rctx)
				rcancel()
				time.Sleep(time.Duration(r.IntN(10)) * time.Millisecond)
			}
		}()
	}

	// A watcher of the events directory, and a writer that creates its
	// children one after another.
	var events eventLog
	watcher := newClient("watcher", coordclient.Options{OnEvent: events.add})
	wh, _, err := watcher.OpenNode(ctx, "/ls/local/chaos/ev", coordclient.OpenOptions{Mode: coord.ModeRead, Events: coord.Mask(coord.EventChildAdded)})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close(ctx)
	writer := newClient("writer", coordclient.Options{})
	var wmu sync.Mutex
	var created []time.Time             // when each acknowledged create returned
	createdAt := map[string]time.Time{} // the same, by child name
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; load.Err() == nil; i++ {
			octx, ocancel := context.WithTimeout(load, 5*time.Second)
			h, _, err := writer.OpenNode(octx, fmt.Sprintf("/ls/local/chaos/ev/%06d", i), coordclient.OpenOptions{Mode: coord.ModeWrite, Create: true})
			ocancel()
			if err == nil {
				wmu.Lock()
				created = append(created, time.Now())
				createdAt[fmt.Sprintf("%06d", i)] = created[len(created)-1]
				wmu.Unlock()
				h.Close(ctx)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	progress := func() int { wmu.Lock(); defer wmu.Unlock(); return len(created) }

	type phase struct {
		name     string
		failover bool
		apply    func(l uint64, followers []uint64)
	}
	phases := []phase{
		{"partition", true, func(l uint64, fs []uint64) {
			for _, f := range fs {
				cell.raftFault(l, f, netfault.Partition)
				cell.raftFault(f, l, netfault.Partition)
			}
		}},
		{"deaf leader (one-way: followers to leader blackholed)", true, func(l uint64, fs []uint64) {
			for _, f := range fs {
				cell.raftFault(f, l, netfault.OneWay(false))
			}
		}},
		{"mute leader (one-way: leader to followers blackholed)", true, func(l uint64, fs []uint64) {
			for _, f := range fs {
				cell.raftFault(l, f, netfault.OneWay(false))
			}
		}},
		{"slow leader (150ms each way)", false, func(l uint64, fs []uint64) {
			for _, f := range fs {
				cell.raftFault(l, f, netfault.Latency(150*time.Millisecond))
				cell.raftFault(f, l, netfault.Latency(150*time.Millisecond))
			}
		}},
	}
	// Faults start at a seeded moment, so that they hit the workload at
	// different points.
	pause := func() { time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond) }
	eventually(t, "a master", func() bool { return cell.leader(ctx) != 0 })
	pause()
	var summary []string
	var faultTimes []time.Time
	for n, ph := range phases {
		l := cell.leader(ctx)
		if l == 0 {
			eventually(t, "a master", func() bool { l = cell.leader(ctx); return l != 0 })
		}
		var followers []uint64
		for id := range cell.raft {
			if id != l {
				followers = append(followers, id)
			}
		}
		// A session that will be cut off from the cell while it holds
		// the lock and an ephemeral file: its own proxies in front of the
		// cell's client proxies.
		cutProxies := map[string]*netfault.Proxy{}
		for _, a := range addrs {
			cutProxies[a] = startNetProxy(t, a, nil)
		}
		var d net.Dialer
		doomed := newClient(fmt.Sprintf("doomed%d", n), coordclient.Options{Grace: 3 * time.Second,
			Dialer: func(ctx context.Context, addr string) (net.Conn, error) {
				return d.DialContext(ctx, "tcp", cutProxies[addr].Addr())
			}})
		eph := fmt.Sprintf("/ls/local/chaos/eph/%d", n)
		if _, _, err := doomed.OpenNode(ctx, eph, coordclient.OpenOptions{Mode: coord.ModeWrite, Create: true, Ephemeral: true}); err != nil {
			t.Fatal(err)
		}
		dh, _, err := doomed.OpenNode(ctx, lockName, coordclient.OpenOptions{Mode: coord.ModeWrite})
		if err != nil {
			t.Fatal(err)
		}
		if err := dh.Acquire(ctx, coord.Exclusive); err != nil {
			t.Fatal(err)
		}
		doomedDone := make(chan struct{})
		go func() {
			defer close(doomedDone)
			locks.hold(ctx, fmt.Sprintf("doomed%d", n), dh, time.Minute)
		}()

		before := progress()
		faulted := time.Now()
		faultTimes = append(faultTimes, faulted)
		t.Logf("%s: master is replica %d", ph.name, l)
		ph.apply(l, followers)
		// The rules must have caught the replicas' live Raft connections,
		// also those made before their pids were known.
		for _, f := range followers {
			if cell.raft[f].Open()[replicaName(l)] == 0 || cell.raft[l].Open()[replicaName(f)] == 0 {
				t.Fatalf("%s: no Raft connection between replicas %d and %d to fault: %v, %v", ph.name, l, f, cell.raft[f].Open(), cell.raft[l].Open())
			}
		}
		for _, p := range cutProxies {
			p.Set(netfault.Partition)
		}
		var newLeader uint64
		if ph.failover {
			eventually(t, ph.name+": a new master", func() bool {
				newLeader = cell.leader(ctx)
				return newLeader != 0 && newLeader != l
			})
			if d := time.Since(faulted); d > failoverBound {
				t.Fatalf("%s: a new master after %v, more than %v", ph.name, d, failoverBound)
			}
		}
		elected := time.Since(faulted)
		// Looked for in a listing of its directory: a handle on the file
		// itself would keep it alive.
		eventually(t, ph.name+": the ephemeral file of the cut-off session to vanish", func() bool {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			entries, err := ephDir.ReadDir(rctx)
			rcancel()
			return err == nil && !slices.ContainsFunc(entries, func(e coordclient.DirEntry) bool { return path.Base(e.Name) == path.Base(eph) })
		})
		vanished := time.Since(faulted)
		if vanished > expiryBound {
			t.Fatalf("%s: the ephemeral file vanished %v after the cut, more than %v", ph.name, vanished, expiryBound)
		}
		<-doomedDone // its lock counts as held no longer
		eventually(t, ph.name+": the writer to make progress", func() bool { return progress() > before+20 })
		cell.healRaft()
		healed := time.Since(faulted)
		eventually(t, ph.name+": a master after the heal", func() bool { return cell.leader(ctx) != 0 })
		stale := locks.checkStale(ctx, t, admin)
		// The unavailability: the longest stretch without a create that
		// ended after the fault began.
		var window time.Duration
		wmu.Lock()
		for i := 1; i < len(created); i++ {
			if created[i].After(faulted) {
				window = max(window, created[i].Sub(created[i-1]))
			}
		}
		wmu.Unlock()
		master := "no failover"
		if now := cell.leader(ctx); !ph.failover && now != l {
			master = fmt.Sprintf("master %d -> %d (not required)", l, now)
		}
		if newLeader != 0 {
			master = fmt.Sprintf("master %d -> %d after %v", l, newLeader, elected.Round(time.Millisecond))
		}
		line := fmt.Sprintf("%s: %s; ephemeral file gone after %v; healed after %v; unavailability %v; %d stale sequencers refused",
			ph.name, master, vanished.Round(time.Millisecond), healed.Round(time.Millisecond), window.Round(time.Millisecond), stale)
		t.Log(line)
		summary = append(summary, line)
		pause()
	}
	stopLoad()
	wg.Wait()

	locks.check(t)
	// Every child in the directory, and nothing else, was heard of once,
	// in the order of creation.
	entries, err := wh.ReadDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range entries {
		listed = append(listed, path.Base(e.Name))
	}
	sort.Strings(listed)
	// The last events may still be on their way to the watcher.
	for deadline := time.Now().Add(10 * time.Second); len(listed) > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		events.mu.Lock()
		done := slices.Contains(events.heard, listed[len(listed)-1])
		events.mu.Unlock()
		if done {
			break
		}
	}
	events.mu.Lock()
	heard := slices.Clone(events.heard)
	events.mu.Unlock()
	lost, failovers := checkEvents(t, heard, listed)
	if len(lost) > 0 {
		var when []string
		for _, m := range lost {
			at, ok := createdAt[m]
			if !ok {
				when = append(when, m+": create not acknowledged")
				continue
			}
			// Relative to the fault before it.
			var f time.Time
			for _, ft := range faultTimes {
				if ft.Before(at) {
					f = ft
				}
			}
			if f.IsZero() {
				when = append(when, m+": acknowledged before any fault")
			} else {
				when = append(when, fmt.Sprintf("%s: acknowledged %v after a fault began", m, at.Sub(f).Round(time.Millisecond)))
			}
		}
		t.Errorf("LOST EVENTS: the watcher never heard of %d of %d children (%s)", len(lost), len(listed), strings.Join(when, "; "))
	}
	// The longest stretch without an acknowledged create.
	var window time.Duration
	for i := 1; i < len(created); i++ {
		window = max(window, created[i].Sub(created[i-1]))
	}
	locks.mu.Lock()
	holds := len(locks.holds)
	locks.mu.Unlock()
	t.Logf("faults: %d on the master's Raft links; %d validated lock holds, never two at once; %d children created, %d heard of in order without duplicates, %d lost (%d failover events); longest stretch without a create %v",
		len(phases), holds, len(listed), len(listed)-len(lost), len(lost), failovers, window.Round(time.Millisecond))
	if holds < 20 || len(listed) < 50 {
		t.Fatalf("too little work: %d lock holds, %d children", holds, len(listed))
	}
}

// diffSorted returns what is in a but not b, and in b but not a, of two
// sorted lists.
func diffSorted(a, b []string) (onlyA, onlyB []string) {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if _, ok := slices.BinarySearch(a, x); !ok {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}
