package tests

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/coord/cell"
	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/cli"
	"github.com/cellardb/cellar/ops/coordlock"
)

// kvCluster is a Chubby cell, tablet servers over one dfs root and a
// master, in one process, all talking over loopback.
type kvCluster struct {
	t       *testing.T
	dir     string
	dfsRoot string
	chubby  string
	cfg     kvClusterConfig

	mu      sync.Mutex
	servers map[string]*cli.TabletServer // by incarnation

	master *master.Master
	msess  *coordlock.Session
	kv     *kvclient.Client
}

type kvClusterConfig struct {
	servers      int
	splitSize    int64
	memtableSize int64
	mergeSize    int64
	noBalance    bool
	gcEvery      int
}

func (c *kvCluster) svc(principal string) *coordlock.Service {
	return &coordlock.Service{Client: coordclient.Options{Addrs: []string{c.chubby}, Principal: principal}}
}

func newKVCluster(t *testing.T, cfg kvClusterConfig) *kvCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	c := &kvCluster{t: t, dir: dir, dfsRoot: filepath.Join(dir, "dfs"), chubby: freeLoopbackPort(t), cfg: cfg, servers: map[string]*cli.TabletServer{}}
	replica := cell.New(cell.Options{Cell: "kvtest", ReplicaID: 1, Dir: filepath.Join(dir, "chubby"),
		Peers: map[uint64]cell.Peer{1: {RaftAddr: freeLoopbackPort(t), ClientAddr: c.chubby}}, Lease: 2 * time.Second, Grace: 2 * time.Second})
	if err := replica.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Close(context.Background()) })
	for i := range cfg.servers {
		c.startServer(fmt.Sprintf("ts%d", i+1))
	}
	msess, err := c.svc("master").NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.msess = msess
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.master = master.New(master.Options{Addr: mln.Addr().String(), Coord: coordlock.ForMaster{Service: c.svc("master"), Session: msess},
		ScanInterval: 100 * time.Millisecond, FS: dfs.NewLocal(c.dfsRoot), GCEvery: max(cfg.gcEvery, 1), MergeSize: cfg.mergeSize,
		NoBalance: cfg.noBalance, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err := c.master.Open(ctx); err != nil {
		t.Fatal(err)
	}
	admin := grpc.NewServer()
	masterpb.RegisterMasterServer(admin, master.AdminServer{M: c.master})
	go admin.Serve(mln)
	c.kv = kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: msess}})
	t.Cleanup(func() {
		// The master first, so that it does not reassign the servers'
		// tablets while they stop.
		admin.Stop()
		c.master.Close(context.Background())
		c.kv.Close()
		c.mu.Lock()
		for _, s := range c.servers {
			s.Abandon(context.Background())
		}
		c.mu.Unlock()
		msess.Close(context.Background())
	})
	eventually(t, "the master to see the servers", func() bool { return len(c.master.Servers()) == cfg.servers })
	return c
}

func (c *kvCluster) startServer(name string) *cli.TabletServer {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	ts, err := cli.StartTabletServer(ctx, c.svc("tabletserver:"+name), cli.TabletServerConfig{Name: name, Addr: ln.Addr().String(),
		FS: dfs.NewLocal(c.dfsRoot), SplitSize: c.cfg.splitSize, MemtableSize: c.cfg.memtableSize, Logger: slog.New(slog.NewTextHandler(c.t.Output(), nil))})
	if err != nil {
		c.t.Fatal(err)
	}
	go ts.Server().Serve(ln)
	c.mu.Lock()
	c.servers[ts.Store().Name()] = ts
	c.mu.Unlock()
	return ts
}

// crash stops a server without flushing, as a crash would leave it.
func (c *kvCluster) crash(ts *cli.TabletServer) {
	c.mu.Lock()
	delete(c.servers, ts.Store().Name())
	c.mu.Unlock()
	ts.Abandon(context.Background())
}

// tablets returns the tablets the live servers serve, by table.
func (c *kvCluster) tablets(table string) int {
	n := 0
	for _, s := range c.master.Servers() {
		for _, tb := range s.Tablets {
			if tb.Table == table {
				n++
			}
		}
	}
	return n
}

