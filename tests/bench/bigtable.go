package main

// The bigtable suite measures cellar's Bigtable API against bttest
// (cloud.google.com/go/bigtable/bttest, the emulator that ships with the
// official Go client), both driven by that client, cloud.google.com/go/bigtable,
// in this process:
//
//   - load: -bt-rows rows of -bt-value-size bytes into family f, column v,
//     with ApplyBulk of btLoadBatch rows from btLoaders clients at once;
//   - read: ReadRow of a random existing key, -bt-clients clients;
//   - scan: ReadRows of a random range of -bt-scan-rows consecutive rows
//     with LimitRows of as many, -bt-scan-clients clients;
//   - write: Apply of one SetCell (the server's time) with a value of
//     -bt-value-size bytes to a random existing key, -bt-clients clients.
//
// Each side runs alone, one after the other, in a process of its own, so
// that its CPU can be measured: cellar as `cellar demo` built from this
// checkout (data on the disk of the bench's directory, every write
// acknowledged after fsync), bttest as this binary re-executed with the
// hidden -bt-serve-bttest flag (everything in memory, nothing durable).
// Every client is a bigtable.Client of its own, with its own connection.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"cloud.google.com/go/bigtable"
	"cloud.google.com/go/bigtable/bttest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// btConfig is the bigtable suite's part of the command line.
type btConfig struct {
	rows        int
	valueSize   int
	duration    time.Duration
	clients     []int
	scanClients int
	scanRows    int
	cellarBin   string
	runs        int
	// cpuProfile, if set, is a directory for a CPU profile of the demo
	// during each cellar workload, from its /debug/pprof.
	cpuProfile string
}

var (
	btCfg        btConfig
	btClientList string
	// btServe, set only in the child that runs bttest, is its address.
	btServe string
)

func init() {
	flag.IntVar(&btCfg.rows, "bt-rows", 100_000, "bigtable: rows loaded on each side")
	flag.IntVar(&btCfg.valueSize, "bt-value-size", 1000, "bigtable: bytes of each value, loaded and written")
	flag.DurationVar(&btCfg.duration, "bt-duration", 10*time.Second, "bigtable: how long each read, scan and write workload runs")
	flag.StringVar(&btClientList, "bt-clients", "1,16", "bigtable: comma-separated client counts of the read and write workloads")
	flag.IntVar(&btCfg.scanClients, "bt-scan-clients", 1, "bigtable: clients of the scan workload")
	flag.IntVar(&btCfg.scanRows, "bt-scan-rows", 1000, "bigtable: rows per scan")
	flag.StringVar(&btCfg.cellarBin, "bt-cellar-bin", "", "bigtable: run this cellar binary as the demo instead of building ./ops/cmd/cellar")
	flag.StringVar(&btServe, "bt-serve-bttest", "", "internal: serve bttest on this address until interrupted")
}

const (
	btProject, btInstance = "bench", "bench"
	btTable, btFamily     = "bench", "f"
	btColumn              = "v"
	btLoadBatch           = 500 // rows per ApplyBulk of the load
	btLoaders             = 4   // clients loading at once
)

// serveBttest is the child that runs bttest: it serves until interrupted.
func serveBttest(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := bttest.NewServer(addr, grpc.MaxRecvMsgSize(256<<20))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: bttest serving on %s\n", srv.Addr)
	<-ctx.Done()
	srv.Close()
	return nil
}

func (c btConfig) validate() error {
	switch {
	case c.rows < c.scanRows || c.rows > 1e12:
		return fmt.Errorf("-bt-rows %d outside [-bt-scan-rows, 1e12]", c.rows)
	case c.valueSize < 1 || c.valueSize > 1<<20:
		return fmt.Errorf("-bt-value-size %d outside [1, 1 MiB]", c.valueSize)
	case c.duration <= 0:
		return errors.New("-bt-duration must be positive")
	case c.scanClients < 1 || c.scanRows < 1:
		return errors.New("-bt-scan-clients and -bt-scan-rows must be positive")
	case len(c.clients) == 0:
		return errors.New("-bt-clients: no client count")
	}
	return nil
}

