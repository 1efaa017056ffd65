package main

// The kv suite runs the Bigtable paper's six single-server benchmarks
// (section 7, Figure 6) against one cellar tablet server, through
// kv/client over the real RPC path, with 1000-byte values. Writes are
// acknowledged only after fsync; the writing clients batch (ApplyBulk), as
// the paper's clients do. The lock service is an in-memory stand-in, which
// the data path never touches: the server checks its lock locally.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/kv/tabletserver"
)

// kvConfig is the kv suite's part of the command line.
type kvConfig struct {
	rows     int           // rows the write workloads write
	memRows  int           // rows of the in-memory table
	clients  int           // concurrent clients
	batch    int           // rows per ApplyBulk
	duration time.Duration // of each read workload
	// cpuProfile, if set, is a directory for a CPU profile of each
	// workload, kv-<workload>.pprof.
	cpuProfile string
}

// paperOps are Figure 6's single-server figures, in ops/s.
var paperOps = []struct {
	name string
	ops  float64
}{
	{"random-reads", 1212}, {"random-reads-mem", 10811}, {"random-writes", 8850},
	{"sequential-reads", 4425}, {"sequential-writes", 8547}, {"scans", 15385},
}

// memLock is a lock that is always held.
type memLock struct{ never chan struct{} }

func (l memLock) Held() bool                    { return true }
func (l memLock) Lost() <-chan struct{}         { return l.never }
func (l memLock) Relock(context.Context) error  { return nil }
func (l memLock) LeaseEnd() time.Time           { return time.Time{} }
func (l memLock) Release(context.Context) error { return nil }
func newMemLock() memLock                       { return memLock{never: make(chan struct{})} }
func (tsCoord) Lock(context.Context, string, []byte) (tabletserver.Lock, error) {
	return newMemLock(), nil
}

type tsCoord struct{}

// masterCoord is an in-memory lock service for the master.
type masterCoord struct {
	mu     sync.Mutex
	files  map[string][]byte
	server master.File
}

func (c *masterCoord) Lock(context.Context, string, []byte) (master.Lock, error) {
	return newMemLock(), nil
}
func (c *masterCoord) List(context.Context, string) ([]master.File, error) {
	return []master.File{c.server}, nil
}
func (c *masterCoord) TakeAndDelete(context.Context, string) (bool, error) { return false, nil }
func (c *masterCoord) ReadFile(_ context.Context, p string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.files[p]
	return d, ok, nil
}
func (c *masterCoord) WriteFile(_ context.Context, p string, d []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[p] = d
	return nil
}
func (c *masterCoord) DeleteFile(_ context.Context, p string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.files, p)
	return nil
}

// staticRoot is the root file in masterCoord, for the clients and the
// tablet server's catalog.
type staticRoot struct{ c *masterCoord }

const rootPath = "/ls/local/cellar/root"

func (r staticRoot) Root(ctx context.Context) (string, error) {
	d, ok, _ := r.c.ReadFile(ctx, rootPath)
	if !ok {
		return "", fmt.Errorf("no root file yet")
	}
	desc, err := model.ParseRootFile(d)
	if err != nil {
		return "", err
	}
	return desc.Addr, nil
}

func (r staticRoot) WriteRoot(ctx context.Context, d []byte) error {
	return r.c.WriteFile(ctx, rootPath, d)
}

type kvResult struct {
	name string
	ops  float64
	err  error
}

