package client_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/kv/tabletserver"
)

// lock is an always-granted lock the test can take away.
type lock struct {
	mu   sync.Mutex
	held bool
	lost chan struct{}
}

func (l *lock) Held() bool                                                      { l.mu.Lock(); defer l.mu.Unlock(); return l.held }
func (l *lock) Lost() <-chan struct{}                                           { l.mu.Lock(); defer l.mu.Unlock(); return l.lost }
func (l *lock) Relock(context.Context) error                                    { return errors.New("refused") }
func (l *lock) LeaseEnd() time.Time                                             { return time.Time{} }
func (l *lock) Release(context.Context) error                                   { return nil }
func (l *lock) fence()                                                          { l.mu.Lock(); l.held = false; close(l.lost); l.mu.Unlock() }
func (l *lock) Lock(context.Context, string, []byte) (tabletserver.Lock, error) { return l, nil }

type server struct {
	addr  string
	store *tablet.Store
	lock  *lock
	srv   *tabletserver.Server
}

// startServer runs a tablet server over a store with the given tables.
func startServer(t *testing.T, name string, tables map[string][][]byte, schema model.Schema) *server {
	t.Helper()
	ctx := context.Background()
	store := tablet.New(dfs.NewLocal(t.TempDir()), "", tablet.Options{})
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	for name, splits := range tables {
		s := schema
		if name == client.MetaTable {
			s = model.MetaSchema()
		}
		if err := store.CreateTable(ctx, name, s, splits); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &lock{held: true, lost: make(chan struct{})}
	srv := tabletserver.New(tabletserver.Options{ID: name, Addr: ln.Addr().String(), Store: store, Coord: l, RelockBackoff: time.Hour})
	if err := srv.Open(ctx); err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(ctx); store.Close(ctx) })
	return &server{addr: ln.Addr().String(), store: store, lock: l, srv: srv}
}

// describe writes the METADATA row of a tablet into the store that holds
// METADATA.
func describe(t *testing.T, meta *server, d model.TabletDescriptor) {
	t.Helper()
	m, err := d.Mutation(model.ServerTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.store.Apply(context.Background(), client.MetaTable, m); err != nil {
		t.Fatal(err)
	}
}

type rootFile struct {
	addr  string
	reads atomic.Int32
}

func (r *rootFile) Root(context.Context) (string, error) { r.reads.Add(1); return r.addr, nil }

// cluster is a METADATA server and two servers of table t, whose tablets
// end at "g", "p" and the end, all on a first.
type cluster struct {
	meta, a, b *server
	root       *rootFile
	calls      atomic.Int32 // RPCs the client made
	c          *client.Client
}

func newCluster(t *testing.T) *cluster {
	return newClusterWith(t, model.Schema{Families: []model.Family{{Name: "f"}}})
}

// newClusterWith is newCluster with t's schema.
func newClusterWith(t *testing.T, schema model.Schema) *cluster {
	userKey := model.MetaKey("t", []byte("p"))
	cl := &cluster{
		// METADATA: the root tablet, one tablet up to t's row for "p", one after.
		meta: startServer(t, "meta", map[string][][]byte{client.MetaTable: {model.MetaRootEnd, append(userKey, 0)}}, schema),
		a:    startServer(t, "a", map[string][][]byte{"t": {[]byte("g"), []byte("p")}}, schema),
		b:    startServer(t, "b", map[string][][]byte{"t": {[]byte("g"), []byte("p")}}, schema),
	}
	cl.root = &rootFile{addr: cl.meta.addr}
	// The root tablet describes METADATA's other two tablets.
	describe(t, cl.meta, model.TabletDescriptor{Table: "", Start: model.MetaRootEnd, End: append(userKey, 0), Addr: cl.meta.addr})
	describe(t, cl.meta, model.TabletDescriptor{Table: "", Start: append(userKey, 0), Addr: cl.meta.addr})
	for _, r := range [][2]string{{"", "g"}, {"g", "p"}, {"p", ""}} {
		describe(t, cl.meta, model.TabletDescriptor{Table: "t", Start: []byte(r[0]), End: []byte(r[1]), Addr: cl.a.addr})
	}
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		cl.calls.Add(1)
		return inv(ctx, method, req, reply, cc, opts...)
	}
	countStream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, s grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cl.calls.Add(1)
		return s(ctx, desc, cc, method, opts...)
	}
	cl.c = client.New(client.Options{Root: cl.root, Prefetch: 2, DialOptions: []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(count), grpc.WithChainStreamInterceptor(countStream)}})
	t.Cleanup(func() { cl.c.Close() })
	return cl
}

