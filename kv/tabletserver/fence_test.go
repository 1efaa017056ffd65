package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// fakeChecker is a lock service that knows one lock's current holder: a
// sequencer is valid if it names the current generation.
type fakeChecker struct {
	mu      sync.Mutex
	current uint64
	down    bool // the lock service does not answer
	hang    bool // the lock service is cut off: a check waits for its context
	calls   int
}

func (c *fakeChecker) CheckSequencer(ctx context.Context, seq client.Sequencer) error {
	c.mu.Lock()
	hang := c.hang
	c.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	switch {
	case c.down:
		return errors.New("no replica answers")
	case seq.Generation != c.current:
		return fmt.Errorf("%w: the lock changed hands (generation %d)", ErrStaleSequencer, c.current)
	}
	return nil
}

func (c *fakeChecker) set(gen uint64, down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.current, c.down = gen, down
}

func (c *fakeChecker) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const masterLock = "/cellar/master"

func withSeq(gen uint64) context.Context {
	return client.WithSequencer(context.Background(), client.Sequencer{Path: masterLock, Instance: 1, Generation: gen, LockDelay: 2 * time.Second})
}

// refused asserts that err is the fence's FailedPrecondition and that its
// message names each of want.
func refused(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if code(err) != codes.FailedPrecondition || !strings.HasPrefix(status.Convert(err).Message(), "refused") {
		t.Fatalf("%s: want a refusal, got %v", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s: %v does not name %q", what, err, w)
		}
	}
}

