package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
	"github.com/cellardb/cellar/ops/coordlock"
)

// procCluster is a cluster of separate processes on loopback: a
// one-replica Chubby cell with a short lease, masters and tablet servers
// over one dfs root.
type procCluster struct {
	t       *testing.T
	bin     string
	dir     string
	chubby  string
	masters []*procMaster
	servers map[string]*procServer // by registered id
	sess    *coordlock.Session
	kv      *kvclient.Client
}

type procMaster struct {
	cmd    *exec.Cmd
	status string
}

type procServer struct {
	cmd  *exec.Cmd
	out  *procReader
	id   string
	addr string
}

func startProcCluster(t *testing.T, masters, servers int) *procCluster {
	t.Helper()
	c := &procCluster{t: t, bin: buildCellar(t), dir: t.TempDir(), chubby: freeLoopbackPort(t), servers: map[string]*procServer{}}
	startProcess(t, c.bin, "clients:", "chubby", "-id", "1", "-peers", "1="+freeLoopbackPort(t)+"/"+c.chubby,
		"-data", filepath.Join(c.dir, "chubby"), "-lease", "2s", "-grace", "2s", "-rtt", "10ms")
	for i := range masters {
		ready := "active master"
		if i > 0 {
			ready = "standby"
		}
		status := freeLoopbackPort(t)
		cmd, _ := startProcess(t, c.bin, ready, "master", "-listen", status, "-rpc", freeLoopbackPort(t), "-chubby", c.chubby,
			"-scan-interval", "100ms", "-dfs", filepath.Join(c.dir, "dfs"))
		c.masters = append(c.masters, &procMaster{cmd: cmd, status: status})
	}
	for i := range servers {
		c.startServer(fmt.Sprintf("ts%d", i+1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc := &coordlock.Service{Client: coordclient.Options{Addrs: []string{c.chubby}, Principal: "test"}}
	sess, err := svc.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.sess = sess
	c.kv = kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}})
	t.Cleanup(func() { c.kv.Close(); sess.Close(context.Background()) })
	return c
}

func (c *procCluster) startServer(name string) *procServer {
	c.t.Helper()
	cmd, out, line := startProcessLine(c.t, c.bin, "serving on", "tabletserver", "-id", name, "-listen", "127.0.0.1:0",
		"-chubby", c.chubby, "-dfs", filepath.Join(c.dir, "dfs"))
	path := registeredAs(c.t, line)
	addr := strings.Fields(line[strings.Index(line, "serving on ")+len("serving on "):])[0]
	s := &procServer{cmd: cmd, out: out, id: path[strings.LastIndex(path, "/")+1:], addr: strings.TrimSuffix(addr, ",")}
	c.servers[s.id] = s
	return s
}