func set(row, value string) *model.RowMutation {
	return &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{model.SetCell("f", []byte("q"), model.ServerTimestamp, []byte(value))}}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestLookupRoundTrips checks the hierarchy's costs: a cold lookup takes
// three round trips (root file, root tablet, METADATA tablet), a cached
// one none, and the prefetched METADATA rows spare the next lookups.
func TestLookupRoundTrips(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	if err := cl.c.Apply(c, "t", set("a", "1")); err != nil {
		t.Fatal(err)
	}
	if n, r := cl.calls.Load(), cl.root.reads.Load(); n != 3 || r != 1 {
		t.Fatalf("cold: %d RPCs and %d root reads, want 2 METADATA reads + the write, and 1 root read", n, r)
	}
	cl.calls.Store(0)
	if err := cl.c.Apply(c, "t", set("b", "2")); err != nil {
		t.Fatal(err)
	}
	// "h" is in the tablet ending at "p", which the first lookup prefetched.
	if err := cl.c.Apply(c, "t", set("h", "3")); err != nil {
		t.Fatal(err)
	}
	if n := cl.calls.Load(); n != 2 {
		t.Fatalf("cached: %d RPCs for two writes", n)
	}
	// "x" is in t's last tablet, described in METADATA's other tablet,
	// whose location the root read prefetched.
	cl.calls.Store(0)
	if err := cl.c.Apply(c, "t", set("x", "4")); err != nil {
		t.Fatal(err)
	}
	if n := cl.calls.Load(); n != 2 {
		t.Fatalf("a row in another METADATA tablet: %d RPCs, want its METADATA tablet + the write", n)
	}
}