// metaRanges reads the rows METADATA holds for table.
func (c *kvCluster) metaRanges(ctx context.Context, table string) ([]string, error) {
	sc := c.kv.Scan(ctx, kvclient.MetaTable, model.RowRange{Start: []byte(table + "\x00"), End: []byte(table + "\x01")}, kvclient.Filter{}, 0)
	var out []string
	for sc.Next() {
		d, err := model.ParseTabletDescriptor(sc.Row())
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("[%q,%q)@%s", d.Start, d.End, d.Server))
	}
	return out, sc.Err()
}

func (c *kvCluster) put(ctx context.Context, table, row string) error {
	return c.kv.Apply(ctx, table, &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{
		model.SetCell("f", []byte("v"), model.ServerTimestamp, []byte("value of "+row))}})
}

// scanAll reads a table with a new client and checks that rows come in
// order, once each.
func (c *kvCluster) scanAll(ctx context.Context, table string) ([]string, error) {
	cold := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: c.msess}})
	defer cold.Close()
	sc := cold.Scan(ctx, table, model.RowRange{}, kvclient.Filter{}, 0)
	var keys []string
	for sc.Next() {
		k := string(sc.Row().Key)
		if n := len(keys); n > 0 && keys[n-1] >= k {
			return keys, fmt.Errorf("row %q after %q", k, keys[n-1])
		}
		v := ""
		for _, cell := range sc.Row().Cells {
			if string(cell.Qualifier) == "v" {
				v = string(cell.Value)
			}
		}
		if v != "value of "+k {
			return keys, fmt.Errorf("row %q holds %q in f:v", k, v)
		}
		keys = append(keys, k)
	}
	return keys, sc.Err()
}

var oneFamily = model.Schema{Families: []model.Family{{Name: "f"}}}

// TestKVClusterInProcess: the master sets up METADATA, creates tables and
// spreads their tablets over three servers with moves; a client finds
// every tablet through the root file, the root tablet and METADATA; a
// deleted table is gone.
func TestKVClusterInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := newKVCluster(t, kvClusterConfig{servers: 3, gcEvery: 3})
	if err := c.master.CreateTable(ctx, "users", oneFamily, [][]byte{[]byte("g"), []byte("m"), []byte("t")}); err != nil {
		t.Fatal(err)
	}
	if err := c.master.CreateTable(ctx, "events", oneFamily, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.master.CreateTable(ctx, "users", oneFamily, nil); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("creating users again: %v", err)
	}
	var want []string
	for i := range 200 {
		row := fmt.Sprintf("%c%03d", 'a'+i%26, i)
		want = append(want, row)
		for _, table := range []string{"users", "events"} {
			if err := c.put(ctx, table, row); err != nil {
				t.Fatalf("%s %s: %v", table, row, err)
			}
		}
	}
	slices.Sort(want)
	// Seven tablets (root, METADATA, four of users, events) over three
	// servers: balancing moves them until no server has two more than
	// another.
	eventually(t, "the tablets to spread over the servers", func() bool {
		counts := []int{}
		for _, s := range c.master.Servers() {
			counts = append(counts, len(s.Tablets))
		}
		return len(counts) == 3 && slices.Max(counts)-slices.Min(counts) <= 1 && c.tablets("users") == 4
	})
	for _, table := range []string{"users", "events"} {
		keys, err := c.scanAll(ctx, table)
		if err != nil || !slices.Equal(keys, want) {
			t.Fatalf("%s after the moves: %d rows, %v", table, len(keys), err)
		}
	}
	// The METADATA rows name the servers that serve the tablets.
	ranges, err := c.metaRanges(ctx, "users")
	if err != nil || len(ranges) != 4 {
		t.Fatalf("METADATA rows of users: %v %v", ranges, err)
	}
	if data, ok, err := c.msess.ReadFile(ctx, "/ls/local/cellar/schema/users"); err != nil || !ok || !strings.Contains(string(data), `"f"`) {
		t.Fatalf("schema file: %q %v %v", data, ok, err)
	}

	if err := c.master.DeleteTable(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.kv.ReadRow(ctx, "events", []byte("a000"), kvclient.Filter{}); status.Code(err) != codes.NotFound {
		t.Fatalf("reading a deleted table: %v", err)
	}
	if ranges, err := c.metaRanges(ctx, "events"); err != nil || len(ranges) != 0 {
		t.Fatalf("METADATA rows of a deleted table: %v %v", ranges, err)
	}
	if err := c.master.DeleteTable(ctx, "events"); status.Code(err) != codes.NotFound {
		t.Fatalf("deleting a deleted table: %v", err)
	}
}

