package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/coord"
	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
	"github.com/cellardb/cellar/ops/coordlock"
)

// masterLockDelay is the -lock-delay of the test's masters (the default).
const masterLockDelay = coordlock.DefaultMasterLockDelay

// zombieSplitKey is where an operator asks the paused master to split.
const zombieSplitKey = "k1"

// takeoverBound bounds the time from the active master's SIGSTOP until
// the standby holds the master lock: the session lease (2 s), the grace a
// lapsing session gets (2 s), the lock-delay (1 s), and slack for a busy
// machine.
const takeoverBound = 20 * time.Second

// TestChaosSequencers checks Chubby's sequencers in a cluster of
// processes (issue 9: "sequencers from an old lock generation are refused
// by tablet servers and METADATA writes"). Under a write load it pauses
// the active master with SIGSTOP past its lease, so that the standby takes
// the master lock over with a newer generation. Then, while the old
// master is still paused:
//
//   - a METADATA mutation (the deletion of a live tablet's row) carrying
//     the old master's sequencer is refused;
//   - UnloadTablet of a served tablet and LoadTablet of the same tablet on
//     the other server (which would serve it twice), carrying the old
//     sequencer, are refused;
//   - once the new master has reached a server (an operator's compaction
//     through it), the old sequencer is refused at once, the refusal
//     naming both generations.
//
// The paused master is then woken with an operator's split waiting in its
// socket. It must stop without changing anything: the split is refused by
// the tablet server (or fails before it reaches one, if the master stops
// first), any other call it makes is refused, and it logs no assignment,
// move, merge or table change before it exits. At the end every
// acknowledged write is readable, METADATA's rows of the table tile its
// key space, and each tablet is served by exactly one server.
func TestChaosSequencers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	c := startProcCluster(t, 0, 2)
	// The masters are started here rather than by startProcCluster, to
	// read their logs; -no-balance keeps tablets where they are, so that
	// the test can tell a legitimate move from a zombie's.
	startMaster := func(ready string) (*procMaster, *procReader, string) {
		statusAddr, rpc := freeLoopbackPort(t), freeLoopbackPort(t)
		cmd, out, _ := startProcessLine(t, c.bin, ready, "master", "-listen", statusAddr, "-rpc", rpc, "-chubby", c.chubby,
			"-scan-interval", "100ms", "-dfs", filepath.Join(c.dir, "dfs"), "-no-balance", "-lock-delay", masterLockDelay.String())
		m := &procMaster{cmd: cmd, status: statusAddr}
		c.masters = append(c.masters, m)
		return m, out, rpc
	}
	zombie, zombieOut, zombieRPC := startMaster("active master")
	standby, _, _ := startMaster("standby")
	eventually(t, "the master to see the servers", func() bool { return len(c.view(zombie)) == 2 })
	c.createTable(ctx, "t", "k3,k6")
	l := c.startLoad(ctx, "t", 2)
	defer l.end()
	l.waitFor(t, "before the pause", 100)

	cell := coordclient.New(coordclient.Options{Addrs: []string{c.chubby}, Principal: "test"})
	if err := cell.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer cell.Close(context.Background())
	old := masterSequencer(ctx, t, cell)
	t.Logf("active master's sequencer: %s", old)

	// A tablet of t and the two servers: its own and the other one.
	stubs := map[string]pb.TabletServerClient{}
	var ids []string
	for id, s := range c.servers {
		cc, err := grpc.NewClient("passthrough:///"+s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		stubs[id] = pb.NewTabletServerClient(cc)
		ids = append(ids, id)
	}
	sort.Strings(ids)
	owner, victim := tabletOf(ctx, t, stubs, ids, "t")
	other := ids[0]
	if other == owner {
		other = ids[1]
	}
	t.Logf("tablet %d of t, %s, is on %s", victim.Id, rangeString(victim.Range), owner)
	metaKey := model.MetaKey("t", victim.Range.GetEnd())
	row, found, err := c.kv.ReadRow(ctx, kvclient.MetaTable, metaKey, kvclient.Filter{})
	if err != nil || !found {
		t.Fatalf("the METADATA row of the tablet: %v, found %v", err, found)
	}
	desc, err := model.ParseTabletDescriptor(row)
	if err != nil {
		t.Fatal(err)
	}
	descJSON, _ := json.Marshal(desc)
	schema, ok, err := c.sess.ReadFile(ctx, "/ls/local/cellar/schema/t")
	if err != nil || !ok {
		t.Fatalf("the schema of t: %v, %v", err, ok)
	}

	// Pause the active master past its lease; the standby takes over.
	zombie.cmd.Process.Signal(syscall.SIGSTOP)
	waitStopped(t, zombie.cmd.Process.Pid)
	stopped := time.Now()
	pausedOut := len(zombieOut.All()) // a stopped process writes nothing more
	eventually(t, "the standby to take the master lock", func() bool {
		out, err := lockCLI(t, c.bin, c.chubby, "", "cat", "/ls/local/cellar/master")
		return err == nil && strings.HasPrefix(out, "127.0.0.1:") && !strings.Contains(out, zombieRPC)
	})
	takeover := time.Since(stopped)
	if takeover > takeoverBound {
		t.Fatalf("the standby took over %v after the pause; the bound is %v", takeover, takeoverBound)
	}
	cur := masterSequencer(ctx, t, cell)
	if !cur.Newer(old) {
		t.Fatalf("the new master's sequencer %s is not newer than the old one's %s", cur, old)
	}
	t.Logf("the standby took the master lock %v after the pause: sequencer %s", takeover.Round(time.Millisecond), cur)
	eventually(t, "the new master to see the servers", func() bool { return len(c.view(standby)) == 2 })

	// (a) The old sequencer, while its master is paused.
	oldCtx := kvclient.WithSequencer(ctx, old)
	stale := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: c.sess},
		DialOptions: kvclient.SequencerDialOptions(func() (kvclient.Sequencer, bool) { return old, true })})
	defer stale.Close()
	refusals := 0
	expectRefused := func(what string, err error, names ...uint64) {
		t.Helper()
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("%s with the old sequencer: want a refusal, got %v", what, err)
		}
		for _, g := range names {
			if !strings.Contains(err.Error(), fmt.Sprintf("generation %d", g)) {
				t.Fatalf("%s: the refusal does not name generation %d: %v", what, g, err)
			}
		}
		refusals++
		t.Logf("%s with the old sequencer: %v", what, status.Convert(err).Message())
	}
	err = stale.Apply(ctx, kvclient.MetaTable, &model.RowMutation{Row: metaKey, Mutations: []model.Mutation{model.DeleteRow()}})
	expectRefused("deleting the tablet's METADATA row", err)
	_, err = stubs[owner].UnloadTablet(oldCtx, &pb.UnloadTabletRequest{Table: "t", Id: victim.Id})
	expectRefused("UnloadTablet on "+owner, err)
	_, err = stubs[other].LoadTablet(oldCtx, &pb.LoadTabletRequest{Schema: schema, Descriptor_: descJSON, Event: "zombie load"})
	expectRefused("LoadTablet on "+other, err)

	// The new master reaches the tablet's server (a compaction of t on
	// an operator's request); from then on the server refuses the old
	// generation without asking the cell.
	if out, err := exec.CommandContext(ctx, c.bin, "admin", "compact", "-chubby", c.chubby, "-timeout", "20s", "t").CombinedOutput(); err != nil {
		t.Fatalf("admin compact through the new master: %v\n%s", err, out)
	}
	_, err = stubs[owner].UnloadTablet(oldCtx, &pb.UnloadTabletRequest{Table: "t", Id: victim.Id})
	expectRefused("UnloadTablet on "+owner+" after the new master's compaction", err, old.Generation, cur.Generation)

	// Nothing changed: the row is there and the tablet served where it was.
	if _, found, err := c.kv.ReadRow(ctx, kvclient.MetaTable, metaKey, kvclient.Filter{}); err != nil || !found {
		t.Fatalf("the tablet's METADATA row after the refused deletion: %v, found %v", err, found)
	}
	if o, tb := tabletOf(ctx, t, stubs, ids, "t", victim.Range); o != owner || tb.Id != victim.Id {
		t.Fatalf("after the refused calls the tablet is tablet %d on %s; it was tablet %d on %s", tb.Id, o, victim.Id, owner)
	}
	l.waitFor(t, "after the takeover", 100)

	// (b) Wake the old master: it must stop without acting. An
	// operator's split sent to it while it is paused waits in its socket,
	// so that it has something to do the moment it wakes.
	mcc, err := grpc.NewClient("passthrough:///"+zombieRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer mcc.Close()
	zombieSplit := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := masterpb.NewMasterClient(mcc).SplitTablet(sctx, &masterpb.SplitTabletRequest{Table: "t", Key: []byte(zombieSplitKey)})
		zombieSplit <- err
	}()
	time.Sleep(300 * time.Millisecond) // for the request to reach the paused process
	beforeWake := serverRefusals(c)
	zombie.cmd.Process.Signal(syscall.SIGCONT)
	woke := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- zombie.cmd.Wait() }()
	select {
	case err := <-exited:
		t.Logf("the woken master exited %v after SIGCONT: %v", time.Since(woke).Round(time.Millisecond), err)
	case <-time.After(30 * time.Second):
		t.Fatal("the woken master did not stop within 30 s")
	}
	after := string(zombieOut.All()[pausedOut:])
	if !strings.Contains(after, "lost the master lock") {
		t.Fatalf("the woken master did not say it lost the master lock:\n%s", after)
	}
	for _, act := range []string{`msg="tablet loaded"`, `msg="moved tablet"`, `msg="merged tablets"`, `msg="split a tablet on request"`,
		`msg="created table"`, `msg="deleted table"`, `msg="changed the schema"`, `msg="the log of a dead server is partitioned"`, `msg="file GC deleted`} {
		if strings.Contains(after, act) {
			t.Fatalf("the woken master acted (%s) after it lost its lock:\n%s", act, after)
		}
	}
	select {
	case err := <-zombieSplit:
		switch {
		case err == nil:
			t.Fatalf("the woken master split t at %q after it lost its lock", zombieSplitKey)
		case status.Code(err) == codes.FailedPrecondition && strings.Contains(err.Error(), "refused"):
			t.Logf("the split sent to the paused master was refused by the tablet server: %v", status.Convert(err).Message())
		default:
			t.Logf("the split sent to the paused master failed before it reached a tablet server: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the split sent to the paused master did not end")
	}
	zombieRefused := serverRefusals(c) - beforeWake
	t.Logf("the woken master's calls the servers refused: %d", zombieRefused)

	// The cluster stayed correct.
	l.waitFor(t, "after the old master stopped", 100)
	l.end()
	c.checkAcked(ctx, "t", l)
	for _, r := range checkTiling(ctx, t, c, stubs, ids, "t") {
		if strings.Contains(r, fmt.Sprintf("%q", zombieSplitKey)) {
			t.Fatalf("METADATA has a tablet boundary at the woken master's split key: %s", r)
		}
	}
	t.Logf("summary: writes acknowledged %d; takeover %v (bound %v); refusals of the old sequencer %d by the test's calls, %d of the woken master's; run %v",
		l.n.Load(), takeover.Round(time.Millisecond), takeoverBound, refusals, zombieRefused, time.Since(start).Round(time.Second))
}