func TestOperationsAcrossTablets(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	var ms []*model.RowMutation
	for i := 0; i < 26; i++ {
		ms = append(ms, set(string(rune('a'+i)), fmt.Sprint(i)))
	}
	ms = append(ms, &model.RowMutation{Row: []byte("bad"), Mutations: []model.Mutation{model.SetCell("nope", nil, 1000, nil)}})
	errs := cl.c.ApplyBulk(c, "t", ms)
	for i, err := range errs[:26] {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if errs[26] == nil || !strings.Contains(errs[26].Error(), "nope") {
		t.Fatalf("the bad entry: %v", errs[26])
	}

	row, found, err := cl.c.ReadRow(c, "t", []byte("q"), client.Filter{})
	if err != nil || !found || string(row.Cells[0].Value) != "16" {
		t.Fatalf("ReadRow: %v %v %v", row, found, err)
	}
	// A scan over all three tablets, with a limit and a value filter.
	sc := cl.c.Scan(c, "t", model.RowRange{Start: []byte("e")}, client.Filter{ValueRegex: "[0-9]+"}, 8)
	var keys []string
	for sc.Next() {
		keys = append(keys, string(sc.Row().Key))
	}
	if sc.Err() != nil || strings.Join(keys, "") != "efghijkl" {
		t.Fatalf("scan: %v %v", keys, sc.Err())
	}
	sc = cl.c.Scan(c, "t", model.RowRange{Start: []byte("f"), End: []byte("r")}, client.Filter{}, 0)
	keys = nil
	for sc.Next() {
		keys = append(keys, string(sc.Row().Key))
	}
	if sc.Err() != nil || strings.Join(keys, "") != "fghijklmnopq" {
		t.Fatalf("bounded scan: %v %v", keys, sc.Err())
	}
	// Reversed, over the three tablets, bounded or not, with a limit.
	for _, tc := range []struct {
		rng   model.RowRange
		f     client.Filter
		limit int64
		want  string
	}{
		{model.RowRange{}, client.Filter{}, 0, "zyxwvutsrqponmlkjihgfedcba"},
		{model.RowRange{Start: []byte("f"), End: []byte("r")}, client.Filter{}, 0, "qponmlkjihgf"},
		{model.RowRange{Start: []byte("c")}, client.Filter{ValueRegex: "1[0-9]"}, 0, "tsrqponmlk"},
		{model.RowRange{End: []byte("h")}, client.Filter{}, 3, "gfe"},
		{model.RowRange{Start: []byte("h"), End: []byte("h\x00")}, client.Filter{}, 0, "h"},
		{model.RowRange{Start: []byte("h"), End: []byte("h")}, client.Filter{}, 0, ""},
	} {
		sc = cl.c.ScanReversed(c, "t", tc.rng, tc.f, tc.limit)
		keys = nil
		for sc.Next() {
			keys = append(keys, string(sc.Row().Key))
		}
		if sc.Err() != nil || strings.Join(keys, "") != tc.want {
			t.Fatalf("reversed scan of %v (limit %d): %v %v, want %s", tc.rng, tc.limit, keys, sc.Err(), tc.want)
		}
	}

	cells, err := cl.c.ReadModifyWrite(c, "t", []byte("n"), []client.ReadModifyWriteRule{{Family: "f", Qualifier: []byte("n"), Increment: 7}})
	if err != nil || binary.BigEndian.Uint64(cells[0].Value) != 7 {
		t.Fatalf("ReadModifyWrite: %v %v", cells, err)
	}
	// CompareAndMutate: a stale expect fails, the current one swaps.
	seven := binary.BigEndian.AppendUint64(nil, 7)
	for _, tc := range []struct {
		ex   []model.Expect
		want bool
	}{
		{[]model.Expect{{Family: "f", Qualifier: []byte("n"), Value: []byte("old")}}, false},
		{[]model.Expect{{Family: "f", Qualifier: []byte("n"), Absent: true}}, false},
		{[]model.Expect{{Family: "f", Qualifier: []byte("n"), Value: seven}, {Family: "f", Qualifier: []byte("m"), Absent: true}}, true},
	} {
		ok, err := cl.c.CompareAndMutate(c, "t", []byte("n"), client.Filter{}, tc.ex,
			[]model.Mutation{model.SetCell("f", []byte("m"), -1, []byte("x"))}, nil)
		if err != nil || ok != tc.want {
			t.Fatalf("CompareAndMutate(%v) = %v %v, want %v", tc.ex, ok, err, tc.want)
		}
	}
	if _, err := cl.c.CompareAndMutate(c, "t", []byte("n"), client.Filter{Families: []string{"f"}}, []model.Expect{{Family: "f", Absent: true}}, nil, nil); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("expects with a family filter: %v", err)
	}
	ok, err := cl.c.CheckAndMutate(c, "t", []byte("n"), client.Filter{QualifierRegex: "n"},
		[]model.Mutation{model.DeleteRow()}, nil)
	if err != nil || !ok {
		t.Fatalf("CheckAndMutate: %v %v", ok, err)
	}
	if _, found, _ := cl.c.ReadRow(c, "t", []byte("n"), client.Filter{}); found {
		t.Fatal("the row survived CheckAndMutate's DeleteRow")
	}
	if err := cl.c.Apply(c, "nosuch", set("a", "1")); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("an unknown table: %v", err)
	}
	cl.calls.Store(0)
	long := string(make([]byte, model.MaxRowKeyLen+1))
	if err := cl.c.Apply(c, "t", set(long, "1")); err == nil || !strings.Contains(err.Error(), "exceeds") || cl.calls.Load() != 0 {
		t.Fatalf("an oversized key: %v after %d RPCs", err, cl.calls.Load())
	}
	if err := cl.c.Apply(c, "t", &model.RowMutation{Row: []byte("a"), Mutations: []model.Mutation{model.SetCell("nofamily", nil, 1000, nil)}}); err == nil || !strings.Contains(err.Error(), "nofamily") {
		t.Fatalf("an unknown family: %v", err)
	}
}