// view reads the active master's view of the servers and their tablets.
func (c *procCluster) view(m *procMaster) map[string][]string {
	resp, err := http.Get("http://" + m.status + "/servers")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Live []struct {
			ID      string
			Tablets []struct{ Table string }
		} `json:"live"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return nil
	}
	out := map[string][]string{}
	for _, s := range body.Live {
		out[s.ID] = []string{}
		for _, tb := range s.Tablets {
			out[s.ID] = append(out[s.ID], tb.Table)
		}
	}
	return out
}

func (c *procCluster) createTable(ctx context.Context, name string, splits string) {
	c.t.Helper()
	args := []string{"table", "create", "-chubby", c.chubby}
	if splits != "" {
		args = append(args, "-splits", splits)
	}
	out, err := exec.CommandContext(ctx, c.bin, append(args, name, "f")...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("table create: %v\n%s", err, out)
	}
}

// load writes unique rows until stop is closed, recording the
// acknowledged ones.
type load struct {
	acked sync.Map
	n     atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
}

func (c *procCluster) startLoad(ctx context.Context, table string, writers int) *load {
	l := &load{stop: make(chan struct{})}
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
				row := fmt.Sprintf("k%d-%d-%06d", i%9, w, i)
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := c.kv.Apply(wctx, table, &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{
					model.SetCell("f", []byte("v"), model.ServerTimestamp, []byte("value of "+row))}})
				cancel()
				if err == nil {
					l.acked.Store(row, true)
					l.n.Add(1)
				}
			}
		}()
	}
	return l
}

// end stops the writers and waits for them; it may be called twice.
func (l *load) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *load) waitFor(t *testing.T, what string, more int64) {
	t.Helper()
	target := l.n.Load() + more
	deadline := time.Now().Add(60 * time.Second)
	for l.n.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d more writes %s (at %d)", more, what, l.n.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkAcked scans the table with a new client: rows in order, once each,
// and every acknowledged write among them.
func (c *procCluster) checkAcked(ctx context.Context, table string, l *load) {
	c.t.Helper()
	cold := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: c.sess}})
	defer cold.Close()
	sc := cold.Scan(ctx, table, model.RowRange{}, kvclient.Filter{}, 0)
	got := map[string]bool{}
	last := ""
	for sc.Next() {
		k := string(sc.Row().Key)
		if k <= last {
			c.t.Fatalf("row %q after %q", k, last)
		}
		last = k
		got[k] = true
	}
	if err := sc.Err(); err != nil {
		c.t.Fatal(err)
	}
	missing := 0
	l.acked.Range(func(k, _ any) bool {
		if !got[k.(string)] {
			missing++
		}
		return true
	})
	if missing > 0 {
		c.t.Fatalf("%d of %d acknowledged writes are missing", missing, l.n.Load())
	}
	c.t.Logf("%d acknowledged writes, all of them among the %d rows", l.n.Load(), len(got))
}

// busiest returns the live server with the most tablets, in m's view.
func (c *procCluster) busiest(m *procMaster, want func(tables []string) bool) *procServer {
	var best *procServer
	bestN := -1
	for id, tables := range c.view(m) {
		if s := c.servers[id]; s != nil && want(tables) && len(tables) > bestN {
			best, bestN = s, len(tables)
		}
	}
	if best == nil {
		c.t.Fatal("no server fits")
	}
	return best
}

func (c *procCluster) kill(s *procServer) {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	delete(c.servers, s.id)
}

// TestKVClusterProcesses runs the whole kv cluster as processes: a Chubby
// replica, two masters (one standby) and three tablet servers. Under a
// write load it kills with SIGKILL a tablet server, then the active
// master, then the server holding METADATA's root tablet. The standby
// takes over, every tablet is served again, and every acknowledged write
// is readable.
func TestKVClusterProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startProcCluster(t, 2, 3)
	eventually(t, "the master to see the servers", func() bool { return len(c.view(c.masters[0])) == 3 })
	c.createTable(ctx, "t", "k2,k4,k6")
	l := c.startLoad(ctx, "t", 4)
	defer l.end()
	l.waitFor(t, "before the first kill", 300)

	isUser := func(tables []string) bool {
		return slices.Contains(tables, "t") && !slices.Contains(tables, kvclient.MetaTable)
	}
	victim := c.busiest(c.masters[0], func(tables []string) bool { return isUser(tables) || slices.Contains(tables, "t") })
	t.Logf("SIGKILL tablet server %s", victim.id)
	c.kill(victim)
	l.waitFor(t, "after the tablet server's crash", 300)

	firstMaster, _ := lockCLI(t, c.bin, c.chubby, "", "cat", "/ls/local/cellar/master")
	t.Log("SIGKILL the active master")
	c.masters[0].cmd.Process.Kill()
	c.masters[0].cmd.Wait()
	eventually(t, "the standby to take over", func() bool {
		out, err := lockCLI(t, c.bin, c.chubby, "", "cat", "/ls/local/cellar/master")
		return err == nil && out != firstMaster && strings.HasPrefix(out, "127.0.0.1:")
	})
	eventually(t, "the new master to see the two live servers", func() bool { return len(c.view(c.masters[1])) == 2 })
	l.waitFor(t, "after the master's crash", 200)

	// A new server joins; then the one that holds the root tablet dies.
	c.startServer("ts4")
	root := c.busiest(c.masters[1], func(tables []string) bool { return slices.Contains(tables, kvclient.MetaTable) })
	t.Logf("SIGKILL tablet server %s, which holds METADATA", root.id)
	c.kill(root)
	l.waitFor(t, "after METADATA's server crashed", 300)
	l.end()
	c.checkAcked(ctx, "t", l)
	// Every tablet is served by exactly one live server.
	eventually(t, "the tablets to be assigned", func() bool {
		n := 0
		for _, tables := range c.view(c.masters[1]) {
			for _, tb := range tables {
				if tb == "t" {
					n++
				}
			}
		}
		return n == 4
	})
}

// TestFencingAfterSIGSTOP pauses a tablet server past its session lease
// while clients hammer it. The master takes its tablets away; once it runs
// again it answers nothing (every request that reached it after the pause
// fails), no acknowledged write is lost, and it exits because its file is
// gone.
func TestFencingAfterSIGSTOP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startProcCluster(t, 1, 2)
	eventually(t, "the master to see the servers", func() bool { return len(c.view(c.masters[0])) == 2 })
	c.createTable(ctx, "t", "")
	victim := c.busiest(c.masters[0], func(tables []string) bool { return slices.Contains(tables, "t") })
	if slices.Contains(c.view(c.masters[0])[victim.id], kvclient.MetaTable) {
		// Keep METADATA away from the victim, so the test is about the
		// user tablet: create it again on the other server.
		t.Logf("%s holds METADATA too", victim.id)
	}
	l := c.startLoad(ctx, "t", 4)
	defer l.end()
	l.waitFor(t, "before the pause", 200)

	// Direct hammering of the victim, recording when each request was sent
	// and how it ended.
	cc, err := grpc.NewClient("passthrough:///"+victim.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	direct := pb.NewTabletServerClient(cc)
	var stoppedAt atomic.Int64
	var lateSuccesses atomic.Int64
	hammer := make(chan struct{})
	var hw sync.WaitGroup
	for h := range 4 {
		hw.Add(1)
		go func() {
			defer hw.Done()
			for i := 0; ; i++ {
				select {
				case <-hammer:
					return
				default:
				}
				sent := time.Now().UnixNano()
				rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := direct.MutateRow(rctx, &pb.MutateRowRequest{Table: "t", Row: []byte(fmt.Sprintf("h%d-%06d", h, i)),
					Mutations: []*pb.Mutation{{Mutation: &pb.Mutation_SetCell_{SetCell: &pb.Mutation_SetCell{Family: "f", Qualifier: []byte("v"), Timestamp: -1, Value: []byte("x")}}}}})
				rcancel()
				if s := stoppedAt.Load(); err == nil && s != 0 && sent > s {
					lateSuccesses.Add(1)
				}
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	t.Logf("SIGSTOP %s", victim.id)
	victim.cmd.Process.Signal(syscall.SIGSTOP)
	// Requests count as sent after the pause only once the process is
	// really stopped: SIGSTOP is delivered asynchronously, and a request
	// the server answers before it stops is a legitimate acknowledgement.
	waitStopped(t, victim.cmd.Process.Pid)
	stoppedAt.Store(time.Now().UnixNano())
	eventually(t, "the master to bury the paused server", func() bool {
		_, ok := c.view(c.masters[0])[victim.id]
		return !ok
	})
	l.waitFor(t, "on the server that took the tablet over", 200)
	victim.cmd.Process.Signal(syscall.SIGCONT)
	exited := make(chan []byte, 1)
	go func() {
		rest, _ := io.ReadAll(victim.out) // to its exit
		victim.cmd.Wait()
		exited <- rest
	}()
	var victimLog []byte
	select {
	case victimLog = <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the paused server did not exit after its file was deleted")
	}
	// Serving intervals, from the servers' logs: the paused server stopped
	// serving (its lease ended) before the tablet was loaded elsewhere.
	since := regexp.MustCompile(`msg="lost its lock; not serving" .*since=(\S+)`).FindSubmatch(victimLog)
	if since == nil {
		t.Fatalf("the paused server logged no end of serving:\n%s", victimLog)
	}
	var loadedAt string
	for _, s := range c.servers {
		if s == victim {
			continue
		}
		if m := regexp.MustCompile(`msg="loaded tablet" .* table=t event="recovered from dead server ` + regexp.QuoteMeta(victim.id) + `" since=(\S+)`).FindSubmatch(s.out.All()); m != nil {
			loadedAt = string(m[1])
		}
	}
	if loadedAt == "" || string(since[1]) >= loadedAt {
		t.Fatalf("serving intervals overlap: the paused server served until %s, the tablet was loaded elsewhere at %q", since[1], loadedAt)
	}
	t.Logf("the paused server stopped serving at %s; the tablet was loaded elsewhere at %s", since[1], loadedAt)
	close(hammer)
	hw.Wait()
	if n := lateSuccesses.Load(); n > 0 {
		t.Fatalf("the paused server acknowledged %d requests sent after the pause", n)
	}
	l.end()
	c.checkAcked(ctx, "t", l)
}

// waitStopped waits until process pid is stopped (state T in
// /proc/pid/stat).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the command name, which is in parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("process %d did not stop", pid)
}