// btData is the table's contents: row i has key btKey(i) and a value of
// valueSize bytes cut from a seeded buffer, half random letters and half
// repeats, so that block compression about halves it.
type btData struct {
	rows, size int
	buf        []byte
}

func newBTData(rows, size int) *btData {
	d := newSQLData(rows, size)
	return &btData{rows: rows, size: size, buf: []byte(d.buf)}
}

func (d *btData) key(i int) string { return fmt.Sprintf("%016d", i) }

func (d *btData) value(i int) []byte {
	off := (i * 7919) % (len(d.buf) - d.size)
	return d.buf[off : off+d.size]
}

// btSide is one running server of the comparison: its process (for CPU
// and shutdown, handled as the sql suite's sides are) and its address.
type btSide struct {
	*sqlSide
	addr string
	// status is the demo's HTTP status address (with /debug/pprof); empty
	// for bttest.
	status string
}

// btResult is one workload's numbers on one side.
type btResult struct {
	ops      float64 // per second (rows per second for the load)
	n        int64
	avg, p99 time.Duration
	// serverCPU is the server's CPU time over the workload, clientCPU this
	// process's (the clients'), otherCores how many cores other processes
	// kept busy on average.
	serverCPU, clientCPU time.Duration
	otherCores           float64
	err                  error
}

// btWorkload is one row of the report.
type btWorkload struct {
	name    string
	clients int
	// target is the ratio cellar/bttest the issue asks for; 0: none.
	target float64
}

func (c btConfig) workloads() []btWorkload {
	out := []btWorkload{{name: "load", clients: btLoaders}}
	for _, n := range c.clients {
		out = append(out, btWorkload{name: "read", clients: n, target: 5})
	}
	out = append(out, btWorkload{name: "scan", clients: c.scanClients, target: 5})
	for _, n := range c.clients {
		out = append(out, btWorkload{name: "write", clients: n, target: 2})
	}
	return out
}

func (w btWorkload) id() string { return fmt.Sprintf("%s/%d", w.name, w.clients) }

