package main

// The coord suite measures cellar's Chubby cell against etcd, both run as
// three member processes on loopback with their data on the same disk:
//
//   - put-N: N clients, each with its own connection and session, each
//     writing its own 100-byte file (SetContents) or key (Put) in a loop.
//   - lock-N: N clients, each taking and releasing its own lock: Acquire
//     and Release on a cellar handle; Lock and Unlock of an etcd
//     concurrency.Mutex on a session made beforehand.
//   - sessions: S clients, each with its own connection, keep a session
//     alive (cellar: a Chubby session with the default 12 s lease; etcd: a
//     lease of 12 s TTL kept alive by the client). The suite reports the
//     CPU the members used over a window and their resident memory.
//
// etcd clients connect to one member each, spread round-robin, as a
// balanced etcd deployment does; cellar clients talk to the master, as
// Chubby clients do.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/client"
)

// coordConfig is the coord suite's part of the command line.
type coordConfig struct {
	duration  time.Duration
	clients   []int
	sessions  int
	window    time.Duration
	valueSize int
	etcd      string
	runs      int
}

// coordResult is one workload's numbers for one system.
type coordResult struct {
	ops      int64
	elapsed  time.Duration
	p50, p99 time.Duration
	max      time.Duration
	// For the sessions workload: the members' CPU over the window (in
	// cores) and their summed resident memory at its end.
	cpuCores float64
	rss      int64
	err      error
}

func (r coordResult) opsPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

// coordSystem is what the suite needs of cellar and of etcd.
type coordSystem interface {
	name() string
	// newWriter returns a function that does one write of worker i.
	newWriter(ctx context.Context, i int, value []byte) (op func(context.Context) error, closer func(), err error)
	// newLocker returns a function that takes and releases worker i's lock.
	newLocker(ctx context.Context, i int) (op func(context.Context) error, closer func(), err error)
	// newSession opens one kept-alive session for client i.
	newSession(ctx context.Context, i int) (closer func(), err error)
	pids() []int
	stop() error
}

// runCoordSuite starts each system, runs the workloads and returns the
// report as text and as Markdown.
func runCoordSuite(cc coordConfig, base string) (text, md string, err error) {
	etcdBin, err := exec.LookPath(cc.etcd)
	if err != nil {
		return "", "", fmt.Errorf("etcd not found (%v): apt-get install etcd-server, or run make bench, which installs it", err)
	}
	cellarBin := filepath.Join(base, "cellar")
	// Built in the main module, whose dependency versions are the ones
	// cellar ships with (this module's Pebble is newer than dragonboat's).
	build := exec.Command("go", "build", "-o", cellarBin, "./ops/cmd/cellar")
	build.Dir = filepath.Join("..", "..")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return "", "", fmt.Errorf("build cellar: %w", err)
	}
	workloads := []string{}
	for _, n := range cc.clients {
		workloads = append(workloads, fmt.Sprintf("put-%d", n))
	}
	for _, n := range cc.clients {
		workloads = append(workloads, fmt.Sprintf("lock-%d", n))
	}
	workloads = append(workloads, "sessions")

	results := map[string]map[string]coordResult{}
	versions := map[string]string{}
	starters := []struct {
		name  string
		start func() (coordSystem, string, error)
	}{
		{"cellar", func() (coordSystem, string, error) {
			return startCellarCell(cellarBin, filepath.Join(base, "cellar-cell"))
		}},
		{"etcd", func() (coordSystem, string, error) { return startEtcd(etcdBin, filepath.Join(base, "etcd")) }},
	}
	// Each round starts every system afresh and runs its workloads; rounds
	// alternate the systems, so a disturbance of the shared machine lands on
	// one round of each. The sessions workload runs in the first round only.
	all := map[string]map[string][]coordResult{}
	for round := range cc.runs {
		if cc.runs > 1 {
			fmt.Fprintf(os.Stderr, "bench: coord: round %d of %d\n", round+1, cc.runs)
		}
		for _, st := range starters {
			if all[st.name] == nil {
				all[st.name] = map[string][]coordResult{}
			}
			fmt.Fprintf(os.Stderr, "bench: coord: starting %s\n", st.name)
			sys, version, err := st.start()
			if err != nil {
				for _, w := range workloads {
					all[st.name][w] = append(all[st.name][w], coordResult{err: err})
				}
				fmt.Fprintf(os.Stderr, "bench: coord: %s failed to start: %v\n", st.name, err)
				continue
			}
			versions[st.name] = version
			for _, w := range workloads {
				if w == "sessions" && round > 0 {
					continue
				}
				fmt.Fprintf(os.Stderr, "bench: coord: %s %s\n", st.name, w)
				res := runCoordWorkload(sys, cc, w)
				if res.err != nil {
					fmt.Fprintf(os.Stderr, "bench: coord: %s %s failed: %v\n", st.name, w, res.err)
				}
				all[st.name][w] = append(all[st.name][w], res)
			}
			if err := sys.stop(); err != nil {
				fmt.Fprintf(os.Stderr, "bench: coord: stopping %s: %v\n", st.name, err)
			}
		}
	}
	for name, byWorkload := range all {
		results[name] = map[string]coordResult{}
		for w, runs := range byWorkload {
			results[name][w] = medianCoord(runs)
		}
	}
	var tb, mb bytes.Buffer
	writeCoordText(&tb, cc, workloads, results, versions)
	writeCoordMarkdown(&mb, cc, workloads, results, versions)
	for _, w := range workloads {
		for _, sys := range []string{"cellar", "etcd"} {
			if results[sys][w].err != nil {
				return tb.String(), mb.String(), fmt.Errorf("coord suite: %s %s failed", sys, w)
			}
		}
	}
	return tb.String(), mb.String(), nil
}