// TestStaleLocationIsRelocated moves t's tablets from a to b: a is fenced
// and METADATA now names b. The client's cached locations are stale; it
// must find b, within its retry loop, for writes and scans.
func TestStaleLocationIsRelocated(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	if err := cl.c.Apply(c, "t", set("a", "1")); err != nil {
		t.Fatal(err)
	}
	cl.a.lock.fence()
	for _, r := range [][2]string{{"", "g"}, {"g", "p"}, {"p", ""}} {
		describe(t, cl.meta, model.TabletDescriptor{Table: "t", Start: []byte(r[0]), End: []byte(r[1]), Addr: cl.b.addr})
	}
	cl.calls.Store(0)
	if err := cl.c.Apply(c, "t", set("a", "2")); err != nil {
		t.Fatal(err)
	}
	// The stale write, one METADATA read, the write at b.
	if n := cl.calls.Load(); n > 6 {
		t.Fatalf("a stale lookup took %d RPCs", n)
	}
	row, found, err := cl.b.store.ReadRow(c, "t", []byte("a"), tablet.ReadOptions{})
	if err != nil || !found || string(row.Cells[0].Value) != "2" {
		t.Fatalf("the write did not reach b: %v %v %v", row, found, err)
	}
	if err := cl.c.Apply(c, "t", set("z", "3")); err != nil {
		t.Fatal(err)
	}
	// A batch whose cached location is stale ("h"'s tablet was cached, on
	// a, by the first lookup's prefetch) is relocated too.
	for _, err := range cl.c.ApplyBulk(c, "t", []*model.RowMutation{set("h", "1")}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	sc := cl.c.Scan(c, "t", model.RowRange{}, client.Filter{}, 0)
	var keys []string
	for sc.Next() {
		keys = append(keys, string(sc.Row().Key))
	}
	if sc.Err() != nil || strings.Join(keys, ",") != "a,h,z" {
		t.Fatalf("scan after the move: %v %v", keys, sc.Err())
	}
	sc = cl.c.ScanReversed(c, "t", model.RowRange{}, client.Filter{}, 0)
	keys = nil
	for sc.Next() {
		keys = append(keys, string(sc.Row().Key))
	}
	if sc.Err() != nil || strings.Join(keys, ",") != "z,h,a" {
		t.Fatalf("reversed scan after the move: %v %v", keys, sc.Err())
	}
}

// TestDeadlineBoundsRetries checks that a tablet nobody serves fails when
// the caller's deadline ends, with the last error named.
func TestDeadlineBoundsRetries(t *testing.T) {
	cl := newCluster(t)
	cl.a.lock.fence()
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := cl.c.Apply(c, "t", set("a", "1"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not serving") {
		t.Fatalf("Apply to a tablet nobody serves: %v", err)
	}
}

// TestScanResumesAcrossChunks scans more rows of one tablet than one call
// returns: every row comes once, in order.
func TestScanResumesAcrossChunks(t *testing.T) {
	cl := newCluster(t)
	c := ctx(t)
	var ms []*model.RowMutation
	for i := 0; i < 2*1000+17; i++ { // past two calls of the scanner (1,000 rows each)
		ms = append(ms, set(fmt.Sprintf("a%05d", i), "v"))
	}
	for i, err := range cl.c.ApplyBulk(c, "t", ms) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	sc := cl.c.Scan(c, "t", model.RowRange{}, client.Filter{}, 0)
	n := 0
	for sc.Next() {
		if want := fmt.Sprintf("a%05d", n); string(sc.Row().Key) != want {
			t.Fatalf("row %d is %q, want %q", n, sc.Row().Key, want)
		}
		n++
	}
	if sc.Err() != nil || n != len(ms) {
		t.Fatalf("scanned %d rows of %d: %v", n, len(ms), sc.Err())
	}
	sc = cl.c.ScanReversed(c, "t", model.RowRange{}, client.Filter{}, 0)
	n = 0
	for sc.Next() {
		if want := fmt.Sprintf("a%05d", len(ms)-1-n); string(sc.Row().Key) != want {
			t.Fatalf("reversed: row %d is %q, want %q", n, sc.Row().Key, want)
		}
		n++
	}
	if sc.Err() != nil || n != len(ms) {
		t.Fatalf("reversed: scanned %d rows of %d: %v", n, len(ms), sc.Err())
	}
}

// TestSilentServerIsForgottenAtTheCallersDeadline checks that a server
// that answers nothing (paused, say) costs a caller whose deadline is
// shorter than AttemptTimeout one call, not every call: when the call's
// deadline ends, the cached location is dropped, so the next call looks
// the tablet up again and finds it where the master moved it. Apply
// (through do) and ApplyBulk (its own loop) both.
func TestSilentServerIsForgottenAtTheCallersDeadline(t *testing.T) {
	apply := func(ctx context.Context, c *client.Client, m *model.RowMutation) error {
		return c.Apply(ctx, "t", m)
	}
	bulk := func(ctx context.Context, c *client.Client, m *model.RowMutation) error {
		return c.ApplyBulk(ctx, "t", []*model.RowMutation{m})[0]
	}
	for name, write := range map[string]func(context.Context, *client.Client, *model.RowMutation) error{"Apply": apply, "ApplyBulk": bulk} {
		t.Run(name, func(t *testing.T) {
			cl := newCluster(t)
			var frozen atomic.Bool
			silent := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				if frozen.Load() && strings.HasSuffix(cc.Target(), cl.a.addr) {
					<-ctx.Done()
					return status.FromContextError(ctx.Err()).Err()
				}
				return inv(ctx, method, req, reply, cc, opts...)
			}
			// Every call's deadline here is shorter than the attempts', as
			// a gateway's clients' often are than the default 10 s.
			c := client.New(client.Options{Root: cl.root, AttemptTimeout: time.Hour,
				DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(silent)}})
			defer c.Close()
			if err := write(ctx(t), c, set("a", "1")); err != nil {
				t.Fatal(err)
			}
			// a goes silent; its tablets move to b.
			frozen.Store(true)
			for _, r := range [][2]string{{"", "g"}, {"g", "p"}, {"p", ""}} {
				describe(t, cl.meta, model.TabletDescriptor{Table: "t", Start: []byte(r[0]), End: []byte(r[1]), Addr: cl.b.addr})
			}
			short, cancel := context.WithTimeout(ctx(t), 200*time.Millisecond)
			err := write(short, c, set("a", "2"))
			cancel()
			if status.Code(err) != codes.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a write to a silent server: %v", err)
			}
			// The next call goes to b.
			if err := write(ctx(t), c, set("a", "3")); err != nil {
				t.Fatal(err)
			}
			row, found, err := cl.b.store.ReadRow(ctx(t), "t", []byte("a"), tablet.ReadOptions{})
			if err != nil || !found || string(row.Cells[0].Value) != "3" {
				t.Fatalf("the write did not reach b: %v %v %v", row, found, err)
			}
		})
	}
}

