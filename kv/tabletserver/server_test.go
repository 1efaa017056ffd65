package tabletserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// fakeCoord is an in-memory lock service with one file per path, whose
// lock the test can take away and whose file it can delete.
type fakeCoord struct {
	mu    sync.Mutex
	files map[string][]byte
	locks map[string]*fakeLock
}

type fakeLock struct {
	c      *fakeCoord
	path   string
	held   bool
	lost   chan struct{}
	refuse bool // Relock fails while set
}

func newFakeCoord() *fakeCoord {
	return &fakeCoord{files: map[string][]byte{}, locks: map[string]*fakeLock{}}
}

func (c *fakeCoord) Lock(ctx context.Context, path string, contents []byte) (Lock, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.locks[path]; l != nil && l.held {
		return nil, errors.New("locked by another session")
	}
	if _, ok := c.files[path]; !ok {
		c.files[path] = contents
	}
	l := &fakeLock{c: c, path: path, held: true, lost: make(chan struct{})}
	c.locks[path] = l
	return l, nil
}

func (l *fakeLock) Held() bool {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.held
}

func (l *fakeLock) Lost() <-chan struct{} {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.lost
}

func (l *fakeLock) LeaseEnd() time.Time { return time.Time{} }

func (l *fakeLock) Relock(ctx context.Context) error {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	if _, ok := l.c.files[l.path]; !ok {
		return ErrFileGone
	}
	if l.refuse {
		return errors.New("the lock is held elsewhere")
	}
	l.held = true
	return nil
}

func (l *fakeLock) Release(ctx context.Context) error {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.held = false
	return nil
}

// lose takes the lock away, as a lapsed session would; refuse keeps the
// server from taking it back.
func (l *fakeLock) lose(refuse bool) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.held, l.refuse = false, refuse
	close(l.lost)
	l.lost = make(chan struct{})
}

func (c *fakeCoord) remove(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.files, path)
}

type testServer struct {
	srv   *Server
	store *tablet.Store
	coord *fakeCoord
	cli   pb.TabletServerClient
	fatal chan error
}

