package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
	"github.com/cellardb/cellar/tests/chaos"
)

// httpOf reads, from a process's output after its ready line, the address
// of its -http server.
func httpOf(t *testing.T, out *procReader) string {
	t.Helper()
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("no http line: %v", err)
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "http:"); ok {
			u := strings.Fields(rest)[0]
			return strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/")
		}
	}
}

// startFaultyServer starts a tablet server with -fault-injection and
// returns it with the address of its fault endpoint.
func (c *procCluster) startFaultyServer(name string) (*procServer, string) {
	c.t.Helper()
	cmd, out, line := startProcessLine(c.t, c.bin, "serving on", "tabletserver", "-id", name, "-listen", "127.0.0.1:0",
		"-chubby", c.chubby, "-dfs", filepath.Join(c.dir, "dfs"), "-fault-injection")
	path := registeredAs(c.t, line)
	addr := strings.Fields(line[strings.Index(line, "serving on ")+len("serving on "):])[0]
	s := &procServer{cmd: cmd, out: out, id: path[strings.LastIndex(path, "/")+1:], addr: strings.TrimSuffix(addr, ",")}
	c.servers[s.id] = s
	return s, httpOf(c.t, out)
}

// fault posts to a process's fault endpoint.
func fault(t *testing.T, httpAddr, path string) string {
	t.Helper()
	resp, err := http.Post("http://"+httpAddr+"/debug/faults/"+path, "", nil)
	if err != nil {
		t.Fatalf("fault %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fault %s: %s %s", path, resp.Status, b)
	}
	return strings.TrimSpace(string(b))
}

// setLoad is the set workload: writers insert unique rows through the kv
// client, one request in flight each, and record every row they tried and
// every one acknowledged, with the time of each acknowledgement.
type setLoad struct {
	mu        sync.Mutex
	attempted map[string]bool
	acked     map[string]bool
	ackTimes  []time.Time
	stop      chan struct{}
	wg        sync.WaitGroup
}

func (c *procCluster) startSetLoad(ctx context.Context, table string, writers int, prefix string) *setLoad {
	l := &setLoad{attempted: map[string]bool{}, acked: map[string]bool{}, stop: make(chan struct{})}
	for w := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				row := fmt.Sprintf("k%d-%s%d-%06d", i%8, prefix, w, i)
				l.mu.Lock()
				l.attempted[row] = true
				l.mu.Unlock()
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := c.kv.Apply(wctx, table, &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{
					model.SetCell("f", []byte("v"), model.ServerTimestamp, []byte(row))}})
				cancel()
				if err == nil {
					l.mu.Lock()
					l.acked[row] = true
					l.ackTimes = append(l.ackTimes, time.Now())
					l.mu.Unlock()
				} else {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	return l
}

func (l *setLoad) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

