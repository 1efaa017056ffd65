package tests

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// handedOut are the ports freeLoopbackPort gave to the running test. A
// port is free again only once a process binds it, and a test picks
// several before it starts any, so without this two picks could return
// the same port (TestChaosClockSkew: "bind: address already in use").
var handedOut struct {
	sync.Mutex
	ports map[string]bool
}

// freeLoopbackPort returns a loopback address nobody listens on now and
// that it gave to no one else during the test, below Linux's ephemeral
// range so that no outgoing connection takes it first.
func freeLoopbackPort(t *testing.T) string {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[string]bool{}
	}
	for range 1000 {
		// 20000-25999: tests/chaos, which make test runs at the same
		// time, picks from 26000-31999, so the two never race for one.
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(6000))
		if handedOut.ports[addr] {
			continue
		}
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			handedOut.ports[addr] = true
			t.Cleanup(func() {
				handedOut.Lock()
				delete(handedOut.ports, addr)
				handedOut.Unlock()
			})
			return addr
		}
	}
	t.Fatal("no free port")
	return ""
}

// TestChubbyProcessesSurviveKill9 runs a three-replica cell as three
// "cellar chubby" processes, writes through the CLI, kills a replica and
// then all of them with SIGKILL, restarts them from their directories,
// and reads every acknowledged write back.
func TestChubbyProcessesSurviveKill9(t *testing.T) {
	bin := buildCellar(t)
	dir := t.TempDir()
	var peers []string
	var clients []string
	for id := 1; id <= 3; id++ {
		c := freeLoopbackPort(t)
		peers = append(peers, fmt.Sprintf("%d=%s/%s", id, freeLoopbackPort(t), c))
		clients = append(clients, c)
	}
	procs := map[int]*exec.Cmd{}
	start := func(id int) {
		cmd := exec.Command(bin, "chubby", "-id", fmt.Sprint(id), "-peers", strings.Join(peers, ","),
			"-data", filepath.Join(dir, fmt.Sprint(id)), "-lease", "2s", "-grace", "4s", "-rtt", "10ms")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[id] = cmd
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	kill := func(id int) {
		procs[id].Process.Kill()
		procs[id].Wait()
	}
	for id := 1; id <= 3; id++ {
		start(id)
	}
	addr := strings.Join(clients, ",")
	lock := func(args ...string) string {
		t.Helper()
		out, err := lockCLI(t, bin, addr, "", args...)
		if err != nil {
			t.Fatalf("cellar lock %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	for i := 0; i < 20; i++ {
		lock("put", fmt.Sprintf("/ls/local/f%02d", i), fmt.Sprint(i))
	}
	kill(1)
	for i := 20; i < 40; i++ {
		lock("put", fmt.Sprintf("/ls/local/f%02d", i), fmt.Sprint(i))
	}
	kill(2)
	kill(3)
	for id := 1; id <= 3; id++ {
		start(id)
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < 40; i++ {
		for {
			out, err := lockCLI(t, bin, addr, "", "cat", fmt.Sprintf("/ls/local/f%02d", i))
			if err == nil {
				if out != fmt.Sprint(i) {
					t.Fatalf("f%02d = %q after kill -9 and restart", i, out)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("f%02d after restart: %v\n%s", i, err, out)
			}
		}
	}
}