// runBigtableSuite runs both sides in turn (-runs rounds, alternating)
// and returns the report as text and Markdown.
func runBigtableSuite(base string, runs int, cpuProfile string) (text, md string, err error) {
	cfg := btCfg
	cfg.runs, cfg.cpuProfile = max(runs, 1), cpuProfile
	for _, s := range splitList(btClientList) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return "", "", fmt.Errorf("-bt-clients: %q is not a positive count", s)
		}
		cfg.clients = append(cfg.clients, n)
	}
	if err := cfg.validate(); err != nil {
		return "", "", err
	}
	dir := filepath.Join(base, "bigtable")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	self, err := os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("find own binary: %w", err)
	}
	bin, built := cfg.cellarBin, cfg.cellarBin == ""
	var buildErr error
	if built {
		bin = filepath.Join(dir, "cellar")
		fmt.Fprintln(os.Stderr, "bench: bigtable: building cellar")
		buildErr = buildCellarDemo(bin)
	}
	data := newBTData(cfg.rows, cfg.valueSize)
	sides := []struct {
		label string
		start func(dir string) (*btSide, error)
	}{
		{"cellar", func(d string) (*btSide, error) {
			if buildErr != nil {
				return nil, buildErr
			}
			return startBTCellar(bin, built, d)
		}},
		{"bttest", func(d string) (*btSide, error) { return startBttest(self, d) }},
	}
	all := map[string]map[string][]btResult{}
	info := map[string]*btSide{}
	for round := range cfg.runs {
		if cfg.runs > 1 {
			fmt.Fprintf(os.Stderr, "bench: bigtable: round %d of %d\n", round+1, cfg.runs)
		}
		for _, sd := range sides {
			if all[sd.label] == nil {
				all[sd.label] = map[string][]btResult{}
			}
			fmt.Fprintf(os.Stderr, "bench: bigtable: starting %s\n", sd.label)
			sideDir := filepath.Join(dir, fmt.Sprintf("%s-%d", sd.label, round))
			side, err := sd.start(sideDir)
			var res map[string]btResult
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: bigtable: %s failed to start: %v\n", sd.label, err)
				res = map[string]btResult{}
				for _, w := range cfg.workloads() {
					res[w.id()] = btResult{err: fmt.Errorf("start: %w", err)}
				}
				if info[sd.label] == nil {
					info[sd.label] = &btSide{sqlSide: &sqlSide{label: sd.label}}
				}
			} else {
				res = runBTSide(side, cfg, data)
				if err := side.stop(); err != nil {
					fmt.Fprintf(os.Stderr, "bench: bigtable: stopping %s: %v\n", sd.label, err)
				}
				if prev := info[sd.label]; prev == nil || prev.version == "" {
					info[sd.label] = side
				}
			}
			for w, r := range res {
				all[sd.label][w] = append(all[sd.label][w], r)
			}
			os.RemoveAll(sideDir)
		}
	}
	results := map[string]map[string]btResult{}
	for label, byWorkload := range all {
		results[label] = map[string]btResult{}
		for w, rs := range byWorkload {
			results[label][w] = medianBT(rs)
		}
	}
	rep := btReport{cfg: cfg, sides: info, results: results}
	var tb, mb bytes.Buffer
	rep.writeText(&tb)
	rep.writeMarkdown(&mb)
	var failed []string
	for _, w := range cfg.workloads() {
		for _, label := range []string{"cellar", "bttest"} {
			if results[label][w.id()].err != nil {
				failed = append(failed, label+" "+w.id())
			}
		}
	}
	if len(failed) > 0 {
		return tb.String(), mb.String(), fmt.Errorf("bigtable suite: failed: %s", strings.Join(failed, ", "))
	}
	return tb.String(), mb.String(), nil
}

// medianBT is the run with the median throughput; any failed run fails
// the workload.
func medianBT(runs []btResult) btResult {
	for _, r := range runs {
		if r.err != nil {
			return r
		}
	}
	slices.SortFunc(runs, func(a, b btResult) int { return cmp.Compare(a.ops, b.ops) })
	return runs[len(runs)/2]
}

// buildCellarDemo builds the cellar binary in the main module, with the
// dependency versions cellar ships with.
func buildCellarDemo(bin string) error {
	build := exec.Command("go", "build", "-o", bin, "./ops/cmd/cellar")
	build.Dir = filepath.Join("..", "..")
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		return fmt.Errorf("build cellar: %v\n%s", err, tail(out.String(), 2000))
	}
	return nil
}

// startBTCellar runs `cellar demo` on a fresh data directory under dir,
// its Bigtable API and every other address on a free port, and waits
// until the API answers.
func startBTCellar(bin string, built bool, dir string) (*btSide, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	s := &btSide{sqlSide: &sqlSide{label: "cellar", kind: "cellar demo", dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "cellar.log")}, addr: addrs[0], status: addrs[1]}
	cmd := exec.Command(bin, "demo", "-data", s.dataDir, "-bigtable", s.addr, "-pgwire", "127.0.0.1:0", "-http", s.status,
		"-chubby", "127.0.0.1:0", "-chubby-replicas", "1", "-tabletserver", "127.0.0.1:0", "-tabletservers", "3",
		"-master", "127.0.0.1:0")
	cmd.Dir = dir
	// The demo reads unset flags from CELLAR_DEMO_*; none of the caller's.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CELLAR_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := s.startProc(cmd); err != nil {
		return nil, err
	}
	if err := s.waitAPI(2 * time.Minute); err != nil {
		s.stop()
		return nil, err
	}
	s.version = cellarVersion(s.logPath, built)
	return s, nil
}