// TestFenceSequencers drives the sequencer checks of the admin RPCs with a
// fake lock service and clock: ordering, the check of a new generation,
// the trust window and its end, a lock service that does not answer, and
// admin calls without a sequencer.
func TestFenceSequencers(t *testing.T) {
	checker := &fakeChecker{current: 5}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := startServer(t, func(o *Options) {
		o.Sequencers, o.Now, o.SequencerCheckTimeout = checker, clock.now, 50*time.Millisecond
	})
	drop := func(ctx context.Context) error {
		_, err := ts.cli.DropTable(ctx, &pb.DropTableRequest{Table: "none"})
		return err
	}

	// Before any sequencer, an admin call without one is accepted.
	if err := drop(context.Background()); err != nil {
		t.Fatalf("no sequencer yet: %v", err)
	}
	if err := drop(withSeq(5)); err != nil || checker.count() != 1 {
		t.Fatalf("generation 5: %v, %d checks", err, checker.count())
	}
	// Within the trust window (half the lock-delay of 2 s) no new check.
	clock.advance(900 * time.Millisecond)
	if err := drop(withSeq(5)); err != nil || checker.count() != 1 {
		t.Fatalf("generation 5 again: %v, %d checks", err, checker.count())
	}
	// After it, the sequencer is checked again.
	clock.advance(200 * time.Millisecond)
	if err := drop(withSeq(5)); err != nil || checker.count() != 2 {
		t.Fatalf("generation 5 after the window: %v, %d checks", err, checker.count())
	}
	// An older generation is refused at once, naming both generations.
	refused(t, "generation 4", drop(withSeq(4)), "generation 4", "generation 5")
	if checker.count() != 2 {
		t.Fatalf("an older generation was checked with the lock service (%d checks)", checker.count())
	}
	// A newer generation that the lock service does not confirm is
	// refused and not remembered.
	refused(t, "unconfirmed generation 9", drop(withSeq(9)), "generation 9", "stale")
	if err := drop(withSeq(5)); err != nil {
		t.Fatalf("generation 5 after a refused 9: %v", err)
	}
	// The lock moves on to generation 7: the old holder's sequencer is
	// stale once its trust ends, and refused at once after 7 was seen.
	checker.set(7, false)
	clock.advance(2 * time.Second)
	refused(t, "generation 5 after the lock moved", drop(withSeq(5)), "generation 5", "stale")
	if err := drop(withSeq(7)); err != nil {
		t.Fatalf("generation 7: %v", err)
	}
	n := checker.count()
	for _, call := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"DropTable", drop},
		{"LoadTablet", func(ctx context.Context) error {
			_, err := ts.cli.LoadTablet(ctx, &pb.LoadTabletRequest{Schema: []byte(`{}`), Descriptor_: []byte(`{"table":"t"}`)})
			return err
		}},
		{"UnloadTablet", func(ctx context.Context) error {
			_, err := ts.cli.UnloadTablet(ctx, &pb.UnloadTabletRequest{Table: "t", Id: 1})
			return err
		}},
		{"SplitTablet", func(ctx context.Context) error {
			_, err := ts.cli.SplitTablet(ctx, &pb.SplitTabletRequest{Table: "t", Id: 1})
			return err
		}},
		{"CompactTablet", func(ctx context.Context) error {
			_, err := ts.cli.CompactTablet(ctx, &pb.CompactTabletRequest{Table: "t", Id: 1})
			return err
		}},
		{"MergeTablets", func(ctx context.Context) error {
			_, err := ts.cli.MergeTablets(ctx, &pb.MergeTabletsRequest{Table: "t", A: 1, B: 2})
			return err
		}},
		{"CreateTable", func(ctx context.Context) error {
			_, err := ts.cli.CreateTable(ctx, &pb.CreateTableRequest{Table: "u", Schema: []byte(`{"families":[{"name":"f"}]}`)})
			return err
		}},
		{"UpdateSchema", func(ctx context.Context) error {
			_, err := ts.cli.UpdateSchema(ctx, &pb.UpdateSchemaRequest{Table: "t", Schema: []byte(`{"families":[{"name":"f"}]}`)})
			return err
		}},
		{"ListFiles", func(ctx context.Context) error {
			_, err := ts.cli.ListFiles(ctx, &pb.ListFilesRequest{})
			return err
		}},
		{"PartitionLog", func(ctx context.Context) error {
			_, err := ts.cli.PartitionLog(ctx, &pb.PartitionLogRequest{Server: "dead"})
			return err
		}},
	} {
		refused(t, call.name+" with generation 5", call.do(withSeq(5)), "generation 5", "generation 7")
		refused(t, call.name+" without a sequencer", call.do(context.Background()), "without a sequencer", "generation 7")
	}
	if checker.count() != n {
		t.Fatalf("refusals asked the lock service %d times", checker.count()-n)
	}
	if _, err := ts.store.Tablet(1); err != nil {
		t.Fatalf("a refused call changed the store: %v", err)
	}

	// A lock service that does not answer: the new sequencer is neither
	// accepted nor refused as stale.
	checker.set(8, true)
	if err := drop(withSeq(8)); code(err) != codes.Unavailable {
		t.Fatalf("generation 8 with the lock service away: %v", err)
	}
	// A lock service that cannot be reached: the check gives up after
	// SequencerCheckTimeout instead of holding the master's call.
	checker.mu.Lock()
	checker.hang = true
	checker.mu.Unlock()
	if err := drop(withSeq(8)); code(err) != codes.Unavailable {
		t.Fatalf("generation 8 with the lock service cut off: %v", err)
	}
	// A malformed sequencer is an invalid argument.
	bad := metadata.AppendToOutgoingContext(context.Background(), client.SequencerKey, "seq:x")
	if err := drop(bad); code(err) != codes.InvalidArgument {
		t.Fatalf("malformed sequencer: %v", err)
	}
}

