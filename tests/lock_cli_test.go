package tests

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lockCLI runs "cellar lock ..." against a demo's cell, with the address
// from the environment as a user would set it, and returns its output.
func lockCLI(t *testing.T, bin, addr, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"lock"}, args...)...)
	cmd.Env = append(os.Environ(), "CELLAR_CHUBBY_ADDR="+addr)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLockCLIAgainstDemo drives the namespace through "cellar lock"
// against a running "cellar demo": browse, write, compare-and-swap, read,
// delete, and hold a lock until Ctrl-C while another process is refused.
func TestLockCLIAgainstDemo(t *testing.T) {
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, err := lockCLI(t, bin, d.chubby, stdin, args...)
		if err != nil {
			t.Fatalf("cellar lock %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	mustFail := func(want string, args ...string) {
		t.Helper()
		out, err := lockCLI(t, bin, d.chubby, "", args...)
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("cellar lock %s: want failure with %q, got %v\n%s", strings.Join(args, " "), want, err, out)
		}
	}

	if out := must("", "ls", "/ls/local/"); out != "acl/\ncellar/\n" {
		t.Fatalf("ls of a new cell: %q", out)
	}
	must("", "mkdir", "-p", "/ls/local/app/jobs")
	must("", "put", "/ls/local/app/config", "tablet-1")
	must("from stdin\n", "put", "/ls/local/app/jobs/ts1")
	if out := must("", "cat", "/ls/local/app/jobs/ts1"); out != "from stdin\n" {
		t.Fatalf("cat: %q", out)
	}
	if out := must("", "ls", "-l", "/ls/local/app"); !strings.Contains(out, "config") || !strings.Contains(out, "jobs/") {
		t.Fatalf("ls -l: %q", out)
	}
	stat := must("", "stat", "/ls/cellar/app/config")
	for _, want := range []string{"kind:               file", "length:             8", "content generation: 1"} {
		if !strings.Contains(stat, want) {
			t.Fatalf("stat lacks %q:\n%s", want, stat)
		}
	}
	must("", "put", "-if-generation", "1", "/ls/local/app/config", "tablet-2")
	mustFail("generation", "put", "-if-generation", "1", "/ls/local/app/config", "tablet-3")
	mustFail("exists", "put", "-if-generation", "0", "/ls/local/app/config", "tablet-3")
	if out := must("", "cat", "/ls/local/app/config"); out != "tablet-2" {
		t.Fatalf("cat after compare-and-swap: %q", out)
	}
	mustFail("not-found", "cat", "/ls/local/nope")
	mustFail("not-empty", "rm", "/ls/local/app")
	mustFail("cell", "ls", "/ls/othercell/")

	// acquire holds the lock until Ctrl-C.
	holder := exec.Command(bin, "lock", "acquire", "-addr", d.chubby, "/ls/local/cellar/demo-lock")
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	lines := bufio.NewReader(out)
	line, err := lines.ReadString('\n')
	if err != nil || !strings.Contains(line, "holding the exclusive lock on /ls/cellar/cellar/demo-lock") {
		t.Fatalf("acquire: %q %v", line, err)
	}
	mustFail("locked by another session", "acquire", "-try", "/ls/local/cellar/demo-lock")
	if out := must("", "stat", "/ls/local/cellar/demo-lock"); !strings.Contains(out, "exclusive") {
		t.Fatalf("stat does not show the lock:\n%s", out)
	}
	holder.Process.Signal(syscall.SIGINT)
	rest, _ := bufio.NewReader(lines).ReadString(0)
	if err := holder.Wait(); err != nil || !strings.Contains(rest, "released") {
		t.Fatalf("acquire after Ctrl-C: %v\n%s", err, rest)
	}
	// Released: the node shows no holder.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(must("", "stat", "/ls/local/cellar/demo-lock"), "exclusive") {
		if time.Now().After(deadline) {
			t.Fatal("the lock is still held after the holder released it")
		}
		time.Sleep(50 * time.Millisecond)
	}
	must("", "rm", "/ls/local/cellar/demo-lock")
	d.stop(t)
}

// TestDemoCellSurvivesRestart runs the demo with a three-replica cell,
// writes through the CLI, restarts the demo on the same data directory and
// reads the file back.
func TestDemoCellSurvivesRestart(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	d := startDemo(t, bin, data, "-chubby-replicas", "3")
	if out, err := lockCLI(t, bin, d.chubby, "", "put", "/ls/local/kept", "across restarts"); err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	d.stop(t)

	wrong := exec.Command(bin, "demo", "-data", data, "-http", "127.0.0.1:0", "-chubby", "127.0.0.1:0", "-tabletserver", "127.0.0.1:0", "-master", "127.0.0.1:0")
	if msg, err := wrong.CombinedOutput(); err == nil || !strings.Contains(string(msg), "-chubby-replicas 3") {
		t.Fatalf("restart with another cell size: %v\n%s", err, msg)
	}

	d = startDemo(t, bin, data, "-chubby-replicas", "3")
	out, err := lockCLI(t, bin, d.chubby, "", "cat", "/ls/local/kept")
	if err != nil || out != "across restarts" {
		t.Fatalf("cat after restart: %v %q", err, out)
	}
	d.stop(t)
}

