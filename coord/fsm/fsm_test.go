package fsm

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/proto"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// harness drives a State from datadriven scripts. Sessions and handles
// are named by their ids; the harness adds check digits.
type harness struct {
	s   *State
	now int64
	req uint64
}

func (h *harness) sref(id uint64) *pb.SessionRef {
	return &pb.SessionRef{Id: id, Check: Check(testKey, id, 0)}
}

func (h *harness) href(sess, id uint64) *pb.HandleRef {
	return &pb.HandleRef{Id: id, Check: Check(testKey, sess, id)}
}

func argU(td *datadriven.TestData, key string) uint64 {
	for _, a := range td.CmdArgs {
		if a.Key == key {
			v, err := strconv.ParseUint(a.Vals[0], 10, 64)
			if err != nil {
				td.Fatalf(nil, "bad %s: %v", key, err)
			}
			return v
		}
	}
	return 0
}

func argS(td *datadriven.TestData, key string) (string, bool) {
	for _, a := range td.CmdArgs {
		if a.Key == key {
			if len(a.Vals) == 0 {
				return "", true
			}
			return strings.Join(a.Vals, ","), true
		}
	}
	return "", false
}

func has(td *datadriven.TestData, key string) bool { _, ok := argS(td, key); return ok }

func modeOf(s string) coord.Mode {
	var m coord.Mode
	for _, c := range s {
		switch c {
		case 'r':
			m |= coord.ModeRead
		case 'w':
			m |= coord.ModeWrite
		case 'a':
			m |= coord.ModeChangeACL
		}
	}
	return m
}

func maskOf(s string) coord.EventMask {
	var m coord.EventMask
	for _, name := range strings.Split(s, ",") {
		for t := coord.EventContentsModified; t <= coord.EventConflictingLock; t++ {
			if t.String() == name {
				m |= coord.Mask(t)
			}
		}
	}
	return m
}

func lockOf(s string) pb.LockMode {
	if s == "shared" {
		return pb.LockMode_LOCK_SHARED
	}
	return pb.LockMode_LOCK_EXCLUSIVE
}

func statString(st *pb.Stat) string {
	s := pb.StatFromProto(st)
	out := fmt.Sprintf("inst=%d cgen=%d lgen=%d agen=%d len=%d", s.Instance, s.ContentGeneration, s.LockGeneration, s.ACLGeneration, s.Length)
	if s.LockMode != coord.Unlocked {
		out += fmt.Sprintf(" lock=%s/%d", s.LockMode, s.LockHolders)
	}
	return out
}

func (h *harness) result(r *pb.Result) string {
	var b strings.Builder
	if r.Code != 0 {
		fmt.Fprintf(&b, "error: %s\n", r.Message)
	} else {
		switch {
		case r.Session != nil:
			fmt.Fprintf(&b, "session %d\n", r.Session.Id)
		case r.Open != nil:
			fmt.Fprintf(&b, "handle %d created=%v %s\n", r.Open.Handle.Id, r.Open.Created, statString(r.Open.Stat))
		case r.Sequencer != nil:
			fmt.Fprintf(&b, "acquired %s gen=%d\n", coord.LockMode(r.Sequencer.Mode), r.Sequencer.LockGeneration)
		case r.RetryAfterMs != 0:
			fmt.Fprintf(&b, "busy until %d\n", r.RetryAfterMs)
		case r.Stat != nil:
			fmt.Fprintf(&b, "ok %s\n", statString(r.Stat))
		default:
			b.WriteString("ok\n")
		}
	}
	for _, d := range r.Deliveries {
		fmt.Fprintf(&b, "event session=%d handle=%d %s %s\n", d.Session, d.Event.Handle, coord.EventType(d.Event.Type), d.Event.Path)
	}
	return b.String()
}

func (h *harness) apply(td *datadriven.TestData, cmd *pb.Command) string {
	cmd.NowMs = h.now
	return h.result(h.s.Apply(cmd))
}

