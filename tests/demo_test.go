package tests

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildCellar builds the cellar binary into a temporary directory.
func buildCellar(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cellar")
	cmd := exec.Command("go", "build", "-o", bin, "./ops/cmd/cellar")
	cmd.Dir = moduleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestDemoStartsServesAndStopsCleanly runs "cellar demo" as a user would:
// it prints where it listens, answers /healthz, refuses a second instance
// on the same data directory, and stops cleanly on Ctrl-C.
func TestDemoStartsServesAndStopsCleanly(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	cmd := exec.Command(bin, "demo", "-data", data, "-http", "127.0.0.1:0")
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewReader(out)
	addr := regexp.MustCompile(`http://([0-9.:]+)/`)
	var url string
	deadline := time.Now().Add(30 * time.Second)
	for url == "" && time.Now().Before(deadline) {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("demo exited early: %v; stderr: %s", err, stderr.String())
		}
		if m := addr.FindStringSubmatch(line); m != nil {
			url = "http://" + m[1]
		}
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "ok" {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}

	second := exec.Command(bin, "demo", "-data", data, "-http", "127.0.0.1:0")
	msg, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "in use") {
		t.Fatalf("second demo on the same data: %v\n%s", err, msg)
	}

	cmd.Process.Signal(syscall.SIGINT)
	rest, _ := io.ReadAll(lines)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "stopped cleanly") {
		t.Fatalf("after Ctrl-C: %v\n%s\nstderr: %s", err, rest, stderr.String())
	}
}
