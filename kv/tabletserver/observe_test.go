package tabletserver

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// rpcLog records what ObserveRPC hears.
type rpcLog struct {
	mu    sync.Mutex
	calls []string
	codes []codes.Code
}

func (l *rpcLog) observe(method string, d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, method)
	l.codes = append(l.codes, code(err))
}

func (l *rpcLog) take() ([]string, []codes.Code) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, k := l.calls, l.codes
	l.calls, l.codes = nil, nil
	return c, k
}

// TestObserveRPC: calls over gRPC and through Local reach ObserveRPC with
// their method name and gRPC code, streams included.
func TestObserveRPC(t *testing.T) {
	var log rpcLog
	ts := startServer(t, func(o *Options) { o.ObserveRPC = log.observe })
	ctx := context.Background()

	if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte("a"), Mutations: []*pb.Mutation{set("f", "q", "v")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "nope", Row: []byte("a")}); code(err) != codes.NotFound {
		t.Fatalf("ReadRow of a missing table: %v", err)
	}
	stream, err := ts.cli.Scan(ctx, &pb.ScanRequest{Table: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	// The server reports a stream once its handler returns, which may be
	// just after the client sees the end.
	deadline := time.Now().Add(5 * time.Second)
	var calls []string
	var got []codes.Code
	for len(calls) < 3 && time.Now().Before(deadline) {
		c, k := log.take()
		calls, got = append(calls, c...), append(got, k...)
		time.Sleep(time.Millisecond)
	}
	want := []string{"MutateRow", "ReadRow", "Scan"}
	if len(calls) != 3 || calls[0] != want[0] || calls[1] != want[1] || calls[2] != want[2] ||
		got[0] != codes.OK || got[1] != codes.NotFound || got[2] != codes.OK {
		t.Fatalf("observed %v with codes %v; want %v with OK, NotFound, OK", calls, got, want)
	}

	local := ts.srv.Local()
	if _, err := local.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if calls, got := log.take(); len(calls) != 1 || calls[0] != "ReadRow" || got[0] != codes.OK {
		t.Fatalf("a local ReadRow was observed as %v %v", calls, got)
	}
}

// TestLocalWithoutObserver: with no hook, Local is the server itself.
func TestLocalWithoutObserver(t *testing.T) {
	ts := startServer(t)
	if ts.srv.Local() != pb.TabletServerServer(ts.srv) {
		t.Fatal("Local wraps the server though nothing observes it")
	}
}