func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	if now, ok := argS(td, "now"); ok {
		h.now, _ = strconv.ParseInt(now, 10, 64)
	}
	sess := argU(td, "s")
	handle := argU(td, "h")
	hreq := func() *pb.HandleRequest {
		return &pb.HandleRequest{Session: h.sref(sess), Handle: h.href(sess, handle)}
	}
	switch td.Cmd {
	case "bootstrap":
		return h.apply(td, &pb.Command{Op: &pb.Command_Bootstrap{Bootstrap: &pb.Bootstrap{Cell: "test", Key: testKey}}})
	case "tick":
		return "ok\n"
	case "session":
		p, _ := argS(td, "principal")
		return h.apply(td, &pb.Command{Op: &pb.Command_CreateSession{CreateSession: &pb.CreateSession{Principal: p}}})
	case "end-session":
		return h.apply(td, &pb.Command{Op: &pb.Command_EndSession{EndSession: &pb.EndSession{Id: sess, Expired: has(td, "expired")}}})
	case "open":
		path, _ := argS(td, "path")
		mode, _ := argS(td, "mode")
		events, _ := argS(td, "events")
		contents, _ := argS(td, "contents")
		contents = strings.ReplaceAll(contents, `\n`, "\n")
		c := &pb.CreateOptions{Create: has(td, "create"), MustCreate: has(td, "must"), Directory: has(td, "dir"),
			Ephemeral: has(td, "ephemeral"), Contents: []byte(contents)}
		if acl, ok := argS(td, "acl"); ok {
			f := strings.Split(acl, ",")
			c.Acl = &pb.ACL{Read: f[0], Write: f[1], ChangeAcl: f[2]}
		}
		req := &pb.OpenRequest{Session: h.sref(sess), Path: path, Mode: uint32(modeOf(mode)), EventMask: uint32(maskOf(events)),
			Create: c, LockDelayMs: int64(argU(td, "delay"))}
		cmd := &pb.Command{Session: sess, Op: &pb.Command_Open{Open: req}}
		if r := argU(td, "req"); r != 0 {
			cmd.RequestId = r
		}
		return h.apply(td, cmd)
	case "close":
		return h.apply(td, &pb.Command{Op: &pb.Command_Close{Close: hreq()}})
	case "set":
		contents, _ := argS(td, "contents")
		contents = strings.ReplaceAll(contents, `\n`, "\n")
		req := &pb.SetContentsRequest{Session: h.sref(sess), Handle: h.href(sess, handle), Contents: []byte(contents)}
		if g, ok := argS(td, "if"); ok {
			req.HasIfGeneration = true
			req.IfGeneration, _ = strconv.ParseUint(g, 10, 64)
		}
		cmd := &pb.Command{Session: sess, RequestId: argU(td, "req"), Op: &pb.Command_SetContents{SetContents: req}}
		return h.apply(td, cmd)
	case "setacl":
		acl, _ := argS(td, "acl")
		f := strings.Split(acl, ",")
		return h.apply(td, &pb.Command{Op: &pb.Command_SetAcl{SetAcl: &pb.SetACLRequest{Session: h.sref(sess), Handle: h.href(sess, handle),
			Acl: &pb.ACL{Read: f[0], Write: f[1], ChangeAcl: f[2]}}}})
	case "delete":
		return h.apply(td, &pb.Command{Op: &pb.Command_Delete{Delete: hreq()}})
	case "lock":
		mode, _ := argS(td, "mode")
		r := h.s.Apply(&pb.Command{NowMs: h.now, Op: &pb.Command_TryAcquire{TryAcquire: &pb.AcquireRequest{Session: h.sref(sess),
			Handle: h.href(sess, handle), Mode: lockOf(mode)}}})
		out := h.result(r)
		if r.Code == 0 && !r.Acquired && r.RetryAfterMs == 0 {
			out = "busy\n" + strings.TrimPrefix(out, "ok\n")
		}
		return out
	case "release":
		return h.apply(td, &pb.Command{Op: &pb.Command_Release{Release: hreq()}})
	case "get":
		v, err := h.s.Lookup(GetQuery{Session: h.sref(sess), Handle: h.href(sess, handle), Contents: true})
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		g := v.(*pb.GetResponse)
		return fmt.Sprintf("%q %s\n", g.Contents, statString(g.Stat))
	case "check-seq":
		path, _ := argS(td, "path")
		mode, _ := argS(td, "mode")
		v, _ := h.s.Lookup(CheckSequencerQuery{Sequencer: &pb.Sequencer{Path: path, Mode: lockOf(mode),
			LockGeneration: argU(td, "gen"), Instance: argU(td, "instance")}})
		r := v.(*pb.CheckSequencerResponse)
		if r.Valid {
			return "valid\n"
		}
		return "stale: " + r.Reason + "\n"
	case "counts":
		v, err := h.s.Lookup(CountsQuery{})
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		c := v.(Counts)
		return fmt.Sprintf("sessions=%d handles=%d locks=%d\n", c.Sessions, c.Handles, c.Locks)
	case "dump":
		var b strings.Builder
		snap := h.s.Snapshot()
		for _, n := range snap.Nodes {
			kind := "file"
			if n.Directory {
				kind = "dir"
			}
			if n.Ephemeral {
				kind += ",ephemeral"
			}
			fmt.Fprintf(&b, "%s %s %s", n.Path, kind, statString(n.Stat))
			if n.LockDelayUntilMs != 0 {
				fmt.Fprintf(&b, " delay-until=%d", n.LockDelayUntilMs)
			}
			b.WriteString("\n")
		}
		for _, s := range snap.Sessions {
			var hs []string
			for _, hd := range snap.Handles {
				if hd.Session == s.Id {
					hs = append(hs, fmt.Sprintf("%d:%s", hd.Id, hd.Path))
				}
			}
			sort.Strings(hs)
			fmt.Fprintf(&b, "session %d %s handles=[%s]\n", s.Id, s.Principal, strings.Join(hs, " "))
		}
		return b.String()
	}
	t.Fatalf("unknown command %q", td.Cmd)
	return ""
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{s: New(), now: 1000}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string { return h.run(t, td) })
	})
}