// medianCoord is the run with the median throughput; any failed run fails
// the workload.
func medianCoord(runs []coordResult) coordResult {
	for _, r := range runs {
		if r.err != nil {
			return r
		}
	}
	slices.SortFunc(runs, func(a, b coordResult) int { return cmp.Compare(a.opsPerSec(), b.opsPerSec()) })
	return runs[len(runs)/2]
}

func runCoordWorkload(sys coordSystem, cc coordConfig, w string) coordResult {
	ctx, cancel := context.WithTimeout(context.Background(), cc.duration+5*time.Minute)
	defer cancel()
	if w == "sessions" {
		return runSessions(ctx, sys, cc)
	}
	kind, nStr, _ := strings.Cut(w, "-")
	n, _ := strconv.Atoi(nStr)
	value := bytes.Repeat([]byte("v"), cc.valueSize)
	ops := make([]func(context.Context) error, n)
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range n {
		var (
			op     func(context.Context) error
			closer func()
			err    error
		)
		if kind == "put" {
			op, closer, err = sys.newWriter(ctx, i, value)
		} else {
			op, closer, err = sys.newLocker(ctx, i)
		}
		if err != nil {
			return coordResult{err: fmt.Errorf("client %d: %w", i, err)}
		}
		ops[i], closers = op, append(closers, closer)
	}
	return drive(ctx, ops, cc.duration)
}

// drive runs every op in a loop on its own goroutine for d after a warm-up
// of a tenth of d, and reports throughput and latency percentiles.
func drive(ctx context.Context, ops []func(context.Context) error, d time.Duration) coordResult {
	warm := d / 10
	start := time.Now()
	measureFrom, end := start.Add(warm), start.Add(warm+d)
	lat := make([][]time.Duration, len(ops))
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				if err := op(ctx); err != nil {
					errs[i] = err
					return
				}
				if t0.After(measureFrom) {
					lat[i] = append(lat[i], time.Since(t0))
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return coordResult{err: err}
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return coordResult{err: errors.New("no operation finished")}
	}
	return coordResult{ops: int64(len(all)), elapsed: time.Since(measureFrom),
		p50: all[len(all)/2], p99: all[len(all)*99/100], max: all[len(all)-1]}
}

// runSessions opens cc.sessions sessions, 100 at a time, then measures
// the members' CPU over cc.window and their RSS at its end.
func runSessions(ctx context.Context, sys coordSystem, cc coordConfig) coordResult {
	closers := make([]func(), cc.sessions)
	defer func() {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 100)
		for _, c := range closers {
			if c != nil {
				wg.Add(1)
				sem <- struct{}{}
				go func() { defer wg.Done(); c(); <-sem }()
			}
		}
		wg.Wait()
	}()
	sem := make(chan struct{}, 100)
	errs := make([]error, cc.sessions)
	var wg sync.WaitGroup
	opened := time.Now()
	for i := range cc.sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			closers[i], errs[i] = sys.newSession(ctx, i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return coordResult{err: fmt.Errorf("open sessions: %w", err)}
	}
	fmt.Fprintf(os.Stderr, "bench: coord: %s: %d sessions open in %v; measuring for %v\n",
		sys.name(), cc.sessions, time.Since(opened).Round(time.Millisecond), cc.window)
	// Let the creation burst settle for one lease before measuring.
	time.Sleep(12 * time.Second)
	cpu0 := cpuOf(sys.pids())
	t0 := time.Now()
	time.Sleep(cc.window)
	cpu := cpuOf(sys.pids()) - cpu0
	elapsed := time.Since(t0)
	var rss int64
	for _, pid := range sys.pids() {
		rss += rssOf(pid)
	}
	return coordResult{ops: int64(cc.sessions), elapsed: elapsed, cpuCores: cpu.Seconds() / elapsed.Seconds(), rss: rss}
}

