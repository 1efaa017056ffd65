package tests

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startProcess starts a cellar command and waits for a line of its
// output that contains ready.
func startProcess(t *testing.T, bin, ready string, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s exited before %q: %v", args[0], ready, err)
		}
		if strings.Contains(line, ready) {
			return cmd, r
		}
	}
}

// TestTabletServerRegistersAndFences runs "cellar tabletserver" against a
// one-replica "cellar chubby" with a short lease. The server registers a
// locked file; stopped past its lease it loses the lock, and when it runs
// again it takes the lock back because its file still exists; once the
// file is deleted it exits; a clean stop releases the lock.
func TestTabletServerRegistersAndFences(t *testing.T) {
	bin := buildCellar(t)
	dir := t.TempDir()
	chubby := freeLoopbackPort(t)
	startProcess(t, bin, "clients:", "chubby", "-id", "1", "-peers", "1="+freeLoopbackPort(t)+"/"+chubby,
		"-data", filepath.Join(dir, "chubby"), "-lease", "2s", "-grace", "2s", "-rtt", "10ms")
	lockState := func() string {
		out, err := lockCLI(t, bin, chubby, "", "stat", "/ls/local/cellar/servers/ts1")
		if err != nil {
			return "error: " + out
		}
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(line, "lock:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return out
	}
	waitLock := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for lockState() != want {
			if time.Now().After(deadline) {
				t.Fatalf("the server's lock is %q, want %q", lockState(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	start := func() (*exec.Cmd, *bufio.Reader) {
		return startProcess(t, bin, "serving on", "tabletserver", "-id", "ts1", "-listen", "127.0.0.1:0",
			"-chubby", chubby, "-data", filepath.Join(dir, "ts1"))
	}
	ts, out := start()
	waitLock("exclusive")

	// Paused past its lease, the server's session expires and the lock
	// frees; running again, it takes the lock back.
	ts.Process.Signal(syscall.SIGSTOP)
	waitLock("-")
	ts.Process.Signal(syscall.SIGCONT)
	waitLock("exclusive")

	// A clean stop releases the lock and leaves the file.
	ts.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(out)
	if err := ts.Wait(); err != nil || !strings.Contains(string(rest), "lock is released") {
		t.Fatalf("after SIGTERM: %v\n%s", err, rest)
	}
	if s := lockState(); s != "-" {
		t.Fatalf("after a clean stop the lock is %q", s)
	}

	// Deleting the file stops a running server.
	ts, out = start()
	waitLock("exclusive")
	if msg, err := lockCLI(t, bin, chubby, "", "rm", "/ls/local/cellar/servers/ts1"); err != nil {
		t.Fatalf("rm: %v %s", err, msg)
	}
	type exit struct {
		err  error
		rest []byte
	}
	done := make(chan exit, 1)
	go func() {
		rest, _ := io.ReadAll(out) // to EOF before Wait closes the pipe
		done <- exit{ts.Wait(), rest}
	}()
	select {
	case e := <-done:
		if e.err == nil || !strings.Contains(string(e.rest), "file is gone") {
			t.Fatalf("after its file was deleted: %v\n%s", e.err, e.rest)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit after its file was deleted")
	}
}