// randomCommand returns a plausible command against a small namespace.
func randomCommand(r *rand.Rand, now int64) *pb.Command {
	sess := uint64(1 + r.Intn(4))
	hid := uint64(1 + r.Intn(12))
	sref := &pb.SessionRef{Id: sess, Check: Check(testKey, sess, 0)}
	href := &pb.HandleRef{Id: hid, Check: Check(testKey, sess, hid)}
	paths := []string{"/a", "/b", "/d", "/d/x", "/d/y", "/acl/ops"}
	path := paths[r.Intn(len(paths))]
	cmd := &pb.Command{NowMs: now, Session: sess}
	if r.Intn(3) == 0 {
		cmd.RequestId = uint64(1 + r.Intn(20))
	}
	switch r.Intn(13) {
	case 0:
		cmd.Op = &pb.Command_CreateSession{CreateSession: &pb.CreateSession{Principal: []string{"alice", "bob"}[r.Intn(2)]}}
	case 1:
		cmd.Op = &pb.Command_EndSession{EndSession: &pb.EndSession{Id: sess, Expired: r.Intn(2) == 0}}
	case 2, 3:
		cmd.Op = &pb.Command_Open{Open: &pb.OpenRequest{Session: sref, Path: path, Mode: uint32(1 + r.Intn(7)),
			EventMask: uint32(r.Intn(1 << 9)), LockDelayMs: int64(r.Intn(3)) * 500,
			Create: &pb.CreateOptions{Create: r.Intn(2) == 0, Directory: path == "/d", Ephemeral: r.Intn(3) == 0,
				Contents: []byte(fmt.Sprint(r.Intn(100)))}}}
	case 4:
		cmd.Op = &pb.Command_Close{Close: &pb.HandleRequest{Session: sref, Handle: href}}
	case 5:
		cmd.Op = &pb.Command_SetContents{SetContents: &pb.SetContentsRequest{Session: sref, Handle: href,
			Contents: []byte(fmt.Sprint(r.Intn(100))), HasIfGeneration: r.Intn(2) == 0, IfGeneration: uint64(r.Intn(4))}}
	case 6:
		cmd.Op = &pb.Command_Delete{Delete: &pb.HandleRequest{Session: sref, Handle: href}}
	case 7, 8:
		cmd.Op = &pb.Command_TryAcquire{TryAcquire: &pb.AcquireRequest{Session: sref, Handle: href, Mode: pb.LockMode(1 + r.Intn(2))}}
	case 9:
		cmd.Op = &pb.Command_Release{Release: &pb.HandleRequest{Session: sref, Handle: href}}
	case 10:
		cmd.Op = &pb.Command_SetAcl{SetAcl: &pb.SetACLRequest{Session: sref, Handle: href, Acl: &pb.ACL{}}}
	case 11:
		var acks []*pb.EventAck
		for range r.Intn(3) {
			acks = append(acks, &pb.EventAck{Session: uint64(1 + r.Intn(4)), Seq: uint64(r.Intn(40))})
		}
		cmd.Session, cmd.RequestId = 0, 0 // as the master proposes it
		cmd.Op = &pb.Command_AckEvents{AckEvents: &pb.AckEvents{Acks: acks}}
	case 12:
		cmd.Session, cmd.RequestId = 0, 0
		if r.Intn(40) == 0 {
			// Rarely: it queues an event for every session, and sessions
			// the other commands never name pile up.
			cmd.Op = &pb.Command_NewEpoch{NewEpoch: &pb.NewEpoch{}}
		} else {
			// Acknowledge everything of a few sessions, of any number.
			var acks []*pb.EventAck
			for range 8 {
				acks = append(acks, &pb.EventAck{Session: uint64(1 + r.Intn(200)), Seq: 1 << 20})
			}
			cmd.Op = &pb.Command_AckEvents{AckEvents: &pb.AckEvents{Acks: acks}}
		}
	}
	return cmd
}

