package master

import (
	"context"
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
	"google.golang.org/protobuf/proto"

	"github.com/cellardb/cellar/kv/masterpb"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// opsServer is a tablet server that splits and compacts on request: a
// split divides the tablet at the key (or at "m" for the midpoint), and a
// compaction reports half its bytes done until release is closed.
type opsServer struct {
	pb.UnimplementedTabletServerServer
	mu       sync.Mutex
	tablets  []*pb.TabletInfo
	nextID   uint64
	splits   []*pb.SplitTabletRequest
	running  uint64 // the id being compacted
	started  chan struct{}
	release  chan struct{}
	compacts []uint64
	// recovering are listed as tablets being recovered from a log.
	recovering []*pb.RecoveringTablet
}

func (s *opsServer) ListTablets(context.Context, *pb.ListTabletsRequest) (*pb.ListTabletsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &pb.ListTabletsResponse{}
	for _, t := range s.tablets {
		c := proto.Clone(t).(*pb.TabletInfo)
		if t.Id == s.running {
			c.CompactionDoneBytes, c.CompactionTotalBytes = 50, 100
		}
		out.Tablets = append(out.Tablets, c)
	}
	out.Recovering = s.recovering
	return out, nil
}

func (s *opsServer) SplitTablet(_ context.Context, req *pb.SplitTabletRequest) (*pb.SplitTabletResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.splits = append(s.splits, req)
	key := req.Key
	if len(key) == 0 {
		key = []byte("m")
	}
	for i, t := range s.tablets {
		if t.Id == req.Id && t.Table == req.Table {
			lo := &pb.TabletInfo{Id: s.nextID, Table: t.Table, Range: &pb.RowRange{Start: t.Range.GetStart(), End: key}}
			hi := &pb.TabletInfo{Id: s.nextID + 1, Table: t.Table, Range: &pb.RowRange{Start: key, End: t.Range.GetEnd()}}
			s.nextID += 2
			s.tablets = append(append(s.tablets[:i:i], lo, hi), s.tablets[i+1:]...)
			return &pb.SplitTabletResponse{Tablets: []*pb.TabletInfo{lo, hi}}, nil
		}
	}
	return nil, status.Error(codes.FailedPrecondition, "not serving: no such tablet")
}

func (s *opsServer) CompactTablet(ctx context.Context, req *pb.CompactTabletRequest) (*pb.CompactTabletResponse, error) {
	if req.Id == 99 {
		return nil, status.Error(codes.FailedPrecondition, "not serving: tablet 99 moved")
	}
	s.mu.Lock()
	s.running = req.Id
	s.mu.Unlock()
	if s.started != nil {
		s.started <- struct{}{}
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	s.running = 0
	s.compacts = append(s.compacts, req.Id)
	s.mu.Unlock()
	// Tablet 1 had a memtable: its input is more than its size.
	if req.Id == 1 {
		return &pb.CompactTabletResponse{InputBytes: 150}, nil
	}
	return &pb.CompactTabletResponse{}, nil
}

func (s *opsServer) split(i int) *pb.SplitTabletRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.splits[i]
}

func serveTablets(t *testing.T, s pb.TabletServerServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	pb.RegisterTabletServerServer(g, s)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return ln.Addr().String()
}

// opsMaster is a master over two fake servers, ts1-a (tablets of web)
// and ts2-b (METADATA), reached through its admin RPCs.
func opsMaster(t *testing.T) (*Master, masterpb.MasterClient, *opsServer, *opsServer) {
	t.Helper()
	s1 := &opsServer{nextID: 10, release: make(chan struct{}), tablets: []*pb.TabletInfo{
		{Id: 1, Table: "web", Range: &pb.RowRange{End: []byte("g")}, SizeBytes: 100},
		{Id: 2, Table: "web", Range: &pb.RowRange{Start: []byte("g")}, SizeBytes: 300},
	}}
	s2 := &opsServer{nextID: 10, release: make(chan struct{}), tablets: []*pb.TabletInfo{
		{Id: 1, Table: "METADATA", Range: &pb.RowRange{End: []byte("\x00\x03")}},
	}}
	c := &fakeCoord{files: map[string]*fakeFile{}, lost: make(chan struct{})}
	c.set("/ls/local/cellar/servers/ts1-a", &fakeFile{locked: true, contents: []byte(serveTablets(t, s1))})
	c.set("/ls/local/cellar/servers/ts2-b", &fakeFile{locked: true, contents: []byte(serveTablets(t, s2))})
	c.set("/ls/local/cellar/schema/web", &fakeFile{contents: []byte(`{"families":[{"name":"f"}]}`)})
	m := New(Options{Addr: "m:1", Coord: c})
	m.scan(context.Background())
	if len(m.Servers()) != 2 {
		t.Fatalf("servers: %+v", m.Servers())
	}
	return m, adminClient(t, m), s1, s2
}

// adminClient serves m's admin RPCs on a loopback port for the test and
// returns a client of them.
func adminClient(t *testing.T, m *Master) masterpb.MasterClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	masterpb.RegisterMasterServer(g, AdminServer{M: m})
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return masterpb.NewMasterClient(cc)
}