// TestFenceMetadataMutations: METADATA mutations carrying an old
// sequencer are refused, those without one (a tablet server's catalog
// writes) pass, and user tables never look at sequencers.
func TestFenceMetadataMutations(t *testing.T) {
	checker := &fakeChecker{current: 7}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	ts := startServer(t, func(o *Options) { o.Sequencers, o.Now = checker, clock.now })
	ctx := context.Background()
	if err := ts.store.CreateTable(ctx, client.MetaTable, model.MetaSchema(), nil); err != nil {
		t.Fatal(err)
	}
	row := []byte("t\x00zz")
	mut := []*pb.Mutation{set(model.MetaFamilyRange, "d", "x")}
	if _, err := ts.cli.MutateRow(withSeq(7), &pb.MutateRowRequest{Table: client.MetaTable, Row: row, Mutations: mut}); err != nil {
		t.Fatalf("METADATA mutation with generation 7: %v", err)
	}
	n := checker.count()
	refused(t, "MutateRow", func() error {
		_, err := ts.cli.MutateRow(withSeq(6), &pb.MutateRowRequest{Table: client.MetaTable, Row: row, Mutations: []*pb.Mutation{{Mutation: &pb.Mutation_DeleteRow_{DeleteRow: &pb.Mutation_DeleteRow{}}}}})
		return err
	}(), "generation 6", "generation 7")
	refused(t, "MutateRows", func() error {
		_, err := ts.cli.MutateRows(withSeq(6), &pb.MutateRowsRequest{Table: client.MetaTable, Entries: []*pb.MutateRowsRequest_Entry{{Row: row, Mutations: mut}}})
		return err
	}(), "generation 6")
	refused(t, "CheckAndMutate", func() error {
		_, err := ts.cli.CheckAndMutate(withSeq(6), &pb.CheckAndMutateRequest{Table: client.MetaTable, Row: row, TrueMutations: mut})
		return err
	}(), "generation 6")
	refused(t, "ReadModifyWrite", func() error {
		_, err := ts.cli.ReadModifyWrite(withSeq(6), &pb.ReadModifyWriteRequest{Table: client.MetaTable, Row: row,
			Rules: []*pb.ReadModifyWriteRequest_Rule{{Family: model.MetaFamilyRange, Qualifier: []byte("n"), Rule: &pb.ReadModifyWriteRequest_Rule_Increment{Increment: 1}}}})
		return err
	}(), "generation 6")
	// The refused delete did not happen.
	resp, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: client.MetaTable, Row: row})
	if err != nil || resp.Row == nil {
		t.Fatalf("the METADATA row after refused mutations: %v, %v", resp, err)
	}
	// A catalog write (no sequencer) and user-table writes pass.
	if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: client.MetaTable, Row: row, Mutations: mut}); err != nil {
		t.Fatalf("METADATA mutation without a sequencer: %v", err)
	}
	if _, err := ts.cli.MutateRow(withSeq(6), &pb.MutateRowRequest{Table: "t", Row: []byte("a"), Mutations: []*pb.Mutation{set("f", "a", "v")}}); err != nil {
		t.Fatalf("user-table mutation carrying an old sequencer: %v", err)
	}
	if checker.count() != n {
		t.Fatalf("%d checks with the lock service after the first", checker.count()-n)
	}
}

// TestSequencerEncoding round-trips a sequencer through its metadata form
// and refuses malformed ones.
func TestSequencerEncoding(t *testing.T) {
	s := client.Sequencer{Path: "/cellar/master", Instance: 3, Generation: 42, LockDelay: 1500 * time.Millisecond}
	got, err := client.ParseSequencer(s.String())
	if err != nil || got != s {
		t.Fatalf("round trip of %v: %v, %v", s, got, err)
	}
	for _, bad := range []string{"", "seq:1:2:3", "seq:a:2:3:eA", "seq:1:2:-3:eA", "seq:1:2:3:", "x:1:2:3:eA"} {
		if _, err := client.ParseSequencer(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if !(client.Sequencer{Instance: 1, Generation: 2}).Newer(client.Sequencer{Instance: 1, Generation: 1}) ||
		!(client.Sequencer{Instance: 2, Generation: 1}).Newer(client.Sequencer{Instance: 1, Generation: 9}) {
		t.Fatal("Newer orders by instance, then generation")
	}
}