// startBttest runs bttest in a child process (this binary with
// -bt-serve-bttest) on a free port and waits until it answers.
func startBttest(self, dir string) (*btSide, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(1)
	if err != nil {
		return nil, err
	}
	s := &btSide{sqlSide: &sqlSide{label: "bttest", kind: "bttest in its own process",
		version: "bttest " + bigtableModuleVersion(), logPath: filepath.Join(dir, "bttest.log")}, addr: addrs[0]}
	if err := s.startProc(exec.Command(self, "-bt-serve-bttest", s.addr)); err != nil {
		return nil, err
	}
	if err := s.waitAPI(time.Minute); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// bigtableModuleVersion is the version of the client and bttest compiled
// into this binary.
func bigtableModuleVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "cloud.google.com/go/bigtable" {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}

// waitAPI polls the side's table admin API until it answers, the process
// exits or the timeout passes.
func (s *btSide) waitAPI(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := func() error {
			admin, conn, err := s.admin(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			defer admin.Close()
			_, err = admin.Tables(ctx)
			return err
		}()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited: %v\n%s", s.kind, s.proc.ProcessState, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %v: %v\n%s", s.kind, timeout, err, s.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dial is one connection to the side, as BIGTABLE_EMULATOR_HOST makes
// the client dial: plaintext, no credentials.
func (s *btSide) dial() (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<28), grpc.MaxCallSendMsgSize(1<<28)))
}

// client is a data client on a connection of its own, configured as the
// client configures itself for an emulator (no metrics export).
func (s *btSide) client(ctx context.Context) (*bigtable.Client, *grpc.ClientConn, error) {
	conn, err := s.dial()
	if err != nil {
		return nil, nil, err
	}
	c, err := bigtable.NewClientWithConfig(ctx, btProject, btInstance,
		bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}}, option.WithGRPCConn(conn))
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return c, conn, nil
}

func (s *btSide) admin(ctx context.Context) (*bigtable.AdminClient, *grpc.ClientConn, error) {
	conn, err := s.dial()
	if err != nil {
		return nil, nil, err
	}
	a, err := bigtable.NewAdminClient(ctx, btProject, btInstance, option.WithGRPCConn(conn))
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return a, conn, nil
}

// btClients is a set of clients of one side, each with its table.
type btClients struct {
	tables []*bigtable.Table
	close  []func()
}

func (s *btSide) clients(ctx context.Context, n int) (*btClients, error) {
	cs := &btClients{}
	for range n {
		c, conn, err := s.client(ctx)
		if err != nil {
			cs.Close()
			return nil, err
		}
		cs.tables = append(cs.tables, c.Open(btTable))
		cs.close = append(cs.close, func() { c.Close(); conn.Close() })
	}
	return cs, nil
}

func (cs *btClients) Close() {
	for _, f := range cs.close {
		f()
	}
}