// cpuOf sums the user and system time of processes, from /proc.
func cpuOf(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the parenthesised command name; utime and stime are
		// the 14th and 15th fields of the line.
		_, rest, _ := strings.Cut(string(data), ") ")
		f := strings.Fields(rest)
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

// rssOf is a process's resident set in bytes, from /proc.
func rssOf(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// freeAddrs returns n loopback addresses nobody listens on now, below the
// ephemeral port range so that no outgoing connection takes one first.
func freeAddrs(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for p := 20000 + os.Getpid()%10000; p < 32000 && len(lns) < n; p++ {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			lns = append(lns, ln)
		}
	}
	if len(lns) < n {
		return nil, errors.New("not enough free ports below 32000")
	}
	out := make([]string, n)
	for i, ln := range lns {
		out[i] = ln.Addr().String()
	}
	return out, nil
}

// members are the processes of one system.
type members struct {
	procs []*exec.Cmd
	logs  []*bytes.Buffer
}

func (m *members) start(bin string, args []string) error {
	cmd := exec.Command(bin, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return err
	}
	m.procs, m.logs = append(m.procs, cmd), append(m.logs, &log)
	return nil
}

func (m *members) pids() []int {
	var out []int
	for _, p := range m.procs {
		out = append(out, p.Process.Pid)
	}
	return out
}

func (m *members) stop() error {
	for _, p := range m.procs {
		p.Process.Signal(os.Interrupt)
	}
	var errs []error
	for i, p := range m.procs {
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case err := <-done:
			// etcd ends by re-raising SIGINT, which is a clean stop too.
			if ws, ok := p.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
				err = nil
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("member %d: %w\n%s", i+1, err, tail(m.logs[i].String(), 2000)))
			}
		case <-time.After(30 * time.Second):
			p.Process.Kill()
			<-done
			errs = append(errs, fmt.Errorf("member %d did not stop in 30s", i+1))
		}
	}
	return errors.Join(errs...)
}

// cellarCell is a three-replica cell of "cellar chubby" processes.
type cellarCell struct {
	members
	addrs []string
}

func startCellarCell(bin, dir string) (coordSystem, string, error) {
	addrs, err := freeAddrs(6)
	if err != nil {
		return nil, "", err
	}
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("%d=%s/%s", i+1, addrs[3+i], addrs[i]))
	}
	c := &cellarCell{addrs: addrs[:3]}
	for i := range 3 {
		err := c.start(bin, []string{"chubby", "-cell", "bench", "-id", strconv.Itoa(i + 1),
			"-peers", strings.Join(peers, ","), "-data", filepath.Join(dir, strconv.Itoa(i+1))})
		if err != nil {
			c.stop()
			return nil, "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := c.client()
	if err := cl.Open(ctx); err != nil {
		c.stop()
		return nil, "", fmt.Errorf("cellar cell did not come up: %w\n%s", err, tail(c.logs[0].String(), 2000))
	}
	h, _, err := cl.OpenNode(ctx, "/ls/local/bench", client.OpenOptions{Mode: coord.ModeRead, Create: true, Directory: true})
	if err == nil {
		err = h.Close(ctx)
	}
	cl.Close(ctx)
	if err != nil {
		c.stop()
		return nil, "", err
	}
	return c, moduleVersion("cellar"), nil
}

func (c *cellarCell) name() string { return "cellar" }

func (c *cellarCell) client() *client.Client {
	return client.New(client.Options{Cell: "bench", Addrs: c.addrs, Principal: "bench"})
}

func (c *cellarCell) open(ctx context.Context, path string) (*client.Client, *client.Handle, error) {
	cl := c.client()
	if err := cl.Open(ctx); err != nil {
		return nil, nil, err
	}
	h, _, err := cl.OpenNode(ctx, path, client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true})
	if err != nil {
		cl.Close(ctx)
		return nil, nil, err
	}
	return cl, h, nil
}