func wantCode(t *testing.T, what string, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), msg) {
		t.Fatalf("%s: %v; want %v with %q", what, err, code, msg)
	}
}

func TestListTabletsAndResolveServers(t *testing.T) {
	m, mc, _, s2 := opsMaster(t)
	s2.recovering = []*pb.RecoveringTablet{{Table: "web", Range: &pb.RowRange{Start: []byte("x")}, Log: "recovery/ts0/7", Records: 42}}
	ctx := context.Background()
	resp, err := mc.ListTablets(ctx, &masterpb.ListTabletsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tb := range resp.Tablets {
		got = append(got, tb.Table+"@"+string(tb.Start)+"@"+tb.Server)
	}
	if strings.Join(got, " ") != "METADATA@@ts2-b web@@ts1-a web@g@ts1-a" {
		t.Fatalf("tablets: %v", got)
	}
	if resp.Tablets[2].SizeBytes != 300 || resp.Tablets[2].ServerAddr == "" {
		t.Fatalf("tablet: %+v", resp.Tablets[2])
	}
	// A tablet being recovered from a dead server's log is listed apart,
	// with its replay's progress.
	if len(resp.Recovering) != 1 || !resp.Recovering[0].Recovering || resp.Recovering[0].RecoveredRecords != 42 ||
		resp.Recovering[0].Server != "ts2-b" || string(resp.Recovering[0].Start) != "x" {
		t.Fatalf("recovering: %+v", resp.Recovering)
	}
	resp, err = mc.ListTablets(ctx, &masterpb.ListTabletsRequest{Table: "web"})
	if err != nil || len(resp.Tablets) != 2 {
		t.Fatalf("web's tablets: %v %v", resp, err)
	}
	_, err = mc.ListTablets(ctx, &masterpb.ListTabletsRequest{Table: "nosuch"})
	wantCode(t, "list an unknown table", err, codes.NotFound, "cellar admin table ls")

	for name, want := range map[string]string{"ts1-a": "ts1-a", "ts1": "ts1-a", "ts2": "ts2-b"} {
		if s, err := m.resolveServer(name); err != nil || s.ID != want {
			t.Errorf("resolve %q: %v %v", name, s.ID, err)
		}
	}
	_, err = m.resolveServer("ts3")
	wantCode(t, "an unknown server", err, codes.InvalidArgument, "the live ones are: ts1-a, ts2-b")
}

func TestForcedSplit(t *testing.T) {
	_, mc, s1, _ := opsMaster(t)
	ctx := context.Background()
	resp, err := mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{Table: "web", Key: []byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Tablets) != 2 || string(resp.Tablets[1].Start) != "p" || resp.Tablets[0].Server != "ts1-a" {
		t.Fatalf("split at p: %+v", resp.Tablets)
	}
	if r := s1.split(0); r.Id != 2 || string(r.Key) != "p" {
		t.Fatalf("the server was asked to split %+v, want tablet 2 at p", r)
	}
	_, err = mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{Table: "web", Key: []byte("g")})
	wantCode(t, "split at a boundary", err, codes.FailedPrecondition, "already starts a tablet")
	// No key: the largest tablet, at its midpoint.
	if _, err := mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{Table: "web"}); err != nil {
		t.Fatal(err)
	}
	if r := s1.split(1); r.Id != 1 || len(r.Key) != 0 {
		t.Fatalf("a midpoint split asked %+v, want tablet 1 (the largest now) with no key", r)
	}
	// A named tablet.
	if _, err := mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{Table: "web", Tablet: &masterpb.TabletRef{Server: "ts1", Id: 11}}); err != nil {
		t.Fatal(err)
	}
	_, err = mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{Table: "web", Tablet: &masterpb.TabletRef{Server: "ts1", Id: 77}})
	wantCode(t, "split an unknown tablet", err, codes.NotFound, "serves no tablet 77")
	_, err = mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{Table: "nosuch", Key: []byte("a")})
	wantCode(t, "split an unknown table", err, codes.NotFound, "does not exist")
	_, err = mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{Table: "METADATA"})
	wantCode(t, "split METADATA", err, codes.InvalidArgument, "split a user table")
}