// startServer runs a server over a store with table t (families f and g,
// tablets split at "m"); opts adjust its options.
func startServer(t *testing.T, opts ...func(*Options)) *testServer {
	t.Helper()
	ctx := context.Background()
	store := tablet.New(dfs.NewLocal(t.TempDir()), "", tablet.Options{})
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	schema := model.Schema{Families: []model.Family{{Name: "f"}, {Name: "g"}}}
	if err := store.CreateTable(ctx, "t", schema, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{store: store, coord: newFakeCoord(), fatal: make(chan error, 1)}
	o := Options{ID: "ts1", Addr: ln.Addr().String(), Store: store, Coord: ts.coord,
		RelockBackoff: 5 * time.Millisecond, OnFatal: func(err error) { ts.fatal <- err }}
	for _, f := range opts {
		f(&o)
	}
	ts.srv = New(o)
	if err := ts.srv.Open(ctx); err != nil {
		t.Fatal(err)
	}
	go ts.srv.Serve(ln)
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ts.cli = pb.NewTabletServerClient(conn)
	t.Cleanup(func() {
		conn.Close()
		ts.srv.Close(ctx)
		store.Close(ctx)
	})
	return ts
}

func set(family, qualifier, value string) *pb.Mutation {
	return &pb.Mutation{Mutation: &pb.Mutation_SetCell_{SetCell: &pb.Mutation_SetCell{Family: family, Qualifier: []byte(qualifier), Timestamp: -1, Value: []byte(value)}}}
}

func code(err error) codes.Code { return status.Code(err) }

func TestRegistersWithItsAddress(t *testing.T) {
	ts := startServer(t)
	ts.coord.mu.Lock()
	contents, ok := ts.coord.files["/ls/local/cellar/servers/ts1"]
	ts.coord.mu.Unlock()
	if !ok || !strings.HasPrefix(string(contents), "127.0.0.1:") {
		t.Fatalf("server file: %q %v", contents, ok)
	}
}

func TestDataRPCs(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		row := fmt.Sprintf("r%02d", i)
		_, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte(row),
			Mutations: []*pb.Mutation{set("f", "a", "v"+row), set("f", "b", "w"+row), set("g", "c", "x")}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// ReadRow with a family and a qualifier regex.
	resp, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("r05"), Filter: &pb.Filter{Families: []string{"f"}, QualifierRegex: "b"}})
	if err != nil || !resp.Found || len(resp.Row.Cells) != 1 || string(resp.Row.Cells[0].Value) != "wr05" {
		t.Fatalf("ReadRow: %v %v", resp, err)
	}
	if resp, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("zz")}); err != nil || resp.Found {
		t.Fatalf("ReadRow of a missing row: %v %v", resp, err)
	}

	// A scan over two ranges that span the tablet boundary at "m", with a
	// row limit.
	var rows []string
	stream, err := ts.cli.Scan(ctx, &pb.ScanRequest{Table: "t", Ranges: []*pb.RowRange{
		{Start: []byte("r03"), End: []byte("r06")}, {Start: []byte("r20")}}, RowLimit: 8,
		Filter: &pb.Filter{ValueRegex: "v.*"}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range msg.Rows {
			if len(r.Cells) != 1 {
				t.Fatalf("row %s: %d cells through the value filter", r.Key, len(r.Cells))
			}
			rows = append(rows, string(r.Key))
		}
	}
	if got := strings.Join(rows, ","); got != "r03,r04,r05,r20,r21,r22,r23,r24" {
		t.Fatalf("scan: %s", got)
	}

	// MutateRows: each entry on its own.
	mr, err := ts.cli.MutateRows(ctx, &pb.MutateRowsRequest{Table: "t", Entries: []*pb.MutateRowsRequest_Entry{
		{Row: []byte("b1"), Mutations: []*pb.Mutation{set("f", "a", "1")}},
		{Row: []byte("b2"), Mutations: []*pb.Mutation{set("nope", "a", "1")}},
		{Row: []byte("b3"), Mutations: []*pb.Mutation{set("f", "a", "3")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if codes.Code(mr.Statuses[0].Code) != codes.OK || codes.Code(mr.Statuses[1].Code) != codes.NotFound ||
		codes.Code(mr.Statuses[2].Code) != codes.OK || !strings.Contains(mr.Statuses[1].Message, "nope") {
		t.Fatalf("MutateRows statuses: %v", mr.Statuses)
	}

	// ReadModifyWrite: increment twice, append once.
	for i := 0; i < 2; i++ {
		if _, err := ts.cli.ReadModifyWrite(ctx, &pb.ReadModifyWriteRequest{Table: "t", Row: []byte("c"), Rules: []*pb.ReadModifyWriteRequest_Rule{
			{Family: "f", Qualifier: []byte("n"), Rule: &pb.ReadModifyWriteRequest_Rule_Increment{Increment: 5}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	rmw, err := ts.cli.ReadModifyWrite(ctx, &pb.ReadModifyWriteRequest{Table: "t", Row: []byte("c"), Rules: []*pb.ReadModifyWriteRequest_Rule{
		{Family: "f", Qualifier: []byte("n"), Rule: &pb.ReadModifyWriteRequest_Rule_Increment{Increment: 1}},
		{Family: "f", Qualifier: []byte("s"), Rule: &pb.ReadModifyWriteRequest_Rule_Append{Append: []byte("xy")}},
	}})
	if err != nil || len(rmw.Cells) != 2 || binary.BigEndian.Uint64(rmw.Cells[0].Value) != 11 || string(rmw.Cells[1].Value) != "xy" {
		t.Fatalf("ReadModifyWrite: %v %v", rmw, err)
	}

	// CheckAndMutate: the predicate sees f:n, then does not see f:zzz.
	cm, err := ts.cli.CheckAndMutate(ctx, &pb.CheckAndMutateRequest{Table: "t", Row: []byte("c"),
		Predicate: &pb.Filter{Families: []string{"f"}, QualifierRegex: "n"}, TrueMutations: []*pb.Mutation{set("g", "hit", "1")}})
	if err != nil || !cm.PredicateMatched {
		t.Fatalf("CheckAndMutate: %v %v", cm, err)
	}
	cm, err = ts.cli.CheckAndMutate(ctx, &pb.CheckAndMutateRequest{Table: "t", Row: []byte("c"),
		Predicate: &pb.Filter{QualifierRegex: "zzz"}, FalseMutations: []*pb.Mutation{set("g", "miss", "1")}})
	if err != nil || cm.PredicateMatched {
		t.Fatalf("CheckAndMutate: %v %v", cm, err)
	}
	got, _ := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("c"), Filter: &pb.Filter{Families: []string{"g"}}})
	if len(got.GetRow().GetCells()) != 2 {
		t.Fatalf("after CheckAndMutate: %v", got)
	}

	// SampleRowKeys: one sample per tablet, ending with the table's end.
	sr, err := ts.cli.SampleRowKeys(ctx, &pb.SampleRowKeysRequest{Table: "t"})
	if err != nil || len(sr.Samples) != 2 || string(sr.Samples[0].RowKey) != "m" || len(sr.Samples[1].RowKey) != 0 {
		t.Fatalf("SampleRowKeys: %v %v", sr, err)
	}
	lt, err := ts.cli.ListTablets(ctx, &pb.ListTabletsRequest{})
	if err != nil || lt.Server != "ts1" || len(lt.Tablets) != 2 {
		t.Fatalf("ListTablets: %v %v", lt, err)
	}
}

func TestBadRequestsGetClearErrors(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	long := make([]byte, model.MaxRowKeyLen+1)
	cases := []struct {
		name string
		err  error
		want codes.Code
		text string
	}{
		{"no table", func() error { _, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Row: []byte("a")}); return err }(), codes.InvalidArgument, "table"},
		{"unknown table", func() error {
			_, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "nope", Row: []byte("a"), Mutations: []*pb.Mutation{set("f", "a", "1")}})
			return err
		}(), codes.NotFound, "nope"},
		{"oversized key", func() error {
			_, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: long, Mutations: []*pb.Mutation{set("f", "a", "1")}})
			return err
		}(), codes.InvalidArgument, "exceeds"},
		{"unknown family", func() error {
			_, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte("a"), Mutations: []*pb.Mutation{set("zz", "a", "1")}})
			return err
		}(), codes.NotFound, "zz"}, // as Cloud Bigtable and its emulator answer
		{"no mutations", func() error {
			_, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte("a")})
			return err
		}(), codes.InvalidArgument, "mutations"},
		{"bad regex", func() error {
			_, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("a"), Filter: &pb.Filter{QualifierRegex: "("}})
			return err
		}(), codes.InvalidArgument, "qualifier_regex"},
		{"ranges out of order", func() error {
			s, err := ts.cli.Scan(ctx, &pb.ScanRequest{Table: "t", Ranges: []*pb.RowRange{{Start: []byte("b"), End: []byte("c")}, {Start: []byte("a"), End: []byte("b")}}})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		}(), codes.InvalidArgument, "order"},
	}
	for _, c := range cases {
		if code(c.err) != c.want || !strings.Contains(c.err.Error(), c.text) {
			t.Errorf("%s: got %v, want %v mentioning %q", c.name, c.err, c.want, c.text)
		}
	}
}

func TestFencing(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	write := func() error {
		_, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte("a"), Mutations: []*pb.Mutation{set("f", "a", "1")}})
		return err
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	ts.coord.mu.Lock()
	l := ts.coord.locks[ts.srv.Path()]
	ts.coord.mu.Unlock()

	// Lost lock: not serving at once, then serving again once retaken.
	l.lose(true)
	if err := write(); code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "not serving") {
		t.Fatalf("write while fenced: %v", err)
	}
	l.c.mu.Lock()
	l.refuse = false
	l.c.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for write() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the server did not take its lock back")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The file deleted while fenced: the server stops for good.
	ts.coord.remove(ts.srv.Path())
	l.lose(true)
	select {
	case err := <-ts.fatal:
		if !errors.Is(err, ErrFileGone) {
			t.Fatalf("fatal error: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop when its file was deleted")
	}
	l.c.mu.Lock()
	l.held = true // even a lock that comes back must not revive it
	l.c.mu.Unlock()
	if err := write(); code(err) != codes.FailedPrecondition {
		t.Fatalf("write after the file was deleted: %v", err)
	}
}