// runBTSide creates and loads the table on a started side and runs the
// workloads, each after a check of its answer.
func runBTSide(s *btSide, cfg btConfig, d *btData) map[string]btResult {
	ctx := context.Background()
	res := map[string]btResult{}
	ws := cfg.workloads()
	failRest := func(err error) map[string]btResult {
		for _, w := range ws {
			if _, done := res[w.id()]; !done {
				res[w.id()] = btResult{err: err}
			}
		}
		return res
	}
	if err := createBTTable(ctx, s); err != nil {
		res["load/"+strconv.Itoa(btLoaders)] = btResult{err: err}
		return failRest(errors.New("no table (see load)"))
	}
	fmt.Fprintf(os.Stderr, "bench: bigtable: %s: loading %d rows\n", s.label, d.rows)
	load := runBTLoad(ctx, s, d)
	res[ws[0].id()] = load
	if load.err != nil {
		fmt.Fprintf(os.Stderr, "bench: bigtable: %s: load failed: %v\n", s.label, load.err)
		return failRest(errors.New("load failed"))
	}
	fmt.Fprintf(os.Stderr, "bench: bigtable: %s: loaded at %.0f rows/s\n", s.label, load.ops)
	if s.dataDir != "" {
		s.diskAfterLoad, _ = dirUsage(s.dataDir)
	}
	value := bytes.Repeat([]byte{'w'}, d.size)
	for _, w := range ws[1:] {
		var op btOp
		switch w.name {
		case "read":
			op = func(ctx context.Context, t *bigtable.Table, r *rand.Rand) error {
				i := r.IntN(d.rows)
				row, err := t.ReadRow(ctx, d.key(i))
				if err != nil {
					return err
				}
				return checkBTRow(row, d.key(i), d.value(i))
			}
		case "scan":
			op = func(ctx context.Context, t *bigtable.Table, r *rand.Rand) error {
				from := r.IntN(d.rows - cfg.scanRows + 1)
				next := from
				var bad error
				err := t.ReadRows(ctx, bigtable.NewRange(d.key(from), d.key(from+cfg.scanRows)), func(row bigtable.Row) bool {
					if bad = checkBTRow(row, d.key(next), d.value(next)); bad != nil {
						return false
					}
					next++
					return true
				}, bigtable.LimitRows(int64(cfg.scanRows)))
				if err == nil && bad == nil && next-from != cfg.scanRows {
					bad = fmt.Errorf("a scan from %s returned %d rows, want %d", d.key(from), next-from, cfg.scanRows)
				}
				return errors.Join(err, bad)
			}
		default:
			op = func(ctx context.Context, t *bigtable.Table, r *rand.Rand) error {
				m := bigtable.NewMutation()
				m.Set(btFamily, btColumn, bigtable.ServerTime, value)
				return t.Apply(ctx, d.key(r.IntN(d.rows)), m)
			}
		}
		fmt.Fprintf(os.Stderr, "bench: bigtable: %s %s (%d clients, %v)\n", s.label, w.name, w.clients, cfg.duration)
		profiled := s.profile(ctx, cfg, w)
		r := runBTWorkload(ctx, s, w.clients, cfg.duration, op)
		if err := profiled(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: bigtable: profile of %s %s: %v\n", s.label, w.id(), err)
		}
		if r.err != nil {
			fmt.Fprintf(os.Stderr, "bench: bigtable: %s %s failed: %v\n", s.label, w.id(), r.err)
		}
		res[w.id()] = r
	}
	return res
}

// profile starts a CPU profile of the demo for the workload's duration,
// when -cpuprofile asks for one, and returns a function that waits for it
// and writes it to bigtable-cellar-<workload>-<clients>.pprof.
func (s *btSide) profile(ctx context.Context, cfg btConfig, w btWorkload) (wait func() error) {
	if cfg.cpuProfile == "" || s.status == "" {
		return func() error { return nil }
	}
	secs := max(int(cfg.duration.Round(time.Second)/time.Second), 1)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+time.Minute)
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.status, secs), nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s", resp.Status)
			}
			f, err := os.Create(filepath.Join(cfg.cpuProfile, fmt.Sprintf("bigtable-%s-%s-%d.pprof", s.label, w.name, w.clients)))
			if err != nil {
				return err
			}
			_, err = io.Copy(f, resp.Body)
			return errors.Join(err, f.Close())
		}()
	}()
	return func() error {
		defer cancel()
		return <-done
	}
}

func createBTTable(ctx context.Context, s *btSide) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	admin, conn, err := s.admin(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer admin.Close()
	// All versions kept on both sides: a GC rule would make bttest scan
	// every row once a second in the background.
	return admin.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: btTable,
		Families: map[string]bigtable.GCPolicy{btFamily: bigtable.NoGcPolicy()}})
}