// checkInvariants verifies what must hold after every command: at most one
// exclusive holder and never exclusive beside shared; holders hold open
// handles of the node's instance; ephemeral files have open handles;
// every node's parent exists.
func checkInvariants(t *testing.T, s *State) {
	t.Helper()
	for p, n := range s.nodes {
		excl, shared := 0, 0
		for hid, m := range n.holders {
			h := s.handles[hid]
			if h == nil || h.path != p || h.instance != n.stat.Instance || h.held != m {
				t.Fatalf("%s: holder %d is not a live handle of the node holding %s", p, hid, m)
			}
			if m == coord.Exclusive {
				excl++
			} else {
				shared++
			}
		}
		if excl > 1 || (excl == 1 && shared > 0) {
			t.Fatalf("%s: %d exclusive and %d shared holders", p, excl, shared)
		}
		if n.ephemeral && !n.dir && len(n.handles) == 0 {
			t.Fatalf("%s: ephemeral file without open handles", p)
		}
		if p != "/" && s.nodes[coord.Parent(p)] == nil {
			t.Fatalf("%s: parent missing", p)
		}
	}
	for id, h := range s.handles {
		if s.sessions[h.session] == nil {
			t.Fatalf("handle %d outlived session %d", id, h.session)
		}
	}
	for id, sess := range s.sessions {
		if len(sess.events) > s.maxEvents {
			t.Fatalf("session %d queues %d events, more than %d", id, len(sess.events), s.maxEvents)
		}
		for i, e := range sess.events {
			if e.Seq == 0 || e.Seq > sess.eventSeq || (i > 0 && e.Seq <= sess.events[i-1].Seq) {
				t.Fatalf("session %d: event %d has seq %d (last given %d)", id, i, e.Seq, sess.eventSeq)
			}
		}
	}
}

