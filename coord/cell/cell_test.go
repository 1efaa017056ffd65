package cell_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/coord/client"
)

// testCell is an in-process cell of n replicas on loopback.
type testCell struct {
	t        testing.TB
	name     string
	peers    map[uint64]cell.Peer
	dirs     map[uint64]string
	replicas map[uint64]*cell.Replica
	opts     func(*cell.Options)
}

// handedOut holds the ports freePort gave to cells still running, so two
// replicas (or a replica's Raft and client listeners) never get the same
// one while the first is down for a restart.
var handedOut struct {
	sync.Mutex
	ports map[string]bool
}

// freePort returns a loopback address with a port nobody listens on now.
// It picks below Linux's ephemeral range (32768 and up) so that no
// outgoing connection takes the port before the replica binds it, which
// matters most when a killed replica restarts on its old port. The range,
// 10000-19999, is this package's alone: package tests picks from
// 20000-25999 and tests/chaos from 26000-31999, and make test runs them
// at the same time as this one.
func freePort(t testing.TB) string {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[string]bool{}
	}
	for range 1000 {
		addr := fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(10000))
		if handedOut.ports[addr] {
			continue
		}
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			handedOut.ports[addr] = true
			t.Cleanup(func() {
				handedOut.Lock()
				delete(handedOut.ports, addr)
				handedOut.Unlock()
			})
			return addr
		}
	}
	t.Fatal("no free port in 10000-19999")
	return ""
}

func newTestCell(t testing.TB, n int, opts func(*cell.Options)) *testCell {
	tc := &testCell{t: t, name: "test", peers: map[uint64]cell.Peer{}, dirs: map[uint64]string{},
		replicas: map[uint64]*cell.Replica{}, opts: opts}
	for id := uint64(1); id <= uint64(n); id++ {
		tc.peers[id] = cell.Peer{RaftAddr: freePort(t), ClientAddr: freePort(t)}
		tc.dirs[id] = t.TempDir()
	}
	for id := range tc.peers {
		tc.start(id)
	}
	t.Cleanup(func() {
		for id := range tc.replicas {
			tc.stop(id)
		}
	})
	return tc
}