func checkBTRow(row bigtable.Row, key string, value []byte) error {
	items := row[btFamily]
	switch {
	case row == nil:
		return fmt.Errorf("row %s is missing", key)
	case row.Key() != key:
		return fmt.Errorf("read row %q, want %q", row.Key(), key)
	case len(items) != 1 || items[0].Column != btFamily+":"+btColumn || !bytes.Equal(items[0].Value, value):
		return fmt.Errorf("row %s: wrong cells (%d; first %q)", key, len(items), shorten(fmt.Sprint(items), 80))
	}
	return nil
}

// runBTLoad writes every row with ApplyBulk, btLoaders clients each taking
// every btLoaders-th batch, and checks two rows afterwards. Its ops are
// rows per second; its latency the ApplyBulk's.
func runBTLoad(ctx context.Context, s *btSide, d *btData) btResult {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cs, err := s.clients(ctx, btLoaders)
	if err != nil {
		return btResult{err: err}
	}
	defer cs.Close()
	batches := (d.rows + btLoadBatch - 1) / btLoadBatch
	lat := make([][]time.Duration, btLoaders)
	errs := make([]error, btLoaders)
	m := startBTMeter(s)
	var wg sync.WaitGroup
	for w := range btLoaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := w; b < batches; b += btLoaders {
				var keys []string
				var muts []*bigtable.Mutation
				for i := b * btLoadBatch; i < min((b+1)*btLoadBatch, d.rows); i++ {
					mut := bigtable.NewMutation()
					mut.Set(btFamily, btColumn, bigtable.ServerTime, d.value(i))
					keys, muts = append(keys, d.key(i)), append(muts, mut)
				}
				start := time.Now()
				rowErrs, err := cs.tables[w].ApplyBulk(ctx, keys, muts)
				lat[w] = append(lat[w], time.Since(start))
				if err == nil {
					err = errors.Join(rowErrs...)
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	r := m.finish(int64(d.rows), lat)
	if r.err = errors.Join(errs...); r.err != nil {
		return r
	}
	for _, i := range []int{0, d.rows / 2, d.rows - 1} {
		row, err := cs.tables[0].ReadRow(ctx, d.key(i))
		if err == nil {
			err = checkBTRow(row, d.key(i), d.value(i))
		}
		if err != nil {
			r.err = fmt.Errorf("after the load: %w", err)
			return r
		}
	}
	return r
}

// btOp is one operation of a workload, on one client's table.
type btOp func(ctx context.Context, t *bigtable.Table, r *rand.Rand) error

// runBTWorkload runs op on n clients for the duration and measures it.
func runBTWorkload(ctx context.Context, s *btSide, n int, dur time.Duration, op btOp) btResult {
	ctx, cancel := context.WithTimeout(ctx, dur+2*time.Minute)
	defer cancel()
	cs, err := s.clients(ctx, n)
	if err != nil {
		return btResult{err: err}
	}
	defer cs.Close()
	// One warm-up call per client: its connection and the server's
	// location caches are made outside the measurement.
	for i, t := range cs.tables {
		if err := op(ctx, t, rand.New(rand.NewPCG(uint64(i), 99))); err != nil {
			return btResult{err: fmt.Errorf("warm-up: %w", err)}
		}
	}
	lat := make([][]time.Duration, n)
	errs := make([]error, n)
	var count int64
	var mu sync.Mutex
	m := startBTMeter(s)
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for c := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 7))
			for time.Now().Before(deadline) {
				start := time.Now()
				if err := op(ctx, cs.tables[c], r); err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], time.Since(start))
			}
			mu.Lock()
			count += int64(len(lat[c]))
			mu.Unlock()
		}()
	}
	wg.Wait()
	r := m.finish(count, lat)
	r.err = errors.Join(errs...)
	return r
}

// btMeter measures a workload's time, the server's and the clients' CPU
// and other processes' load.
type btMeter struct {
	s      *btSide
	start  time.Time
	busy   time.Duration
	server time.Duration
	client time.Duration
}

func startBTMeter(s *btSide) *btMeter {
	return &btMeter{s: s, start: time.Now(), busy: sqlMachineBusy(), server: s.serverCPU(), client: selfCPU()}
}

