package tests

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cellardb/cellar/coord"
	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
)

// chubbyReplica is one "cellar chubby -fault-injection" process.
type chubbyReplica struct {
	id     int
	cmd    *exec.Cmd
	out    *procReader
	faults string // its -http address
}

// startSkewableCell starts a three-replica cell whose replicas accept
// clock skew, with a 2s lease (and the default 20ms RTT, so that a loaded
// machine does not make the leader change), and returns them and the client addresses.
func startSkewableCell(t *testing.T, bin, dir string) ([]*chubbyReplica, string) {
	t.Helper()
	var peers, clients []string
	for id := 1; id <= 3; id++ {
		c := freeLoopbackPort(t)
		peers = append(peers, fmt.Sprintf("%d=%s/%s", id, freeLoopbackPort(t), c))
		clients = append(clients, c)
	}
	var reps []*chubbyReplica
	for id := 1; id <= 3; id++ {
		cmd, out, _ := startProcessLine(t, bin, "clients:", "chubby", "-id", fmt.Sprint(id), "-peers", strings.Join(peers, ","),
			"-data", filepath.Join(dir, fmt.Sprintf("chubby-%d", id)), "-lease", "2s", "-grace", "2s", "-rtt", "20ms", "-fault-injection")
		reps = append(reps, &chubbyReplica{id: id, cmd: cmd, out: out, faults: httpOf(t, out)})
	}
	return reps, strings.Join(clients, ",")
}