// masterSequencer reads the master lock's current sequencer from the cell.
func masterSequencer(ctx context.Context, t *testing.T, cell *coordclient.Client) kvclient.Sequencer {
	t.Helper()
	const path = "/ls/local/cellar/master"
	name, err := coord.ParseName(path)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := cell.OpenNode(ctx, path, coordclient.OpenOptions{Mode: coord.ModeRead})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	st, err := h.GetStat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.LockMode != coord.Exclusive {
		t.Fatalf("%s is not locked (%v)", path, st.LockMode)
	}
	return kvclient.Sequencer{Path: name.Path, Instance: st.Instance, Generation: st.LockGeneration, LockDelay: masterLockDelay}
}

// tabletOf returns a tablet of table and its server, by the servers' own
// lists: the first one in key order, or the one whose range is want.
func tabletOf(ctx context.Context, t *testing.T, stubs map[string]pb.TabletServerClient, ids []string, table string, want ...*pb.RowRange) (string, *pb.TabletInfo) {
	t.Helper()
	var best *pb.TabletInfo
	owner := ""
	for _, id := range ids {
		resp, err := stubs[id].ListTablets(ctx, &pb.ListTabletsRequest{})
		if err != nil {
			t.Fatalf("ListTablets on %s: %v", id, err)
		}
		for _, tb := range resp.Tablets {
			if tb.Table != table {
				continue
			}
			if len(want) > 0 {
				if bytes.Equal(tb.Range.GetStart(), want[0].GetStart()) && bytes.Equal(tb.Range.GetEnd(), want[0].GetEnd()) {
					return id, tb
				}
				continue
			}
			if best == nil || bytes.Compare(tb.Range.GetStart(), best.Range.GetStart()) < 0 {
				best, owner = tb, id
			}
		}
	}
	if best == nil {
		t.Fatalf("no server serves a tablet of %q (%v)", table, want)
	}
	return owner, best
}