// TestTabletServerCrashRecovery stops a server in the middle of a write
// load without flushing, then the server of the root tablet. The master
// buries each, has its log partitioned once, and loads its tablets
// elsewhere; every acknowledged write stays readable.
func TestTabletServerCrashRecovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := newKVCluster(t, kvClusterConfig{servers: 3, memtableSize: 64 << 10, noBalance: true})
	if err := c.master.CreateTable(ctx, "t", oneFamily, [][]byte{[]byte("k3"), []byte("k6")}); err != nil {
		t.Fatal(err)
	}
	var acked sync.Map
	var n atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				row := fmt.Sprintf("k%d-%d-%05d", i%9, w, i)
				wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
				err := c.put(wctx, "t", row)
				wcancel()
				if err == nil {
					acked.Store(row, true)
					n.Add(1)
				}
			}
		}()
	}
	eventually(t, "some writes", func() bool { return n.Load() > 300 })
	// Crash the server that holds the root tablet and the first tablet of
	// t: everything must come back.
	c.mu.Lock()
	var victim *cli.TabletServer
	for _, s := range c.servers {
		if victim == nil || len(s.Store().Tablets()) > len(victim.Store().Tablets()) {
			victim = s
		}
	}
	c.mu.Unlock()
	before := n.Load()
	t.Logf("crashing %s with %d tablets after %d writes", victim.Store().Name(), len(victim.Store().Tablets()), before)
	c.crash(victim)
	eventually(t, "writes to go on after the crash", func() bool { return n.Load() > before+300 })
	// Then the server of the root tablet: METADATA itself is recovered
	// from its log.
	c.startServer("ts4")
	c.mu.Lock()
	var rootServer *cli.TabletServer
	for _, s := range c.servers {
		for _, tb := range s.Store().Tablets() {
			if tb.Table() == kvclient.MetaTable && len(tb.Range().Start) == 0 {
				rootServer = s
			}
		}
	}
	c.mu.Unlock()
	if rootServer == nil {
		t.Fatal("no server holds the root tablet")
	}
	before = n.Load()
	t.Logf("crashing %s, which holds the root tablet", rootServer.Store().Name())
	c.crash(rootServer)
	eventually(t, "writes to go on after the root's server crashed", func() bool { return n.Load() > before+300 })
	close(stop)
	wg.Wait()
	if dead := c.master.Dead(); len(dead) != 2 || dead[0] != victim.Store().Name() || dead[1] != rootServer.Store().Name() {
		t.Fatalf("dead servers: %v", dead)
	}
	keys, err := c.scanAll(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, k := range keys {
		got[k] = true
	}
	missing := 0
	acked.Range(func(k, _ any) bool {
		if !got[k.(string)] {
			missing++
		}
		return true
	})
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged writes are missing", missing, n.Load())
	}
	t.Logf("%d acknowledged writes, %d rows read", n.Load(), len(keys))
}