// leader returns the replica that most recently became the cell's master.
func leader(t *testing.T, reps []*chubbyReplica) *chubbyReplica {
	t.Helper()
	var best *chubbyReplica
	var bestAt string
	deadline := time.Now().Add(30 * time.Second)
	for best == nil {
		for _, r := range reps {
			for _, line := range strings.Split(string(r.out.All()), "\n") {
				if strings.Contains(line, `msg="master for epoch"`) {
					if at, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " "); at > bestAt {
						best, bestAt = r, at
					}
				}
			}
		}
		if best == nil {
			if time.Now().After(deadline) {
				t.Fatal("no replica became master")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return best
}

// lockDelayRound holds a lock with a lock-delay in a "cellar lock acquire"
// process, kills that process with SIGKILL, and times how long the test's
// own session then waits for the lock. It returns the wait, measured from
// the kill: the holder's session expires at the earliest at the kill, and
// the lock-delay runs from the expiry, so the wait must be at least the
// lock-delay, and at most lease + grace + lock-delay plus slack.
func lockDelayRound(t *testing.T, ctx context.Context, bin, addrs string, waiter *coordclient.Client, path string, delay, bound time.Duration, skew, afterKill func()) time.Duration {
	t.Helper()
	holder, _ := startProcess(t, bin, "holding the", "lock", "acquire", "-addr", addrs, "-lock-delay", delay.String(), path)
	h, _, err := waiter.OpenNode(ctx, path, coordclient.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	skew()
	// Under the skew, the lock is still held once.
	if ok, err := h.TryAcquire(ctx, coord.Exclusive); err != nil || ok {
		t.Fatalf("the lock is held by the holder process, yet TryAcquire = %v, %v", ok, err)
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	killed := time.Now()
	if afterKill != nil {
		afterKill()
	}
	actx, cancel := context.WithTimeout(ctx, bound+5*time.Second)
	defer cancel()
	if err := h.Acquire(actx, coord.Exclusive); err != nil {
		t.Fatalf("the lock was still unavailable %v after its holder died (bound %v): %v", time.Since(killed).Round(time.Millisecond), bound, err)
	}
	waited := time.Since(killed)
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return waited
}

// TestChaosClockSkew checks that leases and lock-delays use monotonic time
// only. It runs a three-replica Chubby cell, a master and two tablet
// servers as processes, all able to skew their wall clock, with eight
// writers inserting rows and one client overwriting and reading back a
// register row. Then:
//
//   - the Chubby leader's wall clock jumps 1h forward, and a lock whose
//     holder process is killed with a 4s lock-delay must stay unavailable
//     for at least 4s after the kill, and at most a bound;
//   - the leader's clock jumps back 2h (to 1h behind) and the same must
//     hold: a lock-delay neither ends early nor lasts an hour;
//   - the serving tablet server's clock jumps +1h and then -1h: writes
//     go on, the register row always reads the last value written (server
//     timestamps never go back within a tablet), and every acknowledged
//     insert survives;
//   - throughout, no session of a live process expires: no tablet server
//     loses its lock, and the test's own session never enters jeopardy;
//   - last, the skewed leader is killed inside a lock-delay: the new
//     master continues the cell's clock and the waiter gets the lock
//     within the bound.
func TestChaosClockSkew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildCellar(t)
	dir := t.TempDir()
	reps, addrs := startSkewableCell(t, bin, dir)
	c := &procCluster{t: t, bin: bin, dir: dir, chubby: addrs, servers: map[string]*procServer{}}
	statusAddr := freeLoopbackPort(t)
	cmd, _ := startProcess(t, bin, "active master", "master", "-listen", statusAddr, "-rpc", freeLoopbackPort(t), "-chubby", addrs,
		"-scan-interval", "100ms", "-dfs", filepath.Join(dir, "dfs"), "-no-balance")
	c.masters = append(c.masters, &procMaster{cmd: cmd, status: statusAddr})
	ts1, ts1Faults := c.startFaultyServer("ts1")
	eventually(t, "the master to see the server", func() bool { return len(c.view(c.masters[0])) == 1 })
	c.createTable(ctx, "t", "k2,k4,k6")
	ts2 := c.startServer("ts2")

	var evMu sync.Mutex
	var events []coord.EventType
	onEvent := func(who string) func(coordclient.Event) {
		return func(e coordclient.Event) {
			if e.Type == coord.EventJeopardy || e.Type == coord.EventSessionExpired || e.Type == coord.EventMasterFailover {
				t.Logf("%s's session: %v", who, e.Type)
			}
			evMu.Lock()
			events = append(events, e.Type)
			evMu.Unlock()
		}
	}
	svc := &coordlock.Service{Client: coordclient.Options{Addrs: strings.Split(addrs, ","), Principal: "test", OnEvent: onEvent("the kv client")}}
	sess, err := svc.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	c.sess = sess
	c.kv = kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}})
	defer c.kv.Close()
	waiter := coordclient.New(coordclient.Options{Addrs: strings.Split(addrs, ","), Principal: "waiter", OnEvent: onEvent("the waiter")})
	if err := waiter.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer waiter.Close(context.Background())

	load := c.startSetLoad(ctx, "t", 8, "w")
	defer load.end()
	reg := startRegister(ctx, c, "t", "k5-register")
	defer reg.end()
	load.waitFor(t, "before any skew", 200)

	// Lock-delays under a skewed Chubby leader. The bound: the holder's
	// lease (2s, with what its last KeepAlive had left) and grace (2s),
	// the 4s lock-delay, and slack for a loaded machine.
	const delay = 4 * time.Second
	const bound = delay + 4*time.Second + 6*time.Second
	// A leader change in a round (a loaded machine can cause one) adds an
	// election and the new master's fresh lease plus grace for every
	// session; the round is then repeated, to test a skewed leader.
	const failover = 6 * time.Second
	for _, skew := range []string{"1h", "-1h", "0s"} {
		for try := 1; ; try++ {
			lead := leader(t, reps)
			waited := lockDelayRound(t, ctx, bin, addrs, waiter, "/ls/local/skewlock", delay, bound+failover, func() {
				t.Logf("Chubby leader (replica %d): wall clock skew %s", lead.id, skew)
				fault(t, lead.faults, "clock?skew="+skew)
			}, nil)
			t.Logf("leader skewed %s: the lock was free %v after its holder's kill (lock-delay %v, bound %v)", skew, waited.Round(time.Millisecond), delay, bound)
			if waited < delay {
				t.Errorf("leader skewed %s: the lock was taken %v after its holder died, before its %v lock-delay ended", skew, waited, delay)
			}
			if now := leader(t, reps); now != lead {
				t.Logf("the Chubby leader changed from replica %d to %d during the round; bound widened by %v, round repeated", lead.id, now.id, failover)
				if waited > bound+failover {
					t.Errorf("leader skewed %s, then a failover: the lock stayed unavailable %v after its holder died, over the bound %v", skew, waited, bound+failover)
				}
				if try < 3 {
					continue
				}
				t.Errorf("the Chubby leader changed in %d rounds running", try)
			} else if waited > bound {
				t.Errorf("leader skewed %s: the lock stayed unavailable %v after its holder died, over the bound %v", skew, waited, bound)
			}
			break
		}
	}

	// The serving tablet server's clock jumps forward, then back.
	for _, skew := range []string{"1h", "-1h", "0s"} {
		t.Logf("tablet server %s: wall clock skew %s", ts1.id, skew)
		fault(t, ts1Faults, "clock?skew="+skew)
		load.waitFor(t, "with the tablet server skewed "+skew, 150)
		reg.waitFor(t, 20)
	}
	load.end()
	reg.end()
	if err := reg.failure(); err != nil {
		t.Fatal(err)
	}
	t.Logf("register: %d writes, each read back as the newest value", reg.count())
	load.attempted["k5-register"] = true // the register's row is no insert of the set
	c.checkSet(ctx, "t", load.acked, load.attempted, nil)

	evMu.Lock()
	for _, e := range events {
		if e == coord.EventJeopardy || e == coord.EventSessionExpired {
			t.Errorf("a live session saw %v during the skews", e)
		}
	}
	evMu.Unlock()
	for _, s := range []*procServer{ts1, ts2} {
		if out := string(s.out.All()); strings.Contains(out, "lost its lock") || strings.Contains(out, "session expired") {
			t.Errorf("tablet server %s lost its session or lock during the skews:\n%s", s.id, out)
		}
	}

	// Last, the skewed leader dies inside a lock-delay: 3s after the
	// holder's kill its session has ended at the leader (2s lease), and
	// the new master, with a correct clock, must continue the cell's
	// clock so that the lock-delay neither restarts nor hangs, and must
	// answer the waiter's resent Acquire (the failover adds up to the
	// election and a fresh lease plus grace).
	lead := leader(t, reps)
	waited := lockDelayRound(t, ctx, bin, addrs, waiter, "/ls/local/skewlock", delay, bound+failover, func() {
		t.Logf("Chubby leader (replica %d): wall clock skew -1h, then SIGKILL inside the lock-delay", lead.id)
		fault(t, lead.faults, "clock?skew=-1h")
	}, func() {
		time.Sleep(3 * time.Second)
		lead.cmd.Process.Signal(syscall.SIGKILL)
	})
	t.Logf("skewed leader killed inside the lock-delay: the lock was free %v after its holder's kill (bound %v)", waited.Round(time.Millisecond), bound+failover)
	if waited < delay {
		t.Errorf("the lock was taken %v after its holder died, before its %v lock-delay ended", waited, delay)
	}
	if waited > bound+failover {
		t.Errorf("the lock stayed unavailable %v after its holder died and the leader failed, over the bound %v", waited, bound+failover)
	}
}

