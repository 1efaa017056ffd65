package master

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// seqCoord is fakeCoord whose locks have a sequencer.
type seqCoord struct {
	*fakeCoord
	seq client.Sequencer
}

type seqLock struct {
	*fakeLock
	seq client.Sequencer
}

func (l seqLock) Sequencer() (client.Sequencer, error) { return l.seq, nil }

func (c seqCoord) Lock(ctx context.Context, path string, contents []byte) (Lock, error) {
	l, err := c.fakeCoord.Lock(ctx, path, contents)
	if err != nil {
		return nil, err
	}
	return seqLock{fakeLock: l.(*fakeLock), seq: c.seq}, nil
}

// recordingServer records the sequencer each method's calls carried.
type recordingServer struct {
	pb.UnimplementedTabletServerServer
	mu   sync.Mutex
	seqs map[string][]string // method -> sequencers ("" for none)
}

func (s *recordingServer) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	seq, ok, err := client.SequencerFrom(ctx)
	v := ""
	if ok && err == nil {
		v = seq.String()
	}
	s.mu.Lock()
	s.seqs[info.FullMethod] = append(s.seqs[info.FullMethod], v)
	s.mu.Unlock()
	return handler(ctx, req)
}

func (s *recordingServer) calls(method string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seqs["/"+pb.TabletServer_ServiceDesc.ServiceName+"/"+method]...)
}

func (s *recordingServer) ListTablets(context.Context, *pb.ListTabletsRequest) (*pb.ListTabletsResponse, error) {
	return &pb.ListTabletsResponse{}, nil
}

func (s *recordingServer) MutateRow(context.Context, *pb.MutateRowRequest) (*pb.MutateRowResponse, error) {
	return &pb.MutateRowResponse{}, nil
}

// TestMasterSendsItsSequencer: an active master whose lock has a
// sequencer sends it on its calls to the tablet servers and on its
// METADATA mutations through its kv client.
func TestMasterSendsItsSequencer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingServer{seqs: map[string][]string{}}
	g := grpc.NewServer(grpc.UnaryInterceptor(rec.intercept))
	pb.RegisterTabletServerServer(g, rec)
	go g.Serve(ln)
	defer g.Stop()

	seq := client.Sequencer{Path: "/cellar/master", Instance: 4, Generation: 9, LockDelay: time.Second}
	c := seqCoord{fakeCoord: &fakeCoord{files: map[string]*fakeFile{}, lost: make(chan struct{})}, seq: seq}
	c.set("/ls/local/cellar/servers/a", &fakeFile{locked: true, contents: []byte(ln.Addr().String())})
	// A bare address as the root file: the kv client finds the root
	// tablet there, and the master's rounds leave it alone.
	c.set("/ls/local/cellar/root", &fakeFile{contents: []byte(ln.Addr().String())})
	m := New(Options{Addr: "m:1", Coord: c, ScanInterval: time.Hour})
	ctx := context.Background()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if got := rec.calls("ListTablets"); len(got) == 0 || got[0] != seq.String() {
		t.Fatalf("ListTablets carried %q, want %q", got, seq.String())
	}
	// A row of the root tablet, which the client reaches without a lookup.
	row := []byte{0x00, 0x01}
	if err := m.kv().Apply(ctx, client.MetaTable, &model.RowMutation{Row: row, Mutations: []model.Mutation{model.DeleteRow()}}); err != nil {
		t.Fatal(err)
	}
	if got := rec.calls("MutateRow"); len(got) != 1 || got[0] != seq.String() {
		t.Fatalf("the METADATA mutation carried %q, want %q", got, seq.String())
	}
}