func (tc *testCell) start(id uint64) {
	o := cell.Options{Cell: tc.name, ReplicaID: id, Peers: tc.peers, Dir: tc.dirs[id], RTT: 10 * time.Millisecond,
		Lease: 2 * time.Second, Grace: 4 * time.Second, Logger: slog.New(slog.NewTextHandler(tc.t.Output(), nil))}
	if tc.opts != nil {
		tc.opts(&o)
	}
	// A port can still be busy for a moment after a kill; wait that out.
	for try := 0; ; try++ {
		r := cell.New(o)
		err := r.Open(context.Background())
		if err == nil {
			tc.replicas[id] = r
			return
		}
		if !errors.Is(err, syscall.EADDRINUSE) || try == 50 {
			tc.t.Fatalf("replica %d: %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (tc *testCell) stop(id uint64) {
	if r := tc.replicas[id]; r != nil {
		r.Close(context.Background())
		delete(tc.replicas, id)
	}
}

// waitMaster returns the id of the master once one is ready.
func (tc *testCell) waitMaster() uint64 {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for id, r := range tc.replicas {
			if r.IsMaster() {
				return id
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	tc.t.Fatal("no master after 20s")
	return 0
}

func (tc *testCell) addrs() []string {
	var out []string
	for _, p := range tc.peers {
		out = append(out, p.ClientAddr)
	}
	return out
}

func (tc *testCell) client(principal string, onEvent func(client.Event)) *client.Client {
	c := client.New(client.Options{Cell: tc.name, Addrs: tc.addrs(), Principal: principal, Grace: 4 * time.Second, OnEvent: onEvent})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Open(ctx); err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestFilesLocksAndSequencers(t *testing.T) {
	tc := newTestCell(t, 3, nil)
	tc.waitMaster()
	a := tc.client("alice", nil)
	b := tc.client("bob", nil)
	c := ctx(t)

	h, created, err := a.OpenNode(c, "/ls/local/dir", client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true, Directory: true})
	if err != nil || !created {
		t.Fatalf("create dir: %v %v", created, err)
	}
	f, _, err := a.OpenNode(c, "/ls/test/dir/file", client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true, Contents: []byte("v1")})
	if err != nil {
		t.Fatal(err)
	}
	data, st, err := f.GetContentsAndStat(c)
	if err != nil || string(data) != "v1" || st.ContentGeneration != 1 {
		t.Fatalf("read: %q %+v %v", data, st, err)
	}
	if _, err := f.SetContents(c, []byte("v2"), client.IfGeneration(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.SetContents(c, []byte("v3"), client.IfGeneration(1)); !errors.Is(err, coord.ErrGenerationMismatch) {
		t.Fatalf("stale compare-and-swap: %v", err)
	}
	fb, _, err := b.OpenNode(c, "/ls/local/dir/file", client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite})
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := fb.GetContentsAndStat(c); string(data) != "v2" {
		t.Fatalf("bob reads %q", data)
	}
	entries, err := h.ReadDir(c)
	if err != nil || len(entries) != 1 || entries[0].Name != "file" {
		t.Fatalf("readdir: %+v %v", entries, err)
	}

	if err := f.Acquire(c, coord.Exclusive); err != nil {
		t.Fatal(err)
	}
	seq, err := f.GetSequencer()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := fb.TryAcquire(c, coord.Exclusive); ok || err != nil {
		t.Fatalf("second exclusive lock: %v %v", ok, err)
	}
	if err := b.CheckSequencer(c, seq); err != nil {
		t.Fatalf("fresh sequencer: %v", err)
	}
	if err := f.Release(c); err != nil {
		t.Fatal(err)
	}
	if ok, err := fb.TryAcquire(c, coord.Exclusive); !ok || err != nil {
		t.Fatalf("lock after release: %v %v", ok, err)
	}
	if err := b.CheckSequencer(c, seq); !errors.Is(err, coord.ErrStaleSequencer) {
		t.Fatalf("sequencer from before the lock changed hands: %v", err)
	}
	if err := f.Delete(c); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, _, err := fb.GetContentsAndStat(c); !errors.Is(err, coord.ErrInvalidHandle) {
		t.Fatalf("read through a handle of a deleted node: %v", err)
	}
	if _, _, err := a.OpenNode(c, "/ls/local/dir/file", client.OpenOptions{Mode: coord.ModeRead}); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("open of a deleted node: %v", err)
	}
}

func TestEventsAndCacheInvalidation(t *testing.T) {
	tc := newTestCell(t, 3, nil)
	tc.waitMaster()
	var mu sync.Mutex
	var got []string
	a := tc.client("alice", func(e client.Event) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s", e.Type, e.Name))
		mu.Unlock()
	})
	b := tc.client("bob", nil)
	c := ctx(t)
	fa, _, err := a.OpenNode(c, "/ls/local/f", client.OpenOptions{Mode: coord.ModeRead, Create: true, Contents: []byte("one"),
		Events: coord.Mask(coord.EventContentsModified)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // the second and third reads come from the cache
		if data, _, err := fa.GetContentsAndStat(c); err != nil || string(data) != "one" {
			t.Fatalf("read: %q %v", data, err)
		}
	}
	fb, _, _ := b.OpenNode(c, "/ls/local/f", client.OpenOptions{Mode: coord.ModeWrite})
	if _, err := fb.SetContents(c, []byte("two")); err != nil {
		t.Fatal(err)
	}
	// The write returned only after alice's copy was invalidated.
	if data, _, err := fa.GetContentsAndStat(c); err != nil || string(data) != "two" {
		t.Fatalf("read after another client's write: %q %v", data, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "contents-modified /ls/test/f" {
		t.Fatalf("events: %v", got)
	}
}

// TestRequestResultsArePrunedPromptly checks that the results the cell
// records for retried requests are dropped as soon as the client's next
// call says it no longer needs them, not only at the next KeepAlive.
func TestRequestResultsArePrunedPromptly(t *testing.T) {
	tc := newTestCell(t, 3, nil)
	m := tc.waitMaster()
	c := tc.client("writer", nil)
	h, _, err := c.OpenNode(ctx(t), "/ls/local/f", client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := h.SetContents(ctx(t), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := tc.replicas[m].Dump(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snap.Sessions {
		if len(s.Results) > 2 {
			t.Fatalf("session %d still has %d recorded results after 200 sequential writes", s.Id, len(s.Results))
		}
	}
}

// TestACLsAndSecret checks access control through the gRPC API: a client
// without the cell's secret is refused, and ACL files decide who may read,
// write and lock a node, with a clear permission error for the others.
func TestACLsAndSecret(t *testing.T) {
	tc := newTestCell(t, 3, func(o *cell.Options) { o.Secret = "s3cret" })
	tc.waitMaster()
	open := func(principal, secret string) (*client.Client, error) {
		c := client.New(client.Options{Cell: tc.name, Addrs: tc.addrs(), Principal: principal, Secret: secret, Grace: 4 * time.Second})
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := c.Open(cctx)
		if err == nil {
			t.Cleanup(func() { c.Close(context.Background()) })
		}
		return c, err
	}
	if _, err := open("mallory", "guess"); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("a client with the wrong secret: %v", err)
	}
	alice, err := open("alice", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := open("bob", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	rw := coord.ModeRead | coord.ModeWrite
	if _, _, err := alice.OpenNode(c, "/ls/local/acl/admins", client.OpenOptions{Mode: rw, Create: true, Contents: []byte("alice\n")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := alice.OpenNode(c, "/ls/local/acl/everyone", client.OpenOptions{Mode: rw, Create: true, Contents: []byte("*\n")}); err != nil {
		t.Fatal(err)
	}
	acl := coord.ACL{Read: "everyone", Write: "admins", ChangeACL: "admins"}
	if _, _, err := alice.OpenNode(c, "/ls/local/cellar", client.OpenOptions{Mode: coord.ModeRead, Create: true, Directory: true, ACL: acl}); err != nil {
		t.Fatal(err)
	}
	h, _, err := alice.OpenNode(c, "/ls/local/cellar/master", client.OpenOptions{Mode: rw, Create: true, Contents: []byte("alice:1")})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := h.GetStat(c); err != nil || st.ACL != acl {
		t.Fatalf("a new node inherits its parent's ACL names: %+v %v", st.ACL, err)
	}
	if err := h.Acquire(c, coord.Exclusive); err != nil {
		t.Fatal(err)
	}

	// bob may read but not write, lock, create or change the ACL.
	bh, _, err := bob.OpenNode(c, "/ls/local/cellar/master", client.OpenOptions{Mode: coord.ModeRead})
	if err != nil {
		t.Fatal(err)
	}
	if data, _, err := bh.GetContentsAndStat(c); err != nil || string(data) != "alice:1" {
		t.Fatalf("bob reads: %q %v", data, err)
	}
	for what, err := range map[string]error{
		"open for writing": func() error {
			_, _, err := bob.OpenNode(c, "/ls/local/cellar/master", client.OpenOptions{Mode: rw})
			return err
		}(),
		"create": func() error {
			_, _, err := bob.OpenNode(c, "/ls/local/cellar/bob", client.OpenOptions{Mode: coord.ModeRead, Create: true})
			return err
		}(),
		"change the ACL": func() error {
			_, _, err := bob.OpenNode(c, "/ls/local/cellar/master", client.OpenOptions{Mode: coord.ModeChangeACL})
			return err
		}(),
	} {
		if !errors.Is(err, coord.ErrPermissionDenied) || !strings.Contains(err.Error(), `"bob"`) {
			t.Errorf("bob may not %s, but got %v", what, err)
		}
	}
}

// handlesOf counts the handles a session has open at the cell.
func handlesOf(t *testing.T, r *cell.Replica, session uint64) int {
	snap, err := r.Dump(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range snap.Handles {
		if h.Session == session {
			n++
		}
	}
	return n
}

// TestHandleCache checks Chubby's handle cache: closing a handle keeps it
// open at the cell so that the next Open of the node costs no call, but
// never for ephemeral nodes, and never once the node is gone.
func TestHandleCache(t *testing.T) {
	tc := newTestCell(t, 3, nil)
	m := tc.waitMaster()
	a := tc.client("a", nil)
	b := tc.client("b", nil)
	c := ctx(t)
	rw := coord.ModeRead | coord.ModeWrite
	h, _, err := a.OpenNode(c, "/ls/local/f", client.OpenOptions{Mode: rw, Create: true, Contents: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	h.Close(c)
	for i := 0; i < 10; i++ {
		h, _, err := a.OpenNode(c, "/ls/local/f", client.OpenOptions{Mode: rw})
		if err != nil {
			t.Fatal(err)
		}
		if data, _, err := h.GetContentsAndStat(c); err != nil || string(data) != "x" {
			t.Fatalf("through a reused handle: %q %v", data, err)
		}
		if err := h.Close(c); err != nil {
			t.Fatal(err)
		}
	}
	if n := handlesOf(t, tc.replicas[m], a.SessionID()); n != 1 {
		t.Fatalf("%d handles open at the cell after 11 opens and closes of one node, want the 1 cached", n)
	}

	// An ephemeral node goes with its last handle, cached or not.
	e, _, err := a.OpenNode(c, "/ls/local/e", client.OpenOptions{Mode: rw, Create: true, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	e.Close(c)
	if _, _, err := b.OpenNode(c, "/ls/local/e", client.OpenOptions{Mode: coord.ModeRead}); !errors.Is(err, coord.ErrNotFound) {
		t.Fatalf("the ephemeral node outlived its only handle: %v", err)
	}

	// Once b deletes the node, a's cached handle is dropped and an Open
	// without create fails as it should.
	bh, _, err := b.OpenNode(c, "/ls/local/f", client.OpenOptions{Mode: rw})
	if err != nil {
		t.Fatal(err)
	}
	if err := bh.Delete(c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a to learn that the node is gone", 10*time.Second, func() bool {
		h, _, err := a.OpenNode(c, "/ls/local/f", client.OpenOptions{Mode: rw})
		if err == nil {
			h.Close(c)
		}
		return errors.Is(err, coord.ErrNotFound)
	})
}

// TestLockCache checks lock caching: with CacheLocks a released lock stays
// held until another session asks for it, and then passes to it.
func TestLockCache(t *testing.T) {
	tc := newTestCell(t, 3, nil)
	tc.waitMaster()
	a := client.New(client.Options{Cell: tc.name, Addrs: tc.addrs(), Principal: "a", Grace: 4 * time.Second, CacheLocks: true})
	if err := a.Open(ctx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	b := tc.client("b", nil)
	c := ctx(t)
	rw := coord.ModeRead | coord.ModeWrite
	ha, _, err := a.OpenNode(c, "/ls/local/L", client.OpenOptions{Mode: rw, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	var first coord.Sequencer
	for i := 0; i < 5; i++ {
		if err := ha.Acquire(c, coord.Exclusive); err != nil {
			t.Fatal(err)
		}
		seq, err := ha.GetSequencer()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = seq
		} else if seq != first {
			t.Fatalf("a cached lock was given up: sequencer %v, then %v", first, seq)
		}
		if err := ha.Release(c); err != nil {
			t.Fatal(err)
		}
		if _, err := ha.GetSequencer(); err == nil {
			t.Fatal("a released lock still has a sequencer")
		}
	}
	hb, _, err := b.OpenNode(c, "/ls/local/L", client.OpenOptions{Mode: rw})
	if err != nil {
		t.Fatal(err)
	}
	if err := hb.Acquire(c, coord.Exclusive); err != nil {
		t.Fatalf("b never got the lock a had cached: %v", err)
	}
	seqB, _ := hb.GetSequencer()
	if seqB.LockGeneration <= first.LockGeneration {
		t.Fatalf("b's lock generation %d is not above a's %d", seqB.LockGeneration, first.LockGeneration)
	}
	if ok, err := ha.TryAcquire(c, coord.Exclusive); ok || err != nil {
		t.Fatalf("a took the lock back while b holds it: %v %v", ok, err)
	}
}

// TestIdleSessionStaysSafe checks the lease arithmetic of KeepAlives: the
// master holds each KeepAlive for most of a lease, and the client must
// count its new lease from when the master granted it, not from when it
// sent the call, or it would fall into jeopardy (and block every call)
// for most of each lease.
func TestIdleSessionStaysSafe(t *testing.T) {
	tc := newTestCell(t, 3, func(o *cell.Options) { o.Lease = 3 * time.Second })
	tc.waitMaster()
	var events eventLog
	c := tc.client("idle", events.add)
	time.Sleep(10 * time.Second) // three KeepAlive cycles
	if !c.Safe() || events.count(coord.EventJeopardy, "") > 0 {
		t.Fatalf("an idle session on a healthy cell went into jeopardy: %v", events.events)
	}
}
