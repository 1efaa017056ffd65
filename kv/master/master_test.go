package master

import (
	"context"
	"errors"
	"net"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "github.com/cellardb/cellar/kv/tabletpb"
)

type fakeFile struct {
	locked   bool
	contents []byte
}

// fakeCoord is an in-memory lock service.
type fakeCoord struct {
	mu    sync.Mutex
	files map[string]*fakeFile
	lost  chan struct{}
}

func (c *fakeCoord) Lock(ctx context.Context, path string, contents []byte) (Lock, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[path] = &fakeFile{locked: true, contents: contents}
	return &fakeLock{c: c}, nil
}

func (c *fakeCoord) List(ctx context.Context, dir string) ([]File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []File
	for p, f := range c.files {
		if len(p) > len(dir)+1 && p[:len(dir)+1] == dir+"/" {
			out = append(out, File{Name: p[len(dir)+1:], Locked: f.locked, Contents: f.contents})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (c *fakeCoord) TakeAndDelete(ctx context.Context, path string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.files[path]
	if f == nil || f.locked {
		return false, nil
	}
	delete(c.files, path)
	return true, nil
}

func (c *fakeCoord) ReadFile(ctx context.Context, path string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.files[path]
	if f == nil {
		return nil, false, nil
	}
	return f.contents, true, nil
}

func (c *fakeCoord) WriteFile(ctx context.Context, path string, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[path] = &fakeFile{contents: data}
	return nil
}

func (c *fakeCoord) DeleteFile(ctx context.Context, path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.files, path)
	return nil
}

func (c *fakeCoord) set(path string, f *fakeFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[path] = f
}

type fakeLock struct{ c *fakeCoord }

func (l *fakeLock) Held() bool {
	select {
	case <-l.c.lost:
		return false
	default:
		return true
	}
}
func (l *fakeLock) Lost() <-chan struct{}             { return l.c.lost }
func (l *fakeLock) Release(ctx context.Context) error { return nil }

// tabletServer answers ListTablets with a fixed list.
type tabletServer struct {
	pb.UnimplementedTabletServerServer
	tablets []*pb.TabletInfo
}

func (s *tabletServer) ListTablets(context.Context, *pb.ListTabletsRequest) (*pb.ListTabletsResponse, error) {
	return &pb.ListTabletsResponse{Tablets: s.tablets}, nil
}

func TestScanFindsServersAndBuriesTheDead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	pb.RegisterTabletServerServer(g, &tabletServer{tablets: []*pb.TabletInfo{{Id: 1, Table: "t"}, {Id: 2, Table: "t"}}})
	go g.Serve(ln)
	defer g.Stop()
	// A port nobody answers on.
	silent, _ := net.Listen("tcp", "127.0.0.1:0")
	silentAddr := silent.Addr().String()
	silent.Close()

	c := &fakeCoord{files: map[string]*fakeFile{}, lost: make(chan struct{})}
	dir := "/ls/local/cellar/servers"
	c.set(dir+"/a", &fakeFile{locked: true, contents: []byte(ln.Addr().String())})
	c.set(dir+"/b", &fakeFile{locked: false, contents: []byte("127.0.0.1:1")})
	c.set(dir+"/c", &fakeFile{locked: true, contents: []byte(silentAddr)})
	fatal := make(chan error, 1)
	m := New(Options{Addr: "m:1", Coord: c, ScanInterval: 10 * time.Millisecond, MaxMisses: 2,
		OnFatal: func(err error) { fatal <- err }})
	ctx := context.Background()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)

	// The first scan, inside Open: b is dead; a serves two tablets.
	if d := m.Dead(); !reflect.DeepEqual(d, []string{"b"}) {
		t.Fatalf("dead after the first scan: %v", d)
	}
	servers := m.Servers()
	if len(servers) != 2 || servers[0].ID != "a" || len(servers[0].Tablets) != 2 {
		t.Fatalf("servers: %+v", servers)
	}
	// c does not answer, but its session still holds its lock: alive.
	time.Sleep(100 * time.Millisecond)
	if d := m.Dead(); len(d) != 1 {
		t.Fatalf("a silent server whose lock is held was buried: %v", d)
	}
	// Once its lock is free, it is buried.
	c.set(dir+"/c", &fakeFile{locked: false, contents: []byte(silentAddr)})
	deadline := time.Now().Add(10 * time.Second)
	for !reflect.DeepEqual(m.Dead(), []string{"b", "c"}) {
		if time.Now().After(deadline) {
			t.Fatalf("dead: %v", m.Dead())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Losing the master lock stops the master.
	close(c.lost)
	select {
	case err := <-fatal:
		if err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("fatal: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the master did not stop when it lost its lock")
	}
}
