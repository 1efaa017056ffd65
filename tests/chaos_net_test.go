package tests

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"

	"github.com/cellardb/cellar/tests/chaos"
	"github.com/cellardb/cellar/tests/chaos/netfault"
)

// netCell is a Chubby cell of "cellar chubby" processes whose ports are
// all behind netfault proxies: each replica's Raft address in -peers is a
// proxy in front of its -raft-listen port, and its client address is a
// proxy in front of its -listen port. Every process of the cluster is
// named in procs, so that a proxy can apply a fault to the connections of
// one process only: a partition between two processes is a rule for the
// one on the other's proxy. (A proxy per pair of processes cannot do for
// Raft: see cell.Options.RaftListen.)
type netCell struct {
	t      *testing.T
	bin    string
	dir    string
	procs  *netfault.Processes
	raft   map[uint64]*netfault.Proxy
	client map[uint64]*netfault.Proxy
	real   map[uint64][2]string // the Raft and client ports behind the proxies
	peers  string
	lease  string
	grace  string
}

// startNetCell starts n replicas with the given lease and grace.
func startNetCell(t *testing.T, bin string, n int, lease, grace string) *netCell {
	t.Helper()
	c := &netCell{t: t, bin: bin, dir: t.TempDir(), procs: netfault.NewProcesses(), raft: map[uint64]*netfault.Proxy{},
		client: map[uint64]*netfault.Proxy{}, real: map[uint64][2]string{}, lease: lease, grace: grace}
	// The test's own clients are one process too.
	c.procs.Set("test", os.Getpid())
	var peers []string
	for id := uint64(1); id <= uint64(n); id++ {
		raft, client := freeLoopbackPort(t), freeLoopbackPort(t)
		c.real[id] = [2]string{raft, client}
		c.raft[id] = startNetProxy(t, raft, c.procs)
		c.client[id] = startNetProxy(t, client, c.procs)
		peers = append(peers, fmt.Sprintf("%d=%s/%s", id, c.raft[id].Addr(), c.client[id].Addr()))
	}
	c.peers = strings.Join(peers, ",")
	for id := uint64(1); id <= uint64(n); id++ {
		c.start(id)
	}
	return c
}

// startNetProxy starts a proxy in front of target that names sources
// with procs (if not nil), and closes it when the test ends (after the
// processes, which were started later).
func startNetProxy(t *testing.T, target string, procs *netfault.Processes) *netfault.Proxy {
	t.Helper()
	opts := netfault.Options{Target: target}
	if procs != nil {
		opts.Source = procs.Source
	}
	p, err := netfault.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return p
}

// replicaName is a replica's source name.
func replicaName(id uint64) string { return fmt.Sprintf("chubby%d", id) }

func (c *netCell) start(id uint64) {
	c.t.Helper()
	cmd, _, _ := startProcessLine(c.t, c.bin, "clients:", "chubby", "-id", fmt.Sprint(id), "-peers", c.peers,
		"-listen", c.real[id][1], "-raft-listen", c.real[id][0], "-data", filepath.Join(c.dir, fmt.Sprint(id)),
		"-lease", c.lease, "-grace", c.grace, "-rtt", "10ms")
	c.procs.Set(replicaName(id), cmd.Process.Pid)
}

// addrs is the cell's client addresses (the proxies), for -chubby.
func (c *netCell) addrs() string {
	var a []string
	for id := uint64(1); id <= uint64(len(c.client)); id++ {
		a = append(a, c.client[id].Addr())
	}
	return strings.Join(a, ",")
}

// isolate applies f to every connection source makes to the cell's
// client ports: source is cut off from the cell, and nobody else is.
func (c *netCell) isolate(source string, f netfault.Fault) {
	for _, p := range c.client {
		p.SetFor(source, f)
	}
}

// netServer is a tablet server whose data port is behind a proxy: its
// -advertise address.
type netServer struct {
	*procServer
	name  string
	proxy *netfault.Proxy
}

// startNetServer starts tablet server name against the cell and the dfs
// under dir, reached through a proxy, and adds it to pc.
func startNetServer(t *testing.T, pc *procCluster, cell *netCell, name string) *netServer {
	t.Helper()
	listen := freeLoopbackPort(t)
	proxy := startNetProxy(t, listen, cell.procs)
	cmd, out, line := startProcessLine(t, pc.bin, "serving on", "tabletserver", "-id", name, "-listen", listen,
		"-advertise", proxy.Addr(), "-chubby", cell.addrs(), "-dfs", filepath.Join(pc.dir, "dfs"))
	cell.procs.Set(name, cmd.Process.Pid)
	path := registeredAs(t, line)
	s := &procServer{cmd: cmd, out: out, id: path[strings.LastIndex(path, "/")+1:], addr: proxy.Addr()}
	pc.servers[s.id] = s
	return &netServer{procServer: s, name: name, proxy: proxy}
}

