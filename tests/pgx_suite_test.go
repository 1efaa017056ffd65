package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestPgxSuites runs pgx v5's own test suites, pgconn's (the protocol:
// startup, simple and extended queries, pipelines, cancel, COPY, errors,
// timeouts), the pgx package's (types, batches, transactions) and
// pgtype's, against a cellar demo, as pgx runs them against PostgreSQL.
// testdata/pgx_expected_failures lists the tests that fail on purpose,
// each with its reason: any other failure fails this test, and so does a
// listed test that passes, so that the list stays true. The suites come
// from the module cache (go.mod's pgx, its test dependencies fetched by
// scripts/deps.sh), and run in pgx's module, not cellar's.
func TestPgxSuites(t *testing.T) {
	expect := readPgxExpectations(t, filepath.Join("testdata", "pgx_expected_failures"))
	dir := pgxModuleDir(t)
	bin := buildCellar(t)
	data := t.TempDir()
	d := startDemo(t, bin, data)
	defer d.stop(t)

	// A SCRAM user, for the suites' password tests (loopback's user
	// cellar is trusted).
	add := exec.Command(bin, "admin", "user", "add", "pgx_scram")
	add.Env = append(add.Environ(), "CELLAR_ADMIN_CHUBBY="+d.chubby, "CELLAR_ADMIN_SECRET_FILE="+filepath.Join(data, "secret"))
	add.Stdin = strings.NewReader("pgx-scram-pw\n")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("cellar admin user add: %v\n%s", err, out)
	}
	url := d.pg + "?sslmode=disable"
	env := []string{
		"PGX_TEST_DATABASE=" + url,
		"PGX_TEST_TCP_CONN_STRING=" + url,
		"PGX_TEST_SCRAM_PASSWORD_CONN_STRING=" + strings.Replace(url, "cellar@", "pgx_scram:pgx-scram-pw@", 1),
	}
	for _, s := range []struct {
		pkg     string
		timeout time.Duration
	}{
		{"pgconn", 4 * time.Minute},
		{"pgx", 2 * time.Minute},
		{"pgtype", 2 * time.Minute},
	} {
		t.Run(s.pkg, func(t *testing.T) {
			runPgxSuite(t, dir, s.pkg, s.timeout, env, expect[s.pkg])
		})
	}
}

// pgxExpectation is a test of a pgx suite that fails (or, if skip, is not
// run) on purpose.
type pgxExpectation struct {
	skip   bool
	reason string
}

// readPgxExpectations reads the list: groups of "fail: reason" or "skip:
// reason" lines, each followed by the "package Test[/subtest]" lines it
// covers. A listed test covers its subtests.
func readPgxExpectations(t *testing.T, path string) map[string]map[string]pgxExpectation {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]pgxExpectation{}
	var cur *pgxExpectation
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "fail:"), strings.HasPrefix(line, "skip:"):
			kind, reason, _ := strings.Cut(line, ":")
			cur = &pgxExpectation{skip: kind == "skip", reason: strings.TrimSpace(reason)}
		default:
			pkg, name, ok := strings.Cut(line, " ")
			if !ok || cur == nil || strings.ContainsAny(name, " \t") {
				t.Fatalf("%s:%d: want \"package Test\" after a fail: or skip: line, not %q", path, n, line)
			}
			if cur.skip && strings.Contains(name, "/") {
				t.Fatalf("%s:%d: only whole tests can be skipped: %q", path, n, line)
			}
			if out[pkg] == nil {
				out[pkg] = map[string]pgxExpectation{}
			}
			if _, dup := out[pkg][name]; dup {
				t.Fatalf("%s:%d: %s %s is listed twice", path, n, pkg, name)
			}
			out[pkg][name] = *cur
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pgxModuleDir is where go.mod's pgx is in the module cache.
func pgxModuleDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/jackc/pgx/v5")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Fatalf("go list -m github.com/jackc/pgx/v5: %v %q (scripts/deps.sh downloads it)", err, out)
	}
	return dir
}

// runPgxSuite runs one package's tests in pgx's module and checks them
// against the expectations.
func runPgxSuite(t *testing.T, dir, pkg string, timeout time.Duration, env []string, expect map[string]pgxExpectation) {
	var skips []string
	for name, e := range expect {
		if e.skip {
			skips = append(skips, regexp.QuoteMeta(name))
		}
	}
	sort.Strings(skips)
	path := "./" + pkg
	if pkg == "pgx" {
		path = "."
	}
	// One test at a time: pgconn's cancel stress tests give the server
	// 1 s, which the suite's parallel load on two cores can exceed.
	args := []string{"test", "-count=1", "-json", "-parallel=1", "-timeout=" + timeout.String()}
	if len(skips) > 0 {
		args = append(args, "-skip=^("+strings.Join(skips, "|")+")$")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Minute) // and the build
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append(args, path)...)
	cmd.Dir = dir
	// The suites read PG* variables too; only the ones set here count.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("go %s (in %s): %v", strings.Join(append(args, path), " "), dir, time.Since(start).Round(time.Second))

	status := map[string]string{} // test → pass, fail or skip
	output := map[string]*strings.Builder{}
	var pkgOutput strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch {
		case ev.Test == "":
			if ev.Action == "output" {
				pkgOutput.WriteString(ev.Output)
			}
		case ev.Action == "output":
			if output[ev.Test] == nil {
				output[ev.Test] = &strings.Builder{}
			}
			output[ev.Test].WriteString(ev.Output)
		case ev.Action == "pass", ev.Action == "fail", ev.Action == "skip":
			status[ev.Test] = ev.Action
		}
	}
	if len(status) == 0 {
		var stderr []byte
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go test %s ran no tests: %v\n%s%s", path, err, pkgOutput.String(), stderr)
	}
	if strings.Contains(pkgOutput.String(), "panic: test timed out") {
		t.Errorf("the %s suite timed out:\n%s", pkg, tail(pkgOutput.String(), 40))
	}

	// listed: the test or a test it is a subtest of is on the list.
	listed := func(name string) (pgxExpectation, bool) {
		for {
			if e, ok := expect[name]; ok {
				return e, true
			}
			i := strings.LastIndex(name, "/")
			if i < 0 {
				return pgxExpectation{}, false
			}
			name = name[:i]
		}
	}
	counts := map[string]int{}
	var names []string
	for name := range status {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		counts[status[name]]++
		if status[name] != "fail" {
			continue
		}
		if _, ok := listed(name); ok {
			counts["expected"]++
			continue
		}
		// A test fails with its subtests: they are checked themselves.
		sub := false
		for other, s := range status {
			if s == "fail" && strings.HasPrefix(other, name+"/") {
				sub = true
				break
			}
		}
		if !sub {
			var o string
			if output[name] != nil {
				o = output[name].String()
			}
			t.Errorf("%s %s failed (not on testdata/pgx_expected_failures):\n%s", pkg, name, tail(o, 30))
		}
	}
	for name, e := range expect {
		if e.skip {
			if _, ran := status[name]; ran {
				t.Errorf("%s %s ran, though it is listed to be skipped", pkg, name)
			}
			continue
		}
		switch status[name] {
		case "fail":
		case "pass":
			t.Errorf("%s %s passes now: take it off testdata/pgx_expected_failures (it was listed because: %s)", pkg, name, e.reason)
		default:
			t.Errorf("%s %s is listed (%s) but did not run (%q): renamed, or skipped by the suite?", pkg, name, e.reason, status[name])
		}
	}
	t.Logf("%s: %d passed, %d failed (%d of them listed), %d skipped by the suite", pkg, counts["pass"], counts["fail"], counts["expected"], counts["skip"])
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
