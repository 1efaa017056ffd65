package fsm

import (
	"slices"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
)

// eventsOf reads a session's queued events after seq, as "type:path@seq".
func eventsOf(t *testing.T, s *State, sess, after uint64) []string {
	t.Helper()
	v, err := s.Lookup(EventsQuery{Session: sess, After: after})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range v.(Events).Events {
		out = append(out, coord.EventType(e.Type).String()+":"+e.Path+"@"+strconv.FormatUint(e.Seq, 10))
	}
	return out
}

// TestEventQueues: events are queued per session in the replicated state,
// numbered 1, 2, 3… across epochs; NewEpoch queues a failover event for
// every session; AckEvents drops what was acknowledged; the queues
// survive a snapshot; a full queue gives way to one EVENTS_LOST event; a
// session's end drops its queue.
func TestEventQueues(t *testing.T) {
	s := New()
	apply := func(cmd *pb.Command) *pb.Result {
		t.Helper()
		cmd.NowMs = 1000
		r := s.Apply(cmd)
		if r.Code != 0 {
			t.Fatalf("%v: %s", cmd, r.Message)
		}
		return r
	}
	apply(&pb.Command{Op: &pb.Command_Bootstrap{Bootstrap: &pb.Bootstrap{Cell: "test", Key: testKey}}})
	apply(&pb.Command{Op: &pb.Command_CreateSession{CreateSession: &pb.CreateSession{}}})
	apply(&pb.Command{Op: &pb.Command_CreateSession{CreateSession: &pb.CreateSession{}}})
	sref := func(id uint64) *pb.SessionRef { return &pb.SessionRef{Id: id, Check: Check(testKey, id, 0)} }
	apply(&pb.Command{Session: 1, Op: &pb.Command_Open{Open: &pb.OpenRequest{Session: sref(1), Path: "/d", Mode: uint32(coord.ModeRead),
		EventMask: uint32(coord.Mask(coord.EventChildAdded)), Create: &pb.CreateOptions{Create: true, Directory: true}}}})
	child := func(name string) *pb.Result {
		return apply(&pb.Command{Session: 2, Op: &pb.Command_Open{Open: &pb.OpenRequest{Session: sref(2), Path: "/d/" + name,
			Mode: uint32(coord.ModeRead), Create: &pb.CreateOptions{MustCreate: true}}}})
	}
	r := child("a")
	if len(r.Deliveries) != 1 || r.Deliveries[0].Session != 1 || r.Deliveries[0].Event.Seq != 1 {
		t.Fatalf("the result names the queued event with its number: %v", r.Deliveries)
	}
	child("b")
	if got, want := eventsOf(t, s, 1, 0), []string{"child-added:/d/a@1", "child-added:/d/b@2"}; !slices.Equal(got, want) {
		t.Fatalf("queued %v, want %v", got, want)
	}
	if got, want := eventsOf(t, s, 1, 1), []string{"child-added:/d/b@2"}; !slices.Equal(got, want) {
		t.Fatalf("after 1: %v, want %v", got, want)
	}

	r = apply(&pb.Command{Op: &pb.Command_NewEpoch{NewEpoch: &pb.NewEpoch{}}})
	if len(r.Deliveries) != 2 || r.Deliveries[0].Event.Seq != 3 || r.Deliveries[1].Event.Seq != 1 {
		t.Fatalf("NewEpoch's failover events: %v", r.Deliveries)
	}
	apply(&pb.Command{Op: &pb.Command_AckEvents{AckEvents: &pb.AckEvents{Acks: []*pb.EventAck{{Session: 1, Seq: 2}, {Session: 9, Seq: 5}}}}})
	if got, want := eventsOf(t, s, 1, 0), []string{"master-failover:@3"}; !slices.Equal(got, want) {
		t.Fatalf("after the ack: %v, want %v", got, want)
	}

	data, err := proto.Marshal(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	snap := &pb.Snapshot{}
	if err := proto.Unmarshal(data, snap); err != nil {
		t.Fatal(err)
	}
	s = Restore(snap)
	child("c")
	if got, want := eventsOf(t, s, 1, 0), []string{"master-failover:@3", "child-added:/d/c@4"}; !slices.Equal(got, want) {
		t.Fatalf("after a restore: %v, want %v", got, want)
	}

	s.maxEvents = 3
	child("e")
	r = child("f") // the fourth: the queue overflows
	if got, want := eventsOf(t, s, 1, 0), []string{"events-lost:@6"}; !slices.Equal(got, want) {
		t.Fatalf("after an overflow: %v, want %v", got, want)
	}
	if len(r.Deliveries) != 1 || r.Deliveries[0].Event.Type != pb.Event_EVENTS_LOST {
		t.Fatalf("the result names the EVENTS_LOST event: %v", r.Deliveries)
	}
	child("g")
	if got, want := eventsOf(t, s, 1, 5), []string{"events-lost:@6", "child-added:/d/g@7"}; !slices.Equal(got, want) {
		t.Fatalf("after the overflow: %v, want %v", got, want)
	}

	apply(&pb.Command{Op: &pb.Command_EndSession{EndSession: &pb.EndSession{Id: 1}}})
	v, err := s.Lookup(EventsQuery{Session: 1})
	if err != nil || v.(Events).Found {
		t.Fatalf("an ended session's events: %v, %v", v, err)
	}
}