// serverRefusals counts the refusals of masters' calls in the tablet
// servers' logs.
func serverRefusals(c *procCluster) int {
	n := 0
	for _, s := range c.servers {
		n += strings.Count(string(s.out.All()), `msg="refused a master's call"`)
	}
	return n
}

// checkTiling checks that METADATA's rows of table cover its key space
// without gaps or overlaps, and that the servers serve exactly those
// ranges, each once.
func checkTiling(ctx context.Context, t *testing.T, c *procCluster, stubs map[string]pb.TabletServerClient, ids []string, table string) []string {
	t.Helper()
	sc := c.kv.Scan(ctx, kvclient.MetaTable, model.RowRange{Start: model.MetaKey(table, nil)[:len(table)+1], End: append([]byte(table), 1)}, kvclient.Filter{}, 0)
	var rows []string
	next := ""
	for sc.Next() {
		d, err := model.ParseTabletDescriptor(sc.Row())
		if err != nil {
			t.Fatal(err)
		}
		if string(d.Start) != next {
			t.Fatalf("METADATA rows of %q: a row starts at %q, the previous ended at %q", table, d.Start, next)
		}
		rows = append(rows, fmt.Sprintf("[%q,%q)", d.Start, d.End))
		next = string(d.End)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || next != "" {
		t.Fatalf("METADATA rows of %q do not reach the end of the key space: %v", table, rows)
	}
	var served []string
	for _, id := range ids {
		resp, err := stubs[id].ListTablets(ctx, &pb.ListTabletsRequest{})
		if err != nil {
			t.Fatalf("ListTablets on %s: %v", id, err)
		}
		for _, tb := range resp.Tablets {
			if tb.Table == table {
				served = append(served, rangeString(tb.Range))
			}
		}
	}
	sort.Strings(served)
	want := append([]string(nil), rows...)
	sort.Strings(want)
	if strings.Join(served, " ") != strings.Join(want, " ") {
		t.Fatalf("served tablets of %q %v; METADATA has %v", table, served, want)
	}
	t.Logf("METADATA rows of %q tile its key space, each served once: %v", table, rows)
	return rows
}

func rangeString(r *pb.RowRange) string {
	return fmt.Sprintf("[%q,%q)", r.GetStart(), r.GetEnd())
}