// TestCheckAndMutateIsNotResentAfterItMayHaveApplied checks that a
// CheckAndMutate whose connection breaks after the server applied it
// comes back as an error, not as the answer of a resent call that finds
// its own write: an insert-if-absent that took effect must not report
// that the row was already there.
func TestCheckAndMutateIsNotResentAfterItMayHaveApplied(t *testing.T) {
	cl := newCluster(t)
	var broken atomic.Int32
	breakAfter := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := inv(ctx, method, req, reply, cc, opts...)
		if err == nil && strings.HasSuffix(method, "/CheckAndMutate") && broken.Add(1) == 1 {
			// Applied, but the answer is lost with the connection.
			return status.Error(codes.Unavailable, "error reading from server: EOF")
		}
		return err
	}
	c := client.New(client.Options{Root: cl.root, DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(breakAfter)}})
	defer c.Close()
	matched, err := c.CheckAndMutate(ctx(t), "t", []byte("a"), client.Filter{}, nil,
		[]model.Mutation{model.SetCell("f", []byte("q"), model.ServerTimestamp, []byte("1"))})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("CheckAndMutate whose answer was lost: matched %v, %v; want Unavailable (outcome unknown)", matched, err)
	}
	// It did take effect, once.
	row, found, err := cl.a.store.ReadRow(ctx(t), "t", []byte("a"), tablet.ReadOptions{})
	if err != nil || !found || len(row.Cells) != 1 {
		t.Fatalf("the row after the lost answer: %v %v %v", row, found, err)
	}
	// A refusal before the call ("not serving") is still retried.
	cl.a.lock.fence()
	for _, r := range [][2]string{{"", "g"}, {"g", "p"}, {"p", ""}} {
		describe(t, cl.meta, model.TabletDescriptor{Table: "t", Start: []byte(r[0]), End: []byte(r[1]), Addr: cl.b.addr})
	}
	if matched, err := c.CheckAndMutate(ctx(t), "t", []byte("b"), client.Filter{}, nil,
		[]model.Mutation{model.SetCell("f", []byte("q"), model.ServerTimestamp, []byte("1"))}); err != nil || matched {
		t.Fatalf("CheckAndMutate after a move: matched %v, %v", matched, err)
	}
}