// runKVSuite runs the six workloads and returns the report.
func runKVSuite(kc kvConfig, base string) (text, md string, err error) {
	ctx := context.Background()
	dir := filepath.Join(base, "kv")
	mc := &masterCoord{files: map[string][]byte{}}
	// The tablet server as a cluster runs it: a store in shared mode whose
	// catalog is METADATA, on the same server.
	var catalog tabletserver.Catalog
	fs := dfs.NewLocal(dir)
	var stallMu sync.Mutex
	stalls := map[string]int{}
	store := tablet.New(fs, "", tablet.Options{BlockCacheSize: 32 << 20, KeepWhole: tabletserver.KeepWhole, SplitSize: 128 << 20,
		Events: tablet.Events{WriteStall: func(_ uint64, reason string) { stallMu.Lock(); stalls[reason]++; stallMu.Unlock() }},
		Shared: &tablet.Shared{Name: "ts1", Catalog: &catalog, NoStall: func(t string) bool { return t == client.MetaTable }}})
	if err := store.Open(ctx); err != nil {
		return "", "", err
	}
	defer store.Close(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	meta := client.New(client.Options{Root: staticRoot{mc}})
	defer meta.Close()
	ts := tabletserver.New(tabletserver.Options{ID: "ts1", Addr: ln.Addr().String(), Store: store, Coord: tsCoord{},
		Meta: meta, Root: staticRoot{mc}, Catalog: &catalog, FS: fs})
	if err := ts.Open(ctx); err != nil {
		return "", "", err
	}
	go ts.Serve(ln)
	defer ts.Close(ctx)
	mc.server = master.File{Name: "ts1", Locked: true, Contents: []byte(ln.Addr().String())}
	m := master.New(master.Options{Addr: "bench", Coord: mc, ScanInterval: time.Hour})
	if err := m.Open(ctx); err != nil {
		return "", "", err
	}
	defer m.Close(ctx)
	disk := model.Schema{Families: []model.Family{{Name: "f"}}}
	mem := model.Schema{Families: []model.Family{{Name: "f", LocalityGroup: "hot"}},
		LocalityGroups: []model.LocalityGroup{{Name: "hot", InMemory: true}}}
	for _, t := range []struct {
		name   string
		schema model.Schema
	}{{"seq", disk}, {"rand", disk}, {"mem", mem}} {
		if err := m.CreateTable(ctx, t.name, t.schema, nil); err != nil {
			return "", "", fmt.Errorf("create %s: %w", t.name, err)
		}
	}
	kv := client.New(client.Options{Root: staticRoot{mc}})
	defer kv.Close()

	value := bytes.Repeat([]byte("0123456789abcdefghij"), 50) // 1000 bytes
	key := func(i int) []byte { return []byte(fmt.Sprintf("%016d", i)) }
	perm := rand.New(rand.NewPCG(1, 2)).Perm(kc.rows)
	results := map[string]kvResult{}
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: kv: "+format+"\n", args...) }

	profile := func(name string) func() {
		if kc.cpuProfile == "" {
			return func() {}
		}
		f, err := os.Create(filepath.Join(kc.cpuProfile, "kv-"+name+".pprof"))
		if err != nil {
			logf("profile %s: %v", name, err)
			return func() {}
		}
		pprof.StartCPUProfile(f)
		return func() { pprof.StopCPUProfile(); f.Close() }
	}
	write := func(name, table string, order func(i int) int, n int) {
		logf("%s (%d rows)", name, n)
		defer profile(name)()
		start := time.Now()
		var next atomic.Int64
		var failed atomic.Value
		var wg sync.WaitGroup
		for w := 0; w < kc.clients; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					from := int(next.Add(int64(kc.batch))) - kc.batch
					if from >= n {
						return
					}
					var ms []*model.RowMutation
					for i := from; i < min(from+kc.batch, n); i++ {
						ms = append(ms, &model.RowMutation{Row: key(order(i)), Mutations: []model.Mutation{model.SetCell("f", nil, model.ServerTimestamp, value)}})
					}
					for _, err := range kv.ApplyBulk(ctx, table, ms) {
						if err != nil {
							failed.Store(err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		stallMu.Lock()
		if len(stalls) > 0 {
			logf("%s: write stalls %v", name, stalls)
			clear(stalls)
		}
		stallMu.Unlock()
		r := kvResult{name: name, ops: float64(n) / time.Since(start).Seconds()}
		if e, ok := failed.Load().(error); ok {
			r.err = e
		}
		results[name] = r
	}
	// read runs op on every client for the duration, counting operations.
	read := func(name string, op func(r *rand.Rand, client int, i int) (int, error)) {
		logf("%s (%v)", name, kc.duration)
		defer profile(name)()
		var total atomic.Int64
		var failed atomic.Value
		deadline := time.Now().Add(kc.duration)
		start := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < kc.clients; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 7))
				for i := 0; time.Now().Before(deadline); i++ {
					n, err := op(r, w, i)
					if err != nil {
						failed.Store(err)
						return
					}
					total.Add(int64(n))
				}
			}(w)
		}
		wg.Wait()
		res := kvResult{name: name, ops: float64(total.Load()) / time.Since(start).Seconds()}
		if e, ok := failed.Load().(error); ok {
			res.err = e
		}
		results[name] = res
	}

	write("sequential-writes", "seq", func(i int) int { return i }, kc.rows)
	write("random-writes", "rand", func(i int) int { return perm[i] }, kc.rows)
	write("mem-fill", "mem", func(i int) int { return i }, kc.memRows)
	// The reads run against SSTables, as in the paper, not memtables.
	if err := store.FlushAll(ctx); err != nil {
		return "", "", err
	}
	get := func(table string, k []byte) error {
		_, found, err := kv.ReadRow(ctx, table, k, client.Filter{})
		if err == nil && !found {
			err = fmt.Errorf("row %s of %s is missing", k, table)
		}
		return err
	}
	read("random-reads", func(r *rand.Rand, _, _ int) (int, error) { return 1, get("rand", key(r.IntN(kc.rows))) })
	read("random-reads-mem", func(r *rand.Rand, _, _ int) (int, error) { return 1, get("mem", key(r.IntN(kc.memRows))) })
	share := kc.rows / kc.clients
	read("sequential-reads", func(_ *rand.Rand, w, i int) (int, error) {
		return 1, get("seq", key(w*share+i%share))
	})
	read("scans", func(r *rand.Rand, _, _ int) (int, error) {
		start := r.IntN(max(kc.rows-1000, 1))
		sc := kv.Scan(ctx, "seq", model.RowRange{Start: key(start)}, client.Filter{}, 1000)
		n := 0
		for sc.Next() {
			n++
		}
		return n, sc.Err()
	})

	var tb, mb bytes.Buffer
	writeKVReport(&tb, &mb, kc, results)
	for _, p := range paperOps {
		if results[p.name].err != nil {
			return tb.String(), mb.String(), fmt.Errorf("kv suite: %s: %w", p.name, results[p.name].err)
		}
	}
	return tb.String(), mb.String(), nil
}