// TestTabletServerPartitionedFromChubby cuts a tablet server off from the
// Chubby cell only, through the proxy in front of the cell's client port,
// while 8 Bigtable API clients run the per-row register workload of
// register_test.go through a gateway. The
// server still reaches its clients and the dfs. Three faults, each on the
// server that serves the rows then: a partition, a reset of its
// connections (new ones refused), and a one-way fault that loses the
// cell's replies. Each time the server must stop serving when its session
// lease runs out (fencing), before the master, which sees its session
// expire, has the tablet loaded elsewhere; once the fault heals the server
// finds its file gone and exits, a new server started under its name
// joins, and full service is back within the stated bound. The rows stay
// linearizable throughout, so no acknowledged write is lost.
func TestTabletServerPartitionedFromChubby(t *testing.T) {
	seed := chaos.Seed(t, 9)
	const (
		// The longest the clients may go without an acknowledgement:
		// the lease (3s) runs out, the master's session expiry, the
		// reassignment and the log recovery, with room for a loaded
		// machine.
		unavailabilityBound = 20 * time.Second
		// From the heal to full service: the fenced server has exited,
		// its successor serves, and every row answers.
		recoveryBound = 30 * time.Second
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildCellar(t)
	cell := startNetCell(t, bin, 1, "3s", "3s")
	pc := &procCluster{t: t, bin: bin, dir: cell.dir, chubby: cell.addrs(), servers: map[string]*procServer{}}
	status := freeLoopbackPort(t)
	master, _, _ := startProcessLine(t, bin, "active master", "master", "-listen", status, "-rpc", freeLoopbackPort(t),
		"-chubby", cell.addrs(), "-scan-interval", "100ms", "-dfs", filepath.Join(pc.dir, "dfs"))
	cell.procs.Set("master", master.Process.Pid)
	pc.masters = append(pc.masters, &procMaster{cmd: master, status: status})
	servers := map[string]*netServer{}
	for i := 1; i <= 3; i++ {
		s := startNetServer(t, pc, cell, fmt.Sprintf("ts%d", i))
		servers[s.id] = s
	}
	gw, _, line := startProcessLine(t, bin, "BIGTABLE_EMULATOR_HOST=", "gateway", "-chubby", cell.addrs(), "-pgwire=",
		"-bigtable", "127.0.0.1:0", "-users", filepath.Join(pc.dir, "users.json"))
	cell.procs.Set("gateway", gw.Process.Pid)
	t.Setenv("BIGTABLE_EMULATOR_HOST", strings.Fields(line[strings.Index(line, "BIGTABLE_EMULATOR_HOST=")+len("BIGTABLE_EMULATOR_HOST="):])[0])
	eventually(t, "the master to see the servers", func() bool { return len(pc.view(pc.masters[0])) == 3 })
	pc.createTable(ctx, "reg", "")

	rows := []string{"r0", "r1", "r2", "r3", "r4", "r5"}
	load := startRegisterLoad(ctx, t, "reg", rows, 8, seed)
	defer load.end()
	time.Sleep(5 * time.Second)

	faults := []struct {
		name  string
		fault netfault.Fault
		// bound is the longest the rows may go without an
		// acknowledgement after the cut.
		bound time.Duration
	}{
		{"partition", netfault.Partition, unavailabilityBound},
		{"reset (connections reset, new ones refused)", netfault.Reset, unavailabilityBound},
		// The server's calls still reach the cell, but no answer comes
		// back.
		{"one-way (the cell's replies lost)", netfault.OneWay(true), unavailabilityBound},
	}
	client, err := bigtable.NewClient(ctx, "p", "i")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, f := range faults {
		victim := servers[pc.busiest(pc.masters[0], func(tables []string) bool { return slices.Contains(tables, "reg") }).id]
		t.Logf("%s: cut %s (%s) off from the Chubby cell", f.name, victim.name, victim.id)
		// The rule must catch the server's live connections, also those
		// made before its pid was known.
		if open := cell.client[1].Open(); open[victim.name] == 0 {
			t.Fatalf("the proxy sees no connection of %s to cut: %v", victim.name, open)
		}
		cut := time.Now()
		cell.isolate(victim.name, f.fault)
		bury := 30*time.Second + f.bound
		deadline := time.Now().Add(bury)
		for {
			if _, ok := pc.view(pc.masters[0])[victim.id]; !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the master did not bury the cut-off server within %v", f.name, bury)
			}
			time.Sleep(50 * time.Millisecond)
		}
		buried := time.Now()
		eventually(t, "the rows' tablet on another server", func() bool {
			for id, tables := range pc.view(pc.masters[0]) {
				if id != victim.id && slices.Contains(tables, "reg") {
					return true
				}
			}
			return false
		})
		acked := func() int { load.mu.Lock(); defer load.mu.Unlock(); return load.acked }
		before := acked()
		eventually(t, "acknowledgements from the new server", func() bool { return acked() > before+50 })

		cell.isolate(victim.name, netfault.Heal)
		healed := time.Now()
		exited := make(chan []byte, 1)
		go func() {
			rest, _ := io.ReadAll(victim.out) // to its exit
			victim.cmd.Wait()
			exited <- rest
		}()
		select {
		case <-exited:
		case <-time.After(recoveryBound):
			t.Fatalf("%s: the fenced server did not exit within %v of the heal", f.name, recoveryBound)
		}
		delete(pc.servers, victim.id)
		delete(servers, victim.id)
		cell.procs.Remove(victim.cmd.Process.Pid)
		// Serving intervals, from the servers' logs: the cut-off server
		// stopped serving before the tablet was loaded elsewhere.
		since := regexp.MustCompile(`msg="lost its lock; not serving" .*since=(\S+)`).FindSubmatch(victim.out.All())
		if since == nil {
			t.Fatalf("%s: the cut-off server logged no end of serving", f.name)
		}
		var loadedAt string
		for _, s := range pc.servers {
			if m := regexp.MustCompile(`msg="loaded tablet" .* table=reg event="recovered from dead server ` + regexp.QuoteMeta(victim.id) + `" since=(\S+)`).FindSubmatch(s.out.All()); m != nil {
				loadedAt = string(m[1])
			}
		}
		if loadedAt == "" || string(since[1]) >= loadedAt {
			t.Fatalf("%s: serving intervals overlap: the cut-off server served until %s, the tablet was loaded elsewhere at %q", f.name, since[1], loadedAt)
		}

		// Full service: a new server under the victim's name joins and
		// every row answers.
		successor := startNetServer(t, pc, cell, victim.name)
		servers[successor.id] = successor
		eventually(t, "the master to see three servers again", func() bool { return len(pc.view(pc.masters[0])) == 3 })
		for _, row := range rows {
			rctx, rcancel := context.WithTimeout(ctx, recoveryBound)
			_, err := client.Open("reg").ReadRow(rctx, row)
			rcancel()
			if err != nil {
				t.Fatalf("%s: row %s after the heal: %v", f.name, row, err)
			}
		}
		recovered := time.Since(healed)
		if recovered > recoveryBound {
			t.Fatalf("%s: full service came back %v after the heal, more than %v", f.name, recovered, recoveryBound)
		}
		window, began := load.longestGap(cut, time.Now())
		line := fmt.Sprintf("%s: healed after %v; buried after %v; stopped serving at %s, tablet loaded elsewhere at %s; unavailability %v from %v after the cut; full service %v after the heal",
			f.name, healed.Sub(cut).Round(time.Millisecond), buried.Sub(cut).Round(time.Millisecond), since[1], loadedAt,
			window.Round(time.Millisecond), began.Sub(cut).Round(time.Millisecond), recovered.Round(time.Millisecond))
		t.Log(line)
		if window > f.bound {
			t.Fatalf("%s: the rows were unavailable for %v, more than %v", f.name, window, f.bound)
		}
		time.Sleep(2 * time.Second)
	}
	load.end()

	res := load.check(t)
	window, _ := load.longestGap(time.Time{}, time.Time{})
	t.Logf("%d operations attempted, %d acknowledged, %d unknown; faults: %d (a tablet server cut off from Chubby: %s); linearizable: %v (no acknowledged write lost); longest unavailability %v",
		load.attempted, load.acked, load.unknown, len(faults), strings.Join(func() []string {
			var names []string
			for _, f := range faults {
				names = append(names, f.name)
			}
			return names
		}(), ", "), res, window.Round(time.Millisecond))
	if load.acked < 100 {
		t.Fatalf("only %d operations were acknowledged", load.acked)
	}
}