func (c *cellarCell) newWriter(ctx context.Context, i int, value []byte) (func(context.Context) error, func(), error) {
	cl, h, err := c.open(ctx, fmt.Sprintf("/ls/local/bench/w%d", i))
	if err != nil {
		return nil, nil, err
	}
	op := func(ctx context.Context) error { _, err := h.SetContents(ctx, value); return err }
	return op, func() { cl.Close(context.Background()) }, nil
}

func (c *cellarCell) newLocker(ctx context.Context, i int) (func(context.Context) error, func(), error) {
	cl, h, err := c.open(ctx, fmt.Sprintf("/ls/local/bench/l%d", i))
	if err != nil {
		return nil, nil, err
	}
	op := func(ctx context.Context) error {
		if err := h.Acquire(ctx, coord.Exclusive); err != nil {
			return err
		}
		return h.Release(ctx)
	}
	return op, func() { cl.Close(context.Background()) }, nil
}

func (c *cellarCell) newSession(ctx context.Context, i int) (func(), error) {
	cl := c.client()
	if err := cl.Open(ctx); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cl.Close(ctx)
	}, nil
}

// etcdCluster is three etcd members.
type etcdCluster struct {
	members
	endpoints []string
}

func startEtcd(bin, dir string) (coordSystem, string, error) {
	addrs, err := freeAddrs(6)
	if err != nil {
		return nil, "", err
	}
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("m%d=http://%s", i+1, addrs[3+i]))
	}
	e := &etcdCluster{}
	for i := range 3 {
		client, peer := "http://"+addrs[i], "http://"+addrs[3+i]
		e.endpoints = append(e.endpoints, addrs[i])
		err := e.start(bin, []string{
			"--name", fmt.Sprintf("m%d", i+1), "--data-dir", filepath.Join(dir, strconv.Itoa(i+1)),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "bench", "--logger", "zap", "--log-level", "error",
		})
		if err != nil {
			e.stop()
			return nil, "", err
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		cli, err := e.client(0)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var st *clientv3.StatusResponse
			st, err = cli.Status(ctx, e.endpoints[0])
			cancel()
			cli.Close()
			if err == nil && st.Leader != 0 {
				return e, st.Version, nil
			}
		}
		if time.Now().After(deadline) {
			e.stop()
			return nil, "", fmt.Errorf("etcd did not come up: %v\n%s", err, tail(e.logs[0].String(), 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *etcdCluster) name() string { return "etcd" }

// client connects to one member, chosen round-robin by i.
func (e *etcdCluster) client(i int) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{e.endpoints[i%len(e.endpoints)]},
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

func (e *etcdCluster) newWriter(ctx context.Context, i int, value []byte) (func(context.Context) error, func(), error) {
	cli, err := e.client(i)
	if err != nil {
		return nil, nil, err
	}
	key, v := fmt.Sprintf("/bench/w%d", i), string(value)
	op := func(ctx context.Context) error { _, err := cli.Put(ctx, key, v); return err }
	return op, func() { cli.Close() }, nil
}

func (e *etcdCluster) newLocker(ctx context.Context, i int) (func(context.Context) error, func(), error) {
	cli, err := e.client(i)
	if err != nil {
		return nil, nil, err
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(12), concurrency.WithContext(ctx))
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	mu := concurrency.NewMutex(sess, fmt.Sprintf("/bench/l%d", i))
	op := func(ctx context.Context) error {
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		return mu.Unlock(ctx)
	}
	return op, func() { sess.Close(); cli.Close() }, nil
}

func (e *etcdCluster) newSession(ctx context.Context, i int) (func(), error) {
	cli, err := e.client(i)
	if err != nil {
		return nil, err
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(12), concurrency.WithContext(ctx))
	if err != nil {
		cli.Close()
		return nil, err
	}
	return func() { sess.Close(); cli.Close() }, nil
}

func writeCoordText(w io.Writer, cc coordConfig, workloads []string, res map[string]map[string]coordResult, versions map[string]string) {
	fmt.Fprintf(w, "\ncoord: cellar's Chubby cell (%s) vs etcd %s, 3 members each on loopback; %v per workload after %v warm-up; %d-byte values%s\n\n",
		versions["cellar"], versions["etcd"], cc.duration, cc.duration/10, cc.valueSize, roundsNote(cc))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tcellar ops/s\tetcd ops/s\tratio\tcellar p50\tetcd p50\tcellar p99\tetcd p99\tp99 ratio\tcellar max\tetcd max\t")
	for _, wl := range workloads {
		c, e := res["cellar"][wl], res["etcd"][wl]
		if wl == "sessions" {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", wl, opsCell(c), opsCell(e), ratio(c.opsPerSec(), e.opsPerSec(), c.err, e.err),
			durCell(c, c.p50), durCell(e, e.p50), durCell(c, c.p99), durCell(e, e.p99),
			ratio(e.p99.Seconds(), c.p99.Seconds(), c.err, e.err), durCell(c, c.max), durCell(e, e.max))
	}
	tw.Flush()
	c, e := res["cellar"]["sessions"], res["etcd"]["sessions"]
	fmt.Fprintf(w, "\nsessions: %d kept alive (lease/TTL 12 s), members' CPU over %v and RSS summed over the 3 members\n", cc.sessions, cc.window)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tcellar\tetcd\tcellar/etcd\t")
	fmt.Fprintf(tw, "CPU (cores)\t%s\t%s\t%s\t\n", coresCell(c), coresCell(e), ratio(c.cpuCores, e.cpuCores, c.err, e.err))
	fmt.Fprintf(tw, "RSS (MiB)\t%s\t%s\t%s\t\n", mibCell(c), mibCell(e), ratio(float64(c.rss), float64(e.rss), c.err, e.err))
	tw.Flush()
	fmt.Fprintln(w, "\nratio is cellar/etcd throughput; p99 ratio is etcd/cellar, so above 1 means cellar's p99 is lower. For the sessions, below 1 means cellar uses less.")
}

func writeCoordMarkdown(w io.Writer, cc coordConfig, workloads []string, res map[string]map[string]coordResult, versions map[string]string) {
	fmt.Fprintf(w, "\n## coord: cellar's Chubby cell vs etcd %s\n\n3 members each on loopback, data on the same disk; %v per workload after a %v warm-up; %d-byte values%s. Each client has its own connection and session.\n\n",
		versions["etcd"], cc.duration, cc.duration/10, cc.valueSize, roundsNote(cc))
	fmt.Fprintln(w, "| workload | cellar ops/s | etcd ops/s | cellar/etcd | cellar p50 | etcd p50 | cellar p99 | etcd p99 | etcd p99 / cellar p99 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, wl := range workloads {
		if wl == "sessions" {
			continue
		}
		c, e := res["cellar"][wl], res["etcd"][wl]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wl, opsCell(c), opsCell(e), ratio(c.opsPerSec(), e.opsPerSec(), c.err, e.err),
			durCell(c, c.p50), durCell(e, e.p50), durCell(c, c.p99), durCell(e, e.p99), ratio(e.p99.Seconds(), c.p99.Seconds(), c.err, e.err))
	}
	c, e := res["cellar"]["sessions"], res["etcd"]["sessions"]
	fmt.Fprintf(w, "\n%d sessions kept alive (lease/TTL 12 s); CPU over %v and RSS summed over the 3 members:\n\n", cc.sessions, cc.window)
	fmt.Fprintln(w, "| | cellar | etcd | cellar/etcd |\n|---|---:|---:|---:|")
	fmt.Fprintf(w, "| CPU (cores) | %s | %s | %s |\n", coresCell(c), coresCell(e), ratio(c.cpuCores, e.cpuCores, c.err, e.err))
	fmt.Fprintf(w, "| RSS (MiB) | %s | %s | %s |\n", mibCell(c), mibCell(e), ratio(float64(c.rss), float64(e.rss), c.err, e.err))
}

func roundsNote(cc coordConfig) string {
	if cc.runs <= 1 {
		return ""
	}
	return fmt.Sprintf("; put and lock: the median of %d alternating rounds", cc.runs)
}

func opsCell(r coordResult) string {
	if r.err != nil {
		return "failed"
	}
	return fmt.Sprintf("%.0f", r.opsPerSec())
}

func durCell(r coordResult, d time.Duration) string {
	if r.err != nil {
		return "-"
	}
	return fmt.Sprintf("%.2fms", d.Seconds()*1000)
}

func coresCell(r coordResult) string {
	if r.err != nil {
		return "failed"
	}
	return fmt.Sprintf("%.3f", r.cpuCores)
}

func mibCell(r coordResult) string {
	if r.err != nil {
		return "failed"
	}
	return fmt.Sprintf("%.0f", float64(r.rss)/(1<<20))
}

func ratio(a, b float64, errs ...error) string {
	for _, e := range errs {
		if e != nil {
			return "-"
		}
	}
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