func writeKVReport(text, md io.Writer, kc kvConfig, res map[string]kvResult) {
	fmt.Fprintf(text, "\nkv: one tablet server through kv/client over gRPC on loopback; %d rows of 1000-byte values (%d in memory), %d clients, writes in batches of %d, reads for %v\n\n",
		kc.rows, kc.memRows, kc.clients, kc.batch, kc.duration)
	tw := tabwriter.NewWriter(text, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tcellar ops/s\tpaper ops/s\tcellar/paper\t")
	fmt.Fprintf(md, "\n## kv: one tablet server vs the Bigtable paper (Figure 6)\n\n%d rows of 1000-byte values (%d in memory), %d clients, writes in batches of %d, reads for %v; through kv/client over gRPC on loopback.\n\n",
		kc.rows, kc.memRows, kc.clients, kc.batch, kc.duration)
	fmt.Fprintln(md, "| workload | cellar ops/s | paper ops/s | cellar/paper |\n|---|---:|---:|---:|")
	for _, p := range paperOps {
		r := res[p.name]
		ops, ratio := fmt.Sprintf("%.0f", r.ops), fmt.Sprintf("%.1fx", r.ops/p.ops)
		if r.err != nil {
			ops, ratio = "failed", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t\n", p.name, ops, p.ops, ratio)
		fmt.Fprintf(md, "| %s | %s | %.0f | %s |\n", p.name, ops, p.ops, ratio)
	}
	tw.Flush()
	fmt.Fprintln(text, "\nThe target is 10x the paper per server. Scans count rows.")
}