// TestSplitsUnderLoad: tablets split while writers and scanners run; no
// scan across the splits loses or repeats a row, and METADATA ends with
// one row per tablet.
func TestSplitsUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := newKVCluster(t, kvClusterConfig{servers: 2, memtableSize: 64 << 10, splitSize: 256 << 10})
	if err := c.master.CreateTable(ctx, "big", oneFamily, nil); err != nil {
		t.Fatal(err)
	}
	// Incompressible padding, so that the tablets really grow.
	rnd := rand.New(rand.NewPCG(1, 2))
	pads := make([][]byte, 64)
	for i := range pads {
		pads[i] = make([]byte, 1000)
		for j := range pads[i] {
			pads[i][j] = byte(rnd.Uint32())
		}
	}
	var written atomic.Int64
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 3000; i += 2 {
				row := fmt.Sprintf("row%05d", i)
				err := c.kv.Apply(ctx, "big", &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{
					model.SetCell("f", []byte("v"), model.ServerTimestamp, []byte("value of "+row)),
					model.SetCell("f", []byte("pad"), model.ServerTimestamp, pads[i%len(pads)])}})
				if err != nil {
					errs <- err
					return
				}
				written.Add(1)
			}
		}()
	}
	// Scans during the load see a prefix-closed, ordered set of rows.
	for written.Load() < 3000 {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		keys, err := c.scanAll(ctx, "big")
		if err != nil {
			t.Fatalf("scan during splits: %v", err)
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Fatalf("row %s twice", k)
			}
			seen[k] = true
		}
	}
	wg.Wait()
	eventually(t, "the table to split", func() bool { return c.tablets("big") > 2 })
	keys, err := c.scanAll(ctx, "big")
	if err != nil || len(keys) != 3000 {
		t.Fatalf("after the load: %d rows, %v", len(keys), err)
	}
	eventually(t, "METADATA to hold one row per tablet", func() bool {
		ranges, err := c.metaRanges(ctx, "big")
		return err == nil && len(ranges) == c.tablets("big")
	})
}

// TestFileGC: compactions leave files that no tablet uses; the master's
// mark and sweep deletes them and nothing else.
func TestFileGC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := newKVCluster(t, kvClusterConfig{servers: 1, memtableSize: 16 << 10, gcEvery: 2})
	if err := c.master.CreateTable(ctx, "t", oneFamily, nil); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		for i := range 300 {
			if err := c.put(ctx, "t", fmt.Sprintf("r%04d", i)); err != nil {
				t.Fatal(err)
			}
		}
		c.mu.Lock()
		for _, s := range c.servers {
			for _, tb := range s.Store().Tablets() {
				if err := tb.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if err := tb.Compact(ctx, round == 2); err != nil {
					t.Fatal(err)
				}
			}
		}
		c.mu.Unlock()
	}
	fs := dfs.NewLocal(c.dfsRoot)
	count := func() int {
		owners, _ := fs.List("sst")
		n := 0
		for _, o := range owners {
			files, _ := fs.List("sst/" + o)
			n += len(files)
		}
		return n
	}
	eventually(t, "the GC to leave only the files in use", func() bool {
		want := 0
		c.mu.Lock()
		for _, s := range c.servers {
			for _, ts := range s.Store().Stats().Tablets {
				for _, g := range ts.Groups {
					want += len(g.Files)
				}
			}
		}
		c.mu.Unlock()
		return count() == want
	})
	keys, err := c.scanAll(ctx, "t")
	if err != nil || len(keys) != 300 {
		t.Fatalf("after GC: %d rows, %v", len(keys), err)
	}
}

// TestMergesSmallTablets: with a merge size set, the master merges small
// neighbours on one server until one tablet is left; rows and METADATA
// follow.
func TestMergesSmallTablets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := newKVCluster(t, kvClusterConfig{servers: 1, mergeSize: 1 << 20})
	if err := c.master.CreateTable(ctx, "m", oneFamily, [][]byte{[]byte("b"), []byte("d"), []byte("f"), []byte("h")}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 100 {
		row := fmt.Sprintf("%c%03d", 'a'+i%10, i)
		want = append(want, row)
		if err := c.put(ctx, "m", row); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	eventually(t, "the tablets to merge into one", func() bool { return c.tablets("m") == 1 })
	keys, err := c.scanAll(ctx, "m")
	if err != nil || !slices.Equal(keys, want) {
		t.Fatalf("after the merges: %d rows, %v", len(keys), err)
	}
	eventually(t, "METADATA to hold one row", func() bool {
		ranges, err := c.metaRanges(ctx, "m")
		return err == nil && len(ranges) == 1
	})
}