func TestForcedMoveChecks(t *testing.T) {
	_, mc, _, _ := opsMaster(t)
	ctx := context.Background()
	_, err := mc.MoveTablet(ctx, &masterpb.MoveTabletRequest{Tablet: &masterpb.TabletRef{Server: "ts1", Id: 1}, Target: "ts1-a"})
	wantCode(t, "move onto its own server", err, codes.FailedPrecondition, "already on server ts1-a")
	_, err = mc.MoveTablet(ctx, &masterpb.MoveTabletRequest{Tablet: &masterpb.TabletRef{Server: "ts1", Id: 1}, Target: "ts9"})
	wantCode(t, "move to an unknown server", err, codes.InvalidArgument, "no live tablet server")
	_, err = mc.MoveTablet(ctx, &masterpb.MoveTabletRequest{Tablet: &masterpb.TabletRef{Server: "ts2", Id: 1}})
	wantCode(t, "move METADATA", err, codes.InvalidArgument, "METADATA")
	_, err = mc.MoveTablet(ctx, &masterpb.MoveTabletRequest{Tablet: &masterpb.TabletRef{Server: "ts1", Id: 5}})
	wantCode(t, "move an unknown tablet", err, codes.NotFound, "serves no tablet 5")
	_, err = mc.MoveTablet(ctx, &masterpb.MoveTabletRequest{})
	wantCode(t, "move nothing", err, codes.InvalidArgument, "no tablet named")
}

func TestCompactTabletsStreamsProgress(t *testing.T) {
	_, mc, s1, _ := opsMaster(t)
	s1.started = make(chan struct{}, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := mc.CompactTablets(ctx, &masterpb.CompactTabletsRequest{Table: "web"})
	if err != nil {
		t.Fatal(err)
	}
	<-s1.started
	// The first tablet is half done (50 of 100 bytes at the server).
	var p *masterpb.CompactTabletsProgress
	for {
		if p, err = stream.Recv(); err != nil {
			t.Fatal(err)
		}
		if p.BytesDone > 0 {
			break
		}
	}
	if p.Done || p.TabletsTotal != 2 || p.BytesTotal != 400 || p.TabletsDone != 0 {
		t.Fatalf("progress while the first compaction runs: %+v", p)
	}
	close(s1.release)
	var last *masterpb.CompactTabletsProgress
	for {
		p, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = p
	}
	if last == nil || !last.Done || last.TabletsDone != 2 || last.BytesDone != 450 || last.BytesTotal != 450 {
		t.Fatalf("last progress: %+v", last)
	}
	s1.mu.Lock()
	compacts := s1.compacts
	s1.mu.Unlock()
	if len(compacts) != 2 {
		t.Fatalf("compacted %v", compacts)
	}

	// A tablet that moved away meanwhile: Aborted, run it again.
	s1.mu.Lock()
	s1.tablets[0].Id = 99
	s1.mu.Unlock()
	stream, _ = mc.CompactTablets(ctx, &masterpb.CompactTabletsRequest{Table: "web", Tablet: &masterpb.TabletRef{Server: "ts1", Id: 1}})
	_, err = stream.Recv()
	wantCode(t, "compact a tablet named by an old id", err, codes.NotFound, "serves no tablet 1")
	stream, _ = mc.CompactTablets(ctx, &masterpb.CompactTabletsRequest{Table: "web", Tablet: &masterpb.TabletRef{Server: "ts1", Id: 99}})
	_, err = stream.Recv()
	wantCode(t, "compact a tablet that moves", err, codes.Aborted, "run the compaction again")
	stream, _ = mc.CompactTablets(ctx, &masterpb.CompactTabletsRequest{Table: "nosuch"})
	_, err = stream.Recv()
	wantCode(t, "compact an unknown table", err, codes.NotFound, "does not exist")
}