// register is one client that writes increasing values to a row and reads
// each back: with server-assigned timestamps, the read must return the
// value just written, whatever the server's wall clock does.
type register struct {
	mu   sync.Mutex
	n    int
	err  error
	stop chan struct{}
	done chan struct{}
}

func startRegister(ctx context.Context, c *procCluster, table, row string) *register {
	r := &register{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for i := 1; ; i++ {
			select {
			case <-r.stop:
				return
			default:
			}
			v := fmt.Sprintf("%08d", i)
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := c.kv.Apply(wctx, table, &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{
				model.SetCell("f", []byte("v"), model.ServerTimestamp, []byte(v))}})
			if err != nil {
				cancel()
				time.Sleep(20 * time.Millisecond)
				continue // unknown outcome: the next write supersedes it
			}
			got, ok, err := c.kv.ReadRow(wctx, table, []byte(row), kvclient.Filter{})
			cancel()
			if err != nil {
				continue
			}
			if !ok || len(got.Cells) == 0 || string(got.Cells[0].Value) != v {
				r.mu.Lock()
				r.err = fmt.Errorf("register %s: wrote %s, then read %v (newest first)", row, v, got.Cells[:min(len(got.Cells), 3)])
				r.mu.Unlock()
				return
			}
			r.mu.Lock()
			r.n++
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *register) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *register) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *register) waitFor(t *testing.T, more int) {
	t.Helper()
	target := r.count() + more
	deadline := time.Now().Add(60 * time.Second)
	for r.count() < target {
		if err := r.failure(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the register made no progress (%d writes)", r.count())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *register) end() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}