// TestRandomDeterminismAndSnapshots applies random commands to two states,
// snapshotting and restoring one of them along the way, and checks that
// both stay identical and the invariants hold.
func TestRandomDeterminismAndSnapshots(t *testing.T) {
	seeds := int64(20)
	if v, err := strconv.ParseInt(os.Getenv("CELLAR_FSM_SEEDS"), 10, 64); err == nil && v > 0 {
		seeds = v // make soak runs more
	}
	overflows, epochs := 0, 0
	for seed := int64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewSource(seed))
		a, b := New(), New()
		// A small bound on event queues, so that overflows happen too.
		a.maxEvents, b.maxEvents = 3, 3
		boot := &pb.Command{NowMs: 1, Op: &pb.Command_Bootstrap{Bootstrap: &pb.Bootstrap{Cell: "test", Key: testKey}}}
		a.Apply(boot)
		b.Apply(boot)
		for i := 0; i < 3; i++ {
			cs := &pb.Command{NowMs: 1, Op: &pb.Command_CreateSession{CreateSession: &pb.CreateSession{Principal: "alice"}}}
			a.Apply(cs)
			b.Apply(cs)
		}
		aclFile := &pb.Command{NowMs: 1, Session: 1, Op: &pb.Command_Open{Open: &pb.OpenRequest{Session: &pb.SessionRef{Id: 1, Check: Check(testKey, 1, 0)},
			Path: "/acl/ops", Mode: 3, Create: &pb.CreateOptions{Create: true, Contents: []byte("alice\n")}}}}
		a.Apply(aclFile)
		b.Apply(aclFile)
		now := int64(1000)
		for i := 0; i < 2000; i++ {
			now += int64(r.Intn(300))
			cmd := randomCommand(r, now)
			ra, rb := a.Apply(cmd), b.Apply(proto.Clone(cmd).(*pb.Command))
			if !proto.Equal(ra, rb) {
				t.Fatalf("seed %d step %d: results differ:\n%v\n%v", seed, i, ra, rb)
			}
			for _, d := range ra.Deliveries {
				if d.Event.Type == pb.Event_EVENTS_LOST {
					overflows++
				}
			}
			if _, ok := cmd.Op.(*pb.Command_NewEpoch); ok {
				epochs++
			}
			checkInvariants(t, a)
			if r.Intn(50) == 0 {
				data, err := proto.Marshal(b.Snapshot())
				if err != nil {
					t.Fatal(err)
				}
				snap := &pb.Snapshot{}
				if err := proto.Unmarshal(data, snap); err != nil {
					t.Fatal(err)
				}
				b = Restore(snap)
				b.maxEvents = a.maxEvents
			}
			if !proto.Equal(a.Snapshot(), b.Snapshot()) {
				t.Fatalf("seed %d step %d: states differ after %v", seed, i, cmd)
			}
		}
	}
	// The commands must reach what they are meant to cover.
	if overflows == 0 || epochs == 0 {
		t.Fatalf("%d event queue overflows and %d new epochs: the random commands no longer cover them", overflows, epochs)
	}
	t.Logf("%d event queue overflows, %d new epochs", overflows, epochs)
}

// TestExpiryFromADeposedMasterIsRefused checks that a session expiry
// decided in an older master epoch is refused: a Chubby master that was
// paused past its own deposition still finds every lease lapsed when it
// runs again, and its proposal reaches the new leader. The current
// epoch's expiry, and an unchecked one (epoch 0, as log entries written
// before the field existed), end the session.
func TestExpiryFromADeposedMasterIsRefused(t *testing.T) {
	s := New()
	apply := func(op *pb.Command) *pb.Result {
		op.NowMs = 1
		return s.Apply(op)
	}
	apply(&pb.Command{Op: &pb.Command_Bootstrap{Bootstrap: &pb.Bootstrap{Cell: "test", Key: testKey}}})
	apply(&pb.Command{Op: &pb.Command_NewEpoch{NewEpoch: &pb.NewEpoch{}}})
	old := apply(&pb.Command{Op: &pb.Command_NewEpoch{NewEpoch: &pb.NewEpoch{}}}).Epoch
	current := apply(&pb.Command{Op: &pb.Command_NewEpoch{NewEpoch: &pb.NewEpoch{}}}).Epoch
	if current != old+1 {
		t.Fatalf("epochs %d then %d", old, current)
	}
	newSession := func() uint64 {
		return apply(&pb.Command{Op: &pb.Command_CreateSession{CreateSession: &pb.CreateSession{Principal: "p"}}}).Session.Id
	}
	end := func(id, epoch uint64) *pb.Result {
		return apply(&pb.Command{Op: &pb.Command_EndSession{EndSession: &pb.EndSession{Id: id, Expired: true, Epoch: epoch}}})
	}
	live := func(id uint64) bool { _, ok := s.sessions[id]; return ok }

	a := newSession()
	if r := end(a, old); r.Code == 0 || !live(a) {
		t.Fatalf("an expiry from epoch %d in epoch %d: %v; the session lives: %v", old, current, r, live(a))
	}
	if r := end(a, current); r.Code != 0 || live(a) {
		t.Fatalf("an expiry from the current epoch: %v; the session lives: %v", r, live(a))
	}
	b := newSession()
	if r := end(b, 0); r.Code != 0 || live(b) {
		t.Fatalf("an unchecked expiry: %v; the session lives: %v", r, live(b))
	}
}
