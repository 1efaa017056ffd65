package tests

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDemoLocksItsDataDirectory: a second cellar demo on the same data
// directory exits at once with an error that names the holder, before it
// opens anything; the lock dies with its process, so after a kill -9 the
// next demo starts. SIGTERM stops it cleanly.
func TestDemoLocksItsDataDirectory(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	first := startDemo(t, bin, data)

	start := time.Now()
	second := exec.Command(bin, "demo", "-data", data, "-http", "127.0.0.1:0", "-chubby", "127.0.0.1:0",
		"-tabletserver", "127.0.0.1:0", "-master", "127.0.0.1:0", "-pgwire", "127.0.0.1:0", "-bigtable", "127.0.0.1:0")
	out, err := second.CombinedOutput()
	want := fmt.Sprintf("%s is in use by another cellar demo (pid %d)", data, first.cmd.Process.Pid)
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("second demo: %v\n%s\nwant %q", err, out, want)
	}
	if strings.Contains(string(out), "msg=") || time.Since(start) > 10*time.Second {
		t.Fatalf("the second demo started something before it failed (%v):\n%s", time.Since(start), out)
	}
	if b, err := os.ReadFile(filepath.Join(data, "LOCK")); err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(first.cmd.Process.Pid) {
		t.Fatalf("LOCK holds %q (%v), not the first demo's pid", b, err)
	}

	// A crash leaves the file but not the lock.
	first.cmd.Process.Kill()
	first.cmd.Wait()
	third := startDemo(t, bin, data)
	if code, body := third.get(t, "/healthz"); code != 200 || body != "ok" {
		t.Fatalf("/healthz of the demo after the crash: %d %q", code, body)
	}
	// SIGTERM stops the demo as cleanly as Ctrl-C.
	third.cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(third.lines)
	if err := third.cmd.Wait(); err != nil || !strings.Contains(string(rest), "stopped cleanly") {
		t.Fatalf("after SIGTERM: %v\n%s\nstderr: %s", err, rest, third.stderr.String())
	}
}