func (l *setLoad) waitFor(t *testing.T, what string, more int) {
	t.Helper()
	target := l.ackedCount() + more
	deadline := time.Now().Add(60 * time.Second)
	for l.ackedCount() < target {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d more acknowledged inserts %s (at %d)", more, what, l.ackedCount())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *setLoad) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// gapAfter returns the longest time without an acknowledgement from t0 on:
// the unavailability a fault at t0 caused.
func (l *setLoad) gapAfter(t0 time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	times := slices.Clone(l.ackTimes)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	prev := t0
	for _, at := range times {
		if at.Before(t0) {
			continue
		}
		gap = max(gap, at.Sub(prev))
		prev = at
	}
	return gap
}

// checkSet reads the whole table with a new client and checks the set:
// every acknowledged row is there, every row there was attempted, and the
// rows that must not be (writes refused for certain) are not.
func (c *procCluster) checkSet(ctx context.Context, table string, acked, attempted, refused map[string]bool) {
	c.t.Helper()
	got := map[string]bool{}
	rows, err := c.scanRows(ctx, table)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, r := range rows {
		got[r] = true
	}
	var lost, phantom, resurrected []string
	for r := range acked {
		if !got[r] {
			lost = append(lost, r)
		}
	}
	for r := range got {
		if !attempted[r] {
			phantom = append(phantom, r)
		}
		if refused[r] {
			resurrected = append(resurrected, r)
		}
	}
	slices.Sort(lost)
	slices.Sort(phantom)
	c.t.Logf("set check: %d rows read; %d acknowledged, %d attempted; acknowledged writes lost: %d; never written but present: %d; refused but present: %d",
		len(got), len(acked), len(attempted), len(lost), len(phantom), len(resurrected))
	if len(lost) > 0 || len(phantom) > 0 || len(resurrected) > 0 {
		c.t.Fatalf("set violated: lost %v, phantom %v, refused writes present %v", lost[:min(len(lost), 20)], phantom[:min(len(phantom), 20)], resurrected)
	}
}

// scanRows returns every row key of table, through the cluster's client,
// retrying while the table is being recovered.
func (c *procCluster) scanRows(ctx context.Context, table string) ([]string, error) {
	var lastErr error
	for attempt := 0; attempt < 100; attempt++ {
		sc := c.kv.Scan(ctx, table, model.RowRange{}, kvclient.Filter{}, 0)
		var rows []string
		for sc.Next() {
			rows = append(rows, string(sc.Row().Key))
		}
		if lastErr = sc.Err(); lastErr == nil {
			return rows, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("scan %s: %w", table, lastErr)
}

// directWriter writes to one tablet server with no client in between: no
// retries, so each call's outcome is the server's own answer.
type directWriter struct {
	cc  *grpc.ClientConn
	cli pb.TabletServerClient
}

func newDirectWriter(t *testing.T, addr string) *directWriter {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return &directWriter{cc: cc, cli: pb.NewTabletServerClient(cc)}
}

func (d *directWriter) put(ctx context.Context, table, row string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := d.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: table, Row: []byte(row),
		Mutations: []*pb.Mutation{{Mutation: &pb.Mutation_SetCell_{SetCell: &pb.Mutation_SetCell{Family: "f", Qualifier: []byte("v"), Timestamp: -1, Value: []byte(row)}}}}})
	return err
}

// waitExit waits for a process that is ending by itself and returns how
// it ended.
func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) syscall.WaitStatus {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("process %d did not end within %v", cmd.Process.Pid, within)
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// TestChaosDiskFaults runs a Chubby replica, a master and two tablet
// servers as processes. The first server, which holds every tablet (the
// root, METADATA and the user table's four), runs with -fault-injection;
// eight writers insert unique rows through the kv client. It then:
//
//  1. fails one commit log fsync while only a direct, retry-free writer
//     writes: that write gets an error and the next one, on a new log
//     segment, succeeds;
//  2. fails every commit log fsync for a while under the load, then heals:
//     direct writes in the window get errors, the load goes on afterwards;
//     then fails every SSTable fsync: a major compaction fails, writes go
//     on, and once healed the compaction succeeds;
//  3. stalls the log's fsyncs and emulates a power loss with a seeded
//     torn tail: the server's unsynced log bytes are cut (some kept, maybe
//     garbled) and it dies as by kill -9. The second server recovers every
//     tablet from the torn log within the stated bound.
//
// At the end every acknowledged insert is present, nothing that was never
// written is, and none of the writes the server refused came back.
func TestChaosDiskFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seed := chaos.Seed(t, 7)
	c := startProcCluster(t, 0, 0)
	statusAddr := freeLoopbackPort(t)
	cmd, _ := startProcess(t, c.bin, "active master", "master", "-listen", statusAddr, "-rpc", freeLoopbackPort(t), "-chubby", c.chubby,
		"-scan-interval", "100ms", "-dfs", filepath.Join(c.dir, "dfs"), "-no-balance")
	c.masters = append(c.masters, &procMaster{cmd: cmd, status: statusAddr})
	victim, faults := c.startFaultyServer("ts1")
	eventually(t, "the master to see the faulty server", func() bool { return len(c.view(c.masters[0])) == 1 })
	c.createTable(ctx, "t", "k2,k4,k6")
	c.startServer("ts2") // the recovery target; no balancing moves tablets to it
	eventually(t, "the master to see both servers", func() bool { return len(c.view(c.masters[0])) == 2 })
	if tabs := c.view(c.masters[0])[victim.id]; !slices.Contains(tabs, "t") || !slices.Contains(tabs, kvclient.MetaTable) {
		t.Fatalf("the faulty server serves %v, want the user table and METADATA", tabs)
	}
	direct := newDirectWriter(t, victim.addr)
	refused := map[string]bool{}
	acked := map[string]bool{}
	attempted := map[string]bool{}
	mustPut := func(row string) {
		t.Helper()
		attempted[row] = true
		if err := direct.put(ctx, "t", row); err != nil {
			t.Fatalf("direct write %s: %v", row, err)
		}
		acked[row] = true
	}
	mustFail := func(row string) error {
		t.Helper()
		attempted[row] = true
		err := direct.put(ctx, "t", row)
		if err == nil {
			t.Fatalf("direct write %s was acknowledged although its commit log fsync failed", row)
		}
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "logs/"+victim.id+"/") {
			t.Fatalf("direct write %s under a failed fsync: %v, want Unavailable naming the commit log's segment", row, err)
		}
		refused[row] = true
		return err
	}

	// 1. One failed fsync, nothing else writing.
	mustPut("k1-direct-before")
	fault(t, faults, "sync-fail?n=1&prefix=logs/")
	err := mustFail("k3-direct-failed-1")
	t.Logf("a write whose fsync failed: %v", err)
	mustPut("k5-direct-after-1")

	// 2. Every log fsync fails for a while under load.
	load := c.startSetLoad(ctx, "t", 8, "w")
	defer load.end()
	load.waitFor(t, "before the fsync failures", 200)
	fault(t, faults, "sync-fail?n=-1&prefix=logs/")
	failedAt := time.Now()
	mustFail("k7-direct-failed-2")
	time.Sleep(time.Second)
	mustFail("k0-direct-failed-3")
	fault(t, faults, "clear")
	mustPut("k2-direct-after-2")
	load.waitFor(t, "after the fsync failures healed", 200)
	t.Logf("fsyncs failing for %v: the longest stretch without an acknowledged insert was %v", time.Second, load.gapAfter(failedAt).Round(time.Millisecond))

	// 2b. SSTable fsyncs fail: a flush and major compaction fails (and
	// must leave no reference to its half-made files), while writes go on
	// through the log; healed, it succeeds, so that the recovery below
	// reads SSTables as well as the log.
	fault(t, faults, "sync-fail?n=-1&prefix=sst/")
	compact := func() ([]byte, error) {
		return exec.CommandContext(ctx, c.bin, "admin", "compact", "-chubby", c.chubby, "-timeout", "20s", "t").CombinedOutput()
	}
	if out, err := compact(); err == nil {
		t.Fatalf("a compaction whose SSTable fsyncs failed succeeded:\n%s", out)
	} else {
		t.Logf("compaction under failing SSTable fsyncs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	load.waitFor(t, "while SSTable fsyncs fail", 100)
	fault(t, faults, "clear")
	if out, err := compact(); err != nil {
		t.Fatalf("compaction after the SSTable fsyncs healed: %v\n%s", err, out)
	}
	load.waitFor(t, "after the compaction", 100)

	// 3. The disk stalls; the machine loses power with writes in flight.
	fault(t, faults, "stall-syncs?prefix=logs/")
	time.Sleep(300 * time.Millisecond)
	crashAt := time.Now()
	// The answer may be lost with the process; if it comes, it says what
	// the power loss undid.
	resp, err := http.Post(fmt.Sprintf("http://%s/debug/faults/crash?torn=1&seed=%d", faults, int64(seed>>1)), "", nil)
	if err == nil && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("crash: %s %s", resp.Status, b)
	}
	if err == nil {
		var st dfs.FaultyStats
		if json.NewDecoder(resp.Body).Decode(&st) == nil {
			t.Logf("power loss: %d files cut back, %d removed, %d unsynced bytes kept as torn tails", st.Cut, st.Removed, st.TornBytes)
			if st.Cut == 0 {
				t.Fatal("the power loss found no unsynced data to cut, although the log's fsyncs were stalled")
			}
		}
		resp.Body.Close()
	}
	if ws := waitExit(t, victim.cmd, 10*time.Second); ws.Signal() != syscall.SIGKILL {
		t.Fatalf("after the power loss the server ended with %v, want SIGKILL", ws)
	}
	delete(c.servers, victim.id)
	load.waitFor(t, "after the power loss, on the server that recovered the tablets", 300)
	gap := load.gapAfter(crashAt)
	t.Logf("power loss: inserts were unavailable for %v (bound 30s: lease 2s + grace 2s, detection, log recovery)", gap.Round(time.Millisecond))
	if gap > 30*time.Second {
		t.Fatalf("unavailable for %v after the power loss, over the 30s bound", gap)
	}
	load.end()

	for r := range load.attempted {
		attempted[r] = true
	}
	for r := range load.acked {
		acked[r] = true
	}
	// The recovered server replayed the torn log: it logs where replay
	// stopped, if anywhere, and that must be past every acknowledged write.
	c.checkSet(ctx, "t", acked, attempted, refused)
	eventually(t, "every tablet to be served by the surviving server", func() bool {
		v := c.view(c.masters[0])
		for _, tabs := range v {
			return len(v) == 1 && len(tabs) >= 5
		}
		return false
	})
}
