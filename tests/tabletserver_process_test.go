package tests

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startProcess starts a cellar command and waits for a line of its
// output that contains ready.
func startProcess(t *testing.T, bin, ready string, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd, r, _ := startProcessLine(t, bin, ready, args...)
	return cmd, r.Reader
}

// procReader reads a process's output from where startProcessLine left
// it; All returns all of it so far.
type procReader struct {
	*bufio.Reader
	o *procOutput
}

func (r *procReader) All() []byte {
	r.o.mu.Lock()
	defer r.o.mu.Unlock()
	return bytes.Clone(r.o.all.Bytes())
}

// startProcessLine is startProcess that also returns the ready line. The
// process's output is read to its end in the background, so that a busy
// process never blocks on a full pipe; the returned reader replays it, and
// a failed test logs its tail.
func startProcessLine(t *testing.T, bin, ready string, args ...string) (*exec.Cmd, *procReader, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	pipe, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &procOutput{}
	out.cond = sync.NewCond(&out.mu)
	go out.fill(pipe)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			out.mu.Lock()
			lines := strings.Split(out.all.String(), "\n")
			out.mu.Unlock()
			t.Logf("last output of cellar %s:\n%s", strings.Join(args, " "), strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s exited before %q: %v", args[0], ready, err)
		}
		if strings.Contains(line, ready) {
			return cmd, &procReader{r, out}, line
		}
	}
}

// procOutput keeps a process's output and serves it to one reader.
type procOutput struct {
	mu   sync.Mutex
	cond *sync.Cond
	all  bytes.Buffer
	read int
	done bool
}

func (o *procOutput) fill(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		o.mu.Lock()
		o.all.Write(buf[:n])
		if err != nil {
			o.done = true
		}
		o.cond.Broadcast()
		o.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (o *procOutput) Read(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.read == o.all.Len() && !o.done {
		o.cond.Wait()
	}
	if o.read == o.all.Len() {
		return 0, io.EOF
	}
	n := copy(p, o.all.Bytes()[o.read:])
	o.read += n
	return n, nil
}

// registeredAs returns the lock file a tablet server's ready line names.
func registeredAs(t *testing.T, line string) string {
	t.Helper()
	_, path, ok := strings.Cut(strings.TrimSpace(line), "registered as ")
	if !ok {
		t.Fatalf("no registration in %q", line)
	}
	return path
}

// TestTabletServerRegistersAndFences runs "cellar tabletserver" against a
// one-replica "cellar chubby" with a short lease. The server registers a
// locked file named after this run; stopped past its lease it loses the
// lock, and when it runs again it takes the lock back because its file
// still exists; once the file is deleted it exits; a clean stop releases
// the lock.
func TestTabletServerRegistersAndFences(t *testing.T) {
	bin := buildCellar(t)
	dir := t.TempDir()
	chubby := freeLoopbackPort(t)
	startProcess(t, bin, "clients:", "chubby", "-id", "1", "-peers", "1="+freeLoopbackPort(t)+"/"+chubby,
		"-data", filepath.Join(dir, "chubby"), "-lease", "2s", "-grace", "2s", "-rtt", "10ms")
	var file string
	lockState := func() string {
		out, err := lockCLI(t, bin, chubby, "", "stat", file)
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
		cmd, r, line := startProcessLine(t, bin, "serving on", "tabletserver", "-id", "ts1", "-listen", "127.0.0.1:0",
			"-chubby", chubby, "-dfs", filepath.Join(dir, "dfs"))
		file = registeredAs(t, line)
		if !strings.HasPrefix(file, "/ls/local/cellar/servers/ts1-") {
			t.Fatalf("registered as %q", file)
		}
		return cmd, r.Reader
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
	if msg, err := lockCLI(t, bin, chubby, "", "rm", file); err != nil {
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