// finish makes the result of n operations with the latencies of each
// client.
func (m *btMeter) finish(n int64, lat [][]time.Duration) btResult {
	wall := time.Since(m.start)
	r := btResult{n: n, ops: float64(n) / wall.Seconds(),
		serverCPU: m.s.serverCPU() - m.server, clientCPU: selfCPU() - m.client}
	if other := sqlMachineBusy() - m.busy - r.serverCPU - r.clientCPU; other > 0 {
		r.otherCores = other.Seconds() / wall.Seconds()
	}
	all := slices.Concat(lat...)
	if len(all) > 0 {
		slices.Sort(all)
		var sum time.Duration
		for _, l := range all {
			sum += l
		}
		r.avg = sum / time.Duration(len(all))
		r.p99 = all[min(len(all)-1, len(all)*99/100)]
	}
	return r
}

// btReport is what the bigtable suite prints and writes.
type btReport struct {
	cfg     btConfig
	sides   map[string]*btSide
	results map[string]map[string]btResult
}

func (r *btReport) side(label string) *btSide {
	if s := r.sides[label]; s != nil {
		return s
	}
	return &btSide{sqlSide: &sqlSide{label: label}}
}

func (r *btReport) settings() string {
	s := fmt.Sprintf("%d rows of %d-byte values in one family (all versions kept), 16-digit keys, loaded with ApplyBulk of %d rows by %d clients; "+
		"each workload %v; scans of %d rows (a closed range with a row limit), %d scan client(s); every client a bigtable.Client %s with a connection of its own",
		r.cfg.rows, r.cfg.valueSize, btLoadBatch, btLoaders, r.cfg.duration, r.cfg.scanRows, r.cfg.scanClients, bigtableModuleVersion())
	if r.cfg.runs > 1 {
		s += fmt.Sprintf("; the median of %d alternating rounds", r.cfg.runs)
	}
	return s
}

const btLegend = "cellar/bttest is cellar's ops/s divided by bttest's: above 1 cellar is faster. The targets (issue 7): 5x on reads and scans, 2x on writes. " +
	"bttest keeps everything in memory and has no durability; cellar acknowledges a write only after its commit log is fsynced. " +
	"Latency is per operation as the client sees it (per ApplyBulk of the load); CPU/op is the server process's and the clients' (this process's) CPU time per operation (per row for the load): on a small machine the Go client's own CPU bounds both sides. " +
	"Other CPU load is how many cores processes other than the server and this one kept busy: well above 0, the side's numbers are suspect; rerun."

func btOps(r btResult) string {
	if r.err != nil {
		return "failed"
	}
	return fmt.Sprintf("%.0f", r.ops)
}

func btLat(r btResult) string {
	if r.err != nil || r.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s / %s", fmtDur(r.avg), fmtDur(r.p99))
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0fms", d.Seconds()*1000)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", d.Seconds()*1000)
	}
	return fmt.Sprintf("%.0fµs", d.Seconds()*1e6)
}

// btCPU is the server's and the clients' CPU time per operation.
func btCPU(r btResult) string {
	if r.err != nil || r.n == 0 {
		return "-"
	}
	return fmtDur(r.serverCPU/time.Duration(r.n)) + " / " + fmtDur(r.clientCPU/time.Duration(r.n))
}

func (w btWorkload) targetCell(cellar, bttest btResult) string {
	if w.target == 0 {
		return ""
	}
	if cellar.err != nil || bttest.err != nil || bttest.ops == 0 {
		return fmt.Sprintf(">=%.0fx", w.target)
	}
	verdict := "met"
	if cellar.ops/bttest.ops < w.target {
		verdict = "MISSED"
	}
	return fmt.Sprintf(">=%.0fx %s", w.target, verdict)
}

func (r *btReport) label(w btWorkload) string {
	switch w.name {
	case "load":
		return "load (rows/s)"
	case "scan":
		return fmt.Sprintf("scan %d (scans/s)", r.cfg.scanRows)
	}
	return w.name
}

