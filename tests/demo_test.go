package tests

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// demo is a running "cellar demo".
type demo struct {
	cmd    *exec.Cmd
	lines  *bufio.Reader
	stderr *strings.Builder
	url    string // of the status pages
	chubby string // client address of the Chubby cell
	pg     string // the gateway's connection URL
	// bigtable is the Bigtable API's address, for BIGTABLE_EMULATOR_HOST.
	bigtable string
}

// startDemo starts "cellar demo" on free ports and reads its banner.
func startDemo(t *testing.T, bin, data string, extra ...string) *demo {
	t.Helper()
	args := append([]string{"demo", "-data", data, "-http", "127.0.0.1:0", "-chubby", "127.0.0.1:0", "-tabletserver", "127.0.0.1:0", "-master", "127.0.0.1:0", "-pgwire", "127.0.0.1:0", "-bigtable", "127.0.0.1:0"}, extra...)
	d := &demo{cmd: exec.Command(bin, args...), stderr: &strings.Builder{}}
	// The cluster tools (cellar table, kv, admin, load) and a cellar
	// gateway started against the demo's cell find the demo's secret here.
	t.Setenv("CELLAR_SECRET_FILE", filepath.Join(data, "secret"))
	t.Setenv("CELLAR_LOAD_SECRET_FILE", filepath.Join(data, "secret"))
	t.Setenv("CELLAR_GATEWAY_SECRET_FILE", filepath.Join(data, "secret"))
	out, _ := d.cmd.StdoutPipe()
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cmd.Process.Kill(); d.cmd.Wait() })
	d.lines = bufio.NewReader(out)
	httpRe := regexp.MustCompile(`http://([0-9.:]+)/`)
	chubbyRe := regexp.MustCompile(`clients on ([0-9.:]+)`)
	pgRe := regexp.MustCompile(`psql "(postgresql://[^"]+)"`)
	btRe := regexp.MustCompile(`BIGTABLE_EMULATOR_HOST=([0-9.:]+)`)
	deadline := time.Now().Add(60 * time.Second)
	for (d.url == "" || d.chubby == "" || d.pg == "" || d.bigtable == "") && time.Now().Before(deadline) {
		line, err := d.lines.ReadString('\n')
		if err != nil {
			t.Fatalf("demo exited early: %v; stderr: %s", err, d.stderr.String())
		}
		if m := httpRe.FindStringSubmatch(line); m != nil {
			d.url = "http://" + m[1]
		}
		if m := chubbyRe.FindStringSubmatch(line); m != nil {
			d.chubby = m[1]
		}
		if m := pgRe.FindStringSubmatch(line); m != nil {
			d.pg = m[1]
		}
		if m := btRe.FindStringSubmatch(line); m != nil {
			d.bigtable = m[1]
		}
	}
	if d.url == "" || d.chubby == "" || d.pg == "" || d.bigtable == "" {
		t.Fatalf("demo printed no addresses; stderr: %s", d.stderr.String())
	}
	return d
}

// get fetches a status path and returns the status code and body.
func (d *demo) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(d.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// pgxOnDemo starts a demo and connects pgx to its gateway, for a test of
// what a driver sees; the connection, the context and the demo end with
// the test.
func pgxOnDemo(t *testing.T) (context.Context, *demo, *pgx.Conn) {
	t.Helper()
	d := startDemo(t, buildCellar(t), t.TempDir())
	t.Cleanup(func() { d.stop(t) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return ctx, d, c
}

// stop sends Ctrl-C and checks that the demo stops cleanly.
func (d *demo) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGINT)
	rest, _ := io.ReadAll(d.lines)
	if err := d.cmd.Wait(); err != nil || !strings.Contains(string(rest), "stopped cleanly") {
		t.Fatalf("after Ctrl-C: %v\n%s\nstderr: %s", err, rest, d.stderr.String())
	}
}

// TestDemoStartsServesAndStopsCleanly runs "cellar demo" as a user would:
// it prints where it listens, answers /healthz, becomes ready once its
// Chubby cell has a master, refuses a second instance on the same data
// directory, and stops cleanly on Ctrl-C.
func TestDemoStartsServesAndStopsCleanly(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	d := startDemo(t, bin, data)
	if code, body := d.get(t, "/healthz"); code != 200 || body != "ok" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := d.get(t, "/readyz")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after 30s: %d %q", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	second := exec.Command(bin, "demo", "-data", data, "-http", "127.0.0.1:0", "-chubby", "127.0.0.1:0", "-tabletserver", "127.0.0.1:0", "-master", "127.0.0.1:0", "-pgwire", "127.0.0.1:0")
	msg, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "in use") {
		t.Fatalf("second demo on the same data: %v\n%s", err, msg)
	}
	// The demo's master sees its tablet server.
	if code, body := d.get(t, "/servers"); code != 200 || !strings.Contains(body, `"ID":"demo1-`) {
		t.Fatalf("/servers: %d %s", code, body)
	}
	d.stop(t)
}

// TestDemoRefusesBadGatewayOptions: an invalid gateway setting is a clear
// error before anything starts.
func TestDemoRefusesBadGatewayOptions(t *testing.T) {
	bin := buildCellar(t)
	out, err := exec.Command(bin, "demo", "-data", t.TempDir(), "-tls-required").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "TLS is required but no certificate is configured") || strings.Contains(string(out), "master for epoch") {
		t.Fatalf("demo -tls-required without a certificate: %v\n%s", err, out)
	}
}