// TestTableAndKVCLIAgainstDemo creates a table through the demo's master
// and writes, reads and scans rows through the client library, all from
// the command line.
func TestTableAndKVCLIAgainstDemo(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	d := startDemo(t, bin, data)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args[:2:2], append([]string{"-chubby", d.chubby}, args[2:]...)...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cellar %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("table", "create", "-splits", "m", "users", "profile", "stats")
	if out := run("table", "ls"); out != "users\tprofile,stats\n" {
		t.Fatalf("table ls: %q", out)
	}
	for _, r := range [][2]string{{"alice", "Alice"}, {"nick", "Nick"}, {"zoe", "Zoe"}} {
		run("kv", "put", "users", r[0], "profile:name", r[1])
	}
	if out := run("kv", "get", "users", "nick"); !strings.Contains(out, "nick\tprofile:name\t@") || !strings.HasSuffix(out, "\tNick\n") {
		t.Fatalf("kv get: %q", out)
	}
	out := run("kv", "scan", "users")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "zoe\t") {
		t.Fatalf("kv scan: %q", out)
	}
	bad := exec.Command(bin, "kv", "put", "-chubby", d.chubby, "users", "x", "nofamily:q", "v")
	if msg, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(msg), "nofamily") {
		t.Fatalf("a put to an unknown family: %v %s", err, msg)
	}

	// Schema changes: a family added takes writes; a family dropped takes
	// its data with it.
	run("table", "alter", "users", "profile", "extra")
	run("kv", "put", "users", "alice", "extra:x", "1")
	if out := run("kv", "get", "users", "alice"); !strings.Contains(out, "extra:x") {
		t.Fatalf("kv get after adding a family: %q", out)
	}
	if msg, err := exec.Command(bin, "kv", "put", "-chubby", d.chubby, "users", "x", "stats:n", "1").CombinedOutput(); err == nil {
		t.Fatalf("a put to a dropped family succeeded: %s", msg)
	}
	run("table", "create", "scratch", "f")
	run("kv", "put", "scratch", "r", "f:q", "v")
	run("table", "drop", "scratch")
	if out := run("table", "ls"); out != "users\tprofile,extra\n" {
		t.Fatalf("table ls after alter and drop: %q", out)
	}
	if msg, err := exec.Command(bin, "kv", "get", "-chubby", d.chubby, "scratch", "r").CombinedOutput(); err == nil || !strings.Contains(string(msg), "not found") {
		t.Fatalf("reading a dropped table: %v %s", err, msg)
	}

	// The data survives a restart of the demo: the new run's master buries
	// the old servers and recovers their tablets.
	d.stop(t)
	d = startDemo(t, bin, data)
	if out := run("kv", "scan", "users"); !strings.Contains(out, "zoe\tprofile:name") || !strings.Contains(out, "alice\textra:x") {
		t.Fatalf("kv scan after a restart: %q", out)
	}
	d.stop(t)
}

// TestDemoKeepsAcknowledgedRowsAfterKill9 kills the demo with SIGKILL after
// acknowledged writes that no flush has covered, starts it again on the
// same data, and reads them back: the new run's master buries the old
// tablet servers once their sessions lapse and recovers their tablets from
// their logs.
func TestDemoKeepsAcknowledgedRowsAfterKill9(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	d := startDemo(t, bin, data)
	run := func(d *demo, args ...string) (string, error) {
		cmd := exec.Command(bin, append(args[:2:2], append([]string{"-chubby", d.chubby, "-timeout", "60s"}, args[2:]...)...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(d, "table", "create", "-splits", "m", "t", "f"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, row := range []string{"apple", "kiwi", "mango", "zucchini"} {
		if out, err := run(d, "kv", "put", "t", row, "f:q", "value-"+row); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	d.cmd.Process.Kill()
	d.cmd.Wait()
	d = startDemo(t, bin, data)
	defer d.stop(t)
	out, err := run(d, "kv", "scan", "t")
	if err != nil {
		t.Fatalf("scan after kill -9: %v\n%s", err, out)
	}
	for _, row := range []string{"apple", "kiwi", "mango", "zucchini"} {
		if !strings.Contains(out, row+"\tf:q\t") || !strings.Contains(out, "value-"+row) {
			t.Fatalf("row %s is missing after kill -9:\n%s", row, out)
		}
	}
}