func (r *btReport) otherLoad(label string) string {
	most, where := -1.0, ""
	for _, w := range r.cfg.workloads() {
		res := r.results[label][w.id()]
		if res.err == nil && res.otherCores > most {
			most, where = res.otherCores, w.id()
		}
	}
	switch {
	case most < 0:
		return "-"
	case most < 0.005:
		return "0.00 cores"
	}
	return fmt.Sprintf("%.2f cores (%s)", most, where)
}

func btErrors(c, b btResult, n int) string {
	var errs []string
	if c.err != nil {
		errs = append(errs, "cellar: "+c.err.Error())
	}
	if b.err != nil {
		errs = append(errs, "bttest: "+b.err.Error())
	}
	return shorten(strings.Join(errs, "; "), n)
}

func (r *btReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nbigtable: %s vs %s, each alone on loopback, driven by the official Go client\n%s\n\n",
		orUnknown(r.side("cellar").version, "cellar"), orUnknown(r.side("bttest").version, "bttest"), r.settings())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tclients\tcellar ops/s\tbttest ops/s\tcellar/bttest\ttarget\tcellar avg / p99\tbttest avg / p99\tcellar CPU/op server / client\tbttest CPU/op server / client\t")
	var failed []string
	for _, wl := range r.cfg.workloads() {
		c, b := r.results["cellar"][wl.id()], r.results["bttest"][wl.id()]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", r.label(wl), wl.clients, btOps(c), btOps(b),
			ratio(c.ops, b.ops, c.err, b.err), wl.targetCell(c, b), btLat(c), btLat(b), btCPU(c), btCPU(b))
		if e := btErrors(c, b, 160); e != "" {
			fmt.Fprintf(tw, "  %s", e)
			failed = append(failed, wl.id()+": "+btErrors(c, b, 2000))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, label := range []string{"cellar", "bttest"} {
		s := r.side(label)
		fmt.Fprintf(w, "%s: %s", label, orUnknown(s.kind, "did not start"))
		if s.diskAfterLoad > 0 {
			fmt.Fprintf(w, ", %s on disk after the load", sizeOrDash(s.diskAfterLoad))
		}
		fmt.Fprintf(w, "; other CPU load up to %s\n", r.otherLoad(label))
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "errors:\n  "+strings.Join(failed, "\n  "))
	}
	fmt.Fprintln(w, btLegend)
}

func (r *btReport) writeMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n## bigtable: cellar's Bigtable API vs bttest\n\n%s vs %s, each alone on loopback, driven by the official Go client; %s.\n\n",
		orUnknown(r.side("cellar").version, "cellar"), orUnknown(r.side("bttest").version, "bttest"), r.settings())
	fmt.Fprintln(w, "| workload | clients | cellar ops/s | bttest ops/s | cellar/bttest | target | cellar avg / p99 | bttest avg / p99 | cellar CPU/op, server / client | bttest CPU/op, server / client | error |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|")
	for _, wl := range r.cfg.workloads() {
		c, b := r.results["cellar"][wl.id()], r.results["bttest"][wl.id()]
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.label(wl), wl.clients, btOps(c), btOps(b),
			ratio(c.ops, b.ops, c.err, b.err), wl.targetCell(c, b), btLat(c), btLat(b), btCPU(c), btCPU(b),
			strings.ReplaceAll(btErrors(c, b, 600), "|", "\\|"))
	}
	fmt.Fprintln(w, "\n| side | what runs | version | disk after load | other CPU load, most |\n|---|---|---|---:|---:|")
	for _, label := range []string{"cellar", "bttest"} {
		s := r.side(label)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", label, orUnknown(s.kind, "did not start"), orUnknown(s.version, "-"), sizeOrDash(s.diskAfterLoad), r.otherLoad(label))
	}
	fmt.Fprintln(w, "\n"+btLegend)
}
