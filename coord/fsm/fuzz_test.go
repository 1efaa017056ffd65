package fsm

import (
	"encoding/binary"
	"math/rand"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/cellardb/cellar/coord/coordpb"
)

// fuzzCommands encodes cmds as the fuzzer's input: each command's
// protobuf encoding behind its length as a uvarint.
func fuzzCommands(cmds ...*pb.Command) []byte {
	var out []byte
	for _, c := range cmds {
		b, err := proto.Marshal(c)
		if err != nil {
			panic(err)
		}
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out
}

// FuzzCommands feeds the state machine what the Raft log may hold: any
// bytes, cut into commands, decoded as the cell's machine decodes them
// (coord/cell's Update answers InvalidArgument to what does not decode)
// and applied to two replicas, one of which goes through a snapshot and
// restore every few commands and at the end. Nothing may panic; the replicas' results
// and states must agree, and the locks' invariants hold.
func FuzzCommands(f *testing.F) {
	for seed := int64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewSource(seed))
		var cmds []*pb.Command
		now := int64(1000)
		for range 40 {
			now += int64(r.Intn(300))
			cmds = append(cmds, randomCommand(r, now))
		}
		f.Add(fuzzCommands(cmds...))
	}
	f.Add([]byte{0x05, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(applyCommands)
}

// applyCommands is FuzzCommands' body: the commands of data applied to a
// bootstrapped cell with three sessions.
func applyCommands(t *testing.T, data []byte) {
	a, b := New(), New()
	// A small bound on event queues, so that inputs reach it.
	a.maxEvents, b.maxEvents = 4, 4
	setup := []*pb.Command{{NowMs: 1, Op: &pb.Command_Bootstrap{Bootstrap: &pb.Bootstrap{Cell: "test", Key: testKey}}}}
	for range 3 {
		setup = append(setup, &pb.Command{NowMs: 1, Op: &pb.Command_CreateSession{CreateSession: &pb.CreateSession{Principal: "alice"}}})
	}
	for _, c := range setup {
		a.Apply(c)
		b.Apply(proto.Clone(c).(*pb.Command))
	}
	roundTrip := func(steps int) {
		snap, err := proto.Marshal(b.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		restored := &pb.Snapshot{}
		if err := proto.Unmarshal(snap, restored); err != nil {
			t.Fatal(err)
		}
		b = Restore(restored)
		b.maxEvents = a.maxEvents
		if !proto.Equal(a.Snapshot(), b.Snapshot()) {
			t.Fatalf("step %d: the states differ after a snapshot and restore", steps)
		}
	}
	steps := 0
	// The end state too must survive a snapshot, however the loop ends.
	defer func() { roundTrip(steps) }()
	for ; len(data) > 0 && steps < 64; steps++ {
		n, k := binary.Uvarint(data)
		if k <= 0 {
			break
		}
		data = data[k:]
		if n > uint64(len(data)) {
			n = uint64(len(data))
		}
		raw := data[:n]
		data = data[n:]
		cmd := &pb.Command{}
		if err := proto.Unmarshal(raw, cmd); err != nil {
			continue
		}
		ra, rb := a.Apply(cmd), b.Apply(proto.Clone(cmd).(*pb.Command))
		if !proto.Equal(ra, rb) {
			t.Fatalf("step %d: results differ:\n%v\n%v", steps, ra, rb)
		}
		checkInvariants(t, a)
		if steps%8 == 7 {
			roundTrip(steps)
		}
	}
}
