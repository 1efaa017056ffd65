package tests

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
)

// terminate sends SIGTERM and returns the rest of the process's output
// once it exits, with its exit error and how long it took.
func terminate(t *testing.T, cmd *exec.Cmd, out io.Reader) (string, error, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(out); done <- b }()
	var rest []byte
	select {
	case rest = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("cellar %s did not exit within 60s of SIGTERM", cmd.Args[1])
	}
	err := cmd.Wait()
	return string(rest), err, time.Since(start)
}

// TestGracefulSIGTERM stops each role of a process cluster with SIGTERM.
// The Chubby lease is 10 s, so a hand-over that waits for a lease to end
// would be slow: a tablet server flushes and releases its lock, and the
// master moves its tablets within a few seconds with every write intact;
// the gateway drops an idle connection and exits 0 at once; the active
// master releases its lock and the standby takes over; the rest exit 0.
func TestGracefulSIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := &procCluster{t: t, bin: buildCellar(t), dir: t.TempDir(), chubby: freeLoopbackPort(t), servers: map[string]*procServer{}}
	chubby, chubbyOut, _ := startProcessLine(t, c.bin, "clients:", "chubby", "-id", "1", "-peers", "1="+freeLoopbackPort(t)+"/"+c.chubby,
		"-data", filepath.Join(c.dir, "chubby"), "-lease", "10s", "-grace", "2s", "-rtt", "10ms")
	var masterOut []*procReader
	for i, ready := range []string{"active master", "standby"} {
		status := freeLoopbackPort(t)
		cmd, out, _ := startProcessLine(t, c.bin, ready, "master", "-listen", status, "-rpc", freeLoopbackPort(t), "-chubby", c.chubby,
			"-scan-interval", "100ms", "-dfs", filepath.Join(c.dir, "dfs"), "-log-format", []string{"text", "json"}[i])
		c.masters = append(c.masters, &procMaster{cmd: cmd, status: status})
		masterOut = append(masterOut, out)
	}
	for i := range 3 {
		c.startServer(fmt.Sprintf("ts%d", i+1))
	}
	svc := &coordlock.Service{Client: coordclient.Options{Addrs: []string{c.chubby}, Principal: "test"}}
	sess, err := svc.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.sess = sess
	c.kv = kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}})
	var closed sync.Once
	closeSession := func() {
		closed.Do(func() {
			c.kv.Close()
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			sess.Close(cctx)
		})
	}
	defer closeSession()
	eventually(t, "the master to see the servers", func() bool { return len(c.view(c.masters[0])) == 3 })
	c.createTable(ctx, "t", "k2,k4,k6")
	l := &load{stop: make(chan struct{})}
	for i := range 400 {
		row := fmt.Sprintf("k%d-%04d", i%9, i)
		if err := c.kv.Apply(ctx, "t", &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{
			model.SetCell("f", []byte("v"), model.ServerTimestamp, []byte("value of "+row))}}); err != nil {
			t.Fatal(err)
		}
		l.acked.Store(row, true)
		l.n.Add(1)
	}

	// A tablet server.
	victim := c.busiest(c.masters[0], func(tables []string) bool {
		return slices.Contains(tables, "t") && !slices.Contains(tables, kvclient.MetaTable)
	})
	out, err, took := terminate(t, victim.cmd, victim.out)
	if err != nil || !strings.Contains(out, "stopped cleanly; the lock is released") || strings.Contains(out, "final flush failed") {
		t.Fatalf("tablet server after SIGTERM (%v): %v\n%s", took, err, out)
	}
	exited := time.Now()
	delete(c.servers, victim.id)
	for {
		view := c.view(c.masters[0])
		n := 0
		for _, tables := range view {
			for _, tb := range tables {
				if tb == "t" {
					n++
				}
			}
		}
		_, stillThere := view[victim.id]
		if view != nil && !stillThere && n >= 4 {
			break
		}
		if time.Since(exited) > 5*time.Second {
			t.Fatalf("5s after the server exited (lease 10s), the master's view is %v", view)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("tablet server %s stopped in %v; its tablets were served elsewhere %v later", victim.id, took, time.Since(exited))
	c.checkAcked(ctx, "t", l)

	// The gateway, with an idle connection.
	gw, gwOut, line := startProcessLine(t, c.bin, "psql", "gateway", "-chubby", c.chubby, "-pgwire", "127.0.0.1:0", "-bigtable", "",
		"-users", filepath.Join(c.dir, "users.json"))
	url := line[strings.Index(line, `"`)+1 : strings.LastIndex(line, `"`)]
	conn, err := pgx.Connect(ctx, url+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&rows); err != nil || rows != 400 {
		t.Fatalf("count through the gateway: %d %v", rows, err)
	}
	out, err, took = terminate(t, gw, gwOut)
	if err != nil || took > 5*time.Second || !strings.Contains(out, "stopped cleanly") {
		t.Fatalf("gateway after SIGTERM with an idle connection (%v): %v\n%s", took, err, out)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("the connection still works after the gateway stopped")
	}
	conn.Close(ctx)

	// The active master; the standby (which logs JSON) takes over.
	out, err, took = terminate(t, c.masters[0].cmd, masterOut[0])
	if err != nil || !strings.Contains(out, "the master lock is released") {
		t.Fatalf("master after SIGTERM (%v): %v\n%s", took, err, out)
	}
	exited = time.Now()
	eventually(t, "the standby to take over", func() bool { return strings.Contains(string(masterOut[1].All()), "active master") })
	if d := time.Since(exited); d > 5*time.Second {
		t.Fatalf("the standby took over %v after the active master exited (lease 10s)", d)
	}
	if !strings.Contains(string(masterOut[1].All()), `"msg":"master active"`) {
		t.Fatalf("the standby's -log-format json is not JSON:\n%s", masterOut[1].All())
	}

	// The rest: the servers flush and release their locks, the cell stops.
	out, err, _ = terminate(t, c.masters[1].cmd, masterOut[1])
	if err != nil {
		t.Fatalf("second master: %v\n%s", err, out)
	}
	for id, s := range c.servers {
		if out, err, _ := terminate(t, s.cmd, s.out); err != nil || !strings.Contains(out, "stopped cleanly") {
			t.Fatalf("tablet server %s: %v\n%s", id, err, out)
		}
	}
	closeSession()
	if out, err, _ := terminate(t, chubby, chubbyOut); err != nil || !strings.Contains(out, "stopped cleanly") {
		t.Fatalf("chubby: %v\n%s", err, out)
	}
}
