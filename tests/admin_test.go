package tests

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
)

// cliRun runs the cellar binary and returns its stdout, stderr and exit
// status.
func cliRun(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run cellar %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// adminCluster is a Chubby replica, a master that does not balance (so
// that the tablets stay where the test puts them) and two tablet servers,
// all separate processes.
type adminCluster struct {
	bin, chubby string
	servers     []string // registered ids
	kv          *kvclient.Client
}

func startAdminCluster(t *testing.T) *adminCluster {
	t.Helper()
	c := &adminCluster{bin: buildCellar(t), chubby: freeLoopbackPort(t)}
	dir := t.TempDir()
	startProcess(t, c.bin, "clients:", "chubby", "-id", "1", "-peers", "1="+freeLoopbackPort(t)+"/"+c.chubby,
		"-data", filepath.Join(dir, "chubby"), "-lease", "2s", "-grace", "2s", "-rtt", "10ms")
	startProcess(t, c.bin, "active master", "master", "-listen", freeLoopbackPort(t), "-rpc", freeLoopbackPort(t), "-chubby", c.chubby,
		"-scan-interval", "100ms", "-dfs", filepath.Join(dir, "dfs"), "-no-balance")
	for i := range 2 {
		_, _, line := startProcessLine(t, c.bin, "serving on", "tabletserver", "-id", fmt.Sprintf("ts%d", i+1), "-listen", "127.0.0.1:0",
			"-chubby", c.chubby, "-dfs", filepath.Join(dir, "dfs"))
		path := registeredAs(t, line)
		c.servers = append(c.servers, path[strings.LastIndex(path, "/")+1:])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := (&coordlock.Service{Client: coordclient.Options{Addrs: []string{c.chubby}, Principal: "test"}}).NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.kv = kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}})
	t.Cleanup(func() { c.kv.Close(); sess.Close(context.Background()) })
	return c
}

// admin runs cellar admin against the cluster.
func (c *adminCluster) admin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	// The cluster flags go after the subcommand's words.
	i := 1
	if args[0] == "table" {
		i = 2
	}
	full := append([]string{"admin"}, args[:i]...)
	full = append(full, "-chubby", c.chubby)
	return cliRun(t, c.bin, append(full, args[i:]...)...)
}

// mustAdmin is admin that fails the test unless the command succeeds.
func (c *adminCluster) mustAdmin(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := c.admin(t, args...)
	if code != 0 {
		t.Fatalf("cellar admin %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// tabletRows parses the listing of cellar admin tablets: TABLET, TABLE,
// START, END, SERVER, SIZE... per row.
func tabletRows(out string) [][]string {
	var rows [][]string
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if i == 0 || line == "" {
			continue
		}
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// TestAdminTablesAndTablets drives cellar admin as an operator would:
// tables with GC rules are created, described, altered and dropped; a
// table's tablets are listed, split (at a row and at the midpoint), moved
// to the other server and major-compacted, and the data stays intact;
// every command has -h; bad input gets exit 2 or 1 and a message that
// says what to do.
func TestAdminTablesAndTablets(t *testing.T) {
	c := startAdminCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	for _, args := range [][]string{{"admin", "-h"}, {"admin", "table", "-h"}, {"admin", "table", "create", "-h"}, {"admin", "table", "alter", "-h"},
		{"admin", "table", "drop", "-h"}, {"admin", "table", "describe", "-h"}, {"admin", "table", "ls", "-h"}, {"admin", "tablets", "-h"},
		{"admin", "split", "-h"}, {"admin", "move", "--help"}, {"admin", "merge", "-h"}, {"admin", "compact", "-h"}, {"load", "-h"}} {
		out, errOut, code := cliRun(t, c.bin, args...)
		if code != 0 || !strings.Contains(out, "usage") {
			t.Errorf("cellar %v: exit %d, want 0 with a usage\n%s%s", args, code, out, errOut)
		}
	}

	// Tables and families with GC rules.
	out := c.mustAdmin(t, "table", "create", "web", "contents=versions:3", "anchor=union(versions:2,age:30d)")
	if !strings.Contains(out, "created table web") {
		t.Fatalf("create: %s", out)
	}
	out = c.mustAdmin(t, "table", "describe", "web")
	for _, want := range []string{"contents  versions:3", "anchor    union(versions:2,age:30d)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	c.mustAdmin(t, "table", "alter", "-add", "meta=intersection(versions:1,age:12h)", "-gc", "contents=versions:1", "-drop", "anchor", "web")
	out = c.mustAdmin(t, "table", "describe", "web")
	if !strings.Contains(out, "meta      intersection(versions:1,age:12h)") || !strings.Contains(out, "contents  versions:1") || strings.Contains(out, "anchor") {
		t.Fatalf("describe after alter:\n%s", out)
	}
	if out := c.mustAdmin(t, "table", "ls"); !strings.Contains(out, "web    contents,meta") {
		t.Fatalf("ls:\n%s", out)
	}

	// Bad input: usage errors exit 2, failures 1, with what to do.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"table", "create", "t2", "f=versions:0"}, 2, "not a positive number"},
		{[]string{"table", "create", "t2", "f=union(versions:2"}, 2, "missing )"},
		{[]string{"table", "alter", "web"}, 2, "give -add, -drop or -gc"},
		{[]string{"table", "alter", "-drop", "nope", "web"}, 2, "the families are: contents, meta"},
		{[]string{"table", "describe", "nosuch"}, 1, `table "nosuch" does not exist; the tables are: web`},
		{[]string{"table", "create", "web", "f"}, 1, "already exists"},
		{[]string{"tablets", "nosuch"}, 1, "cellar admin table ls"},
		{[]string{"move", "notatablet"}, 2, "is not SERVER/ID"},
		{[]string{"move", "ts1/999"}, 1, "list them again with `cellar admin tablets`"},
		{[]string{"split", "nosuch", "k"}, 1, "does not exist"},
		{[]string{"merge", "nosuch"}, 1, "does not exist"},
		{[]string{"compact", "nosuch"}, 1, "does not exist"},
		{[]string{"frobnicate"}, 2, "usage"},
	} {
		out, errOut, code := c.admin(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("cellar admin %v: exit %d, stderr %q; want exit %d and %q (stdout %q)", tc.args, code, errOut, tc.code, tc.want, out)
		}
	}
	_, errOut, code := cliRun(t, c.bin, "admin", "tablets", "-chubby", freeLoopbackPort(t), "-timeout", "2s")
	if code != 1 || !strings.Contains(errOut, "Is the cluster running?") || !strings.Contains(errOut, "make run") {
		t.Errorf("admin tablets without a cluster: exit %d, %q", code, errOut)
	}

	// Rows enough for several SSTable blocks, so that a midpoint exists.
	const rows = 3000
	value := func(i, version int) []byte {
		return []byte(fmt.Sprintf("v%d-%05d-%s", version, i, strings.Repeat("x", 200)))
	}
	write := func(version int) {
		var ms []*model.RowMutation
		for i := range rows {
			ms = append(ms, &model.RowMutation{Row: []byte(fmt.Sprintf("k%05d", i)), Mutations: []model.Mutation{
				model.SetCell("contents", []byte("html"), model.ServerTimestamp, value(i, version))}})
		}
		for i, err := range c.kv.ApplyBulk(ctx, "web", ms) {
			if err != nil {
				t.Fatalf("write row %d: %v", i, err)
			}
		}
	}
	write(1)
	write(2)

	list := func() [][]string { return tabletRows(c.mustAdmin(t, "tablets", "web")) }
	if ts := list(); len(ts) != 1 || ts[0][1] != "web" || ts[0][2] != "<start>" || ts[0][3] != "<end>" {
		t.Fatalf("tablets of a new table: %v", ts)
	}
	out = c.mustAdmin(t, "split", "web")
	if !strings.Contains(out, "split web at k") {
		t.Fatalf("split at the midpoint: %s", out)
	}
	c.mustAdmin(t, "split", "web", "k02500")
	ts := list()
	if len(ts) != 3 || ts[2][2] != "k02500" || ts[0][3] != ts[1][2] {
		t.Fatalf("after two splits: %v", ts)
	}
	if out, errOut, code := c.admin(t, "split", "web", "k02500"); code != 1 || !strings.Contains(errOut, "already starts a tablet") {
		t.Fatalf("split at a boundary: exit %d %q %q", code, out, errOut)
	}

	// Move the middle tablet to the other server, by name.
	from := ts[1][0]
	other := c.servers[0]
	if strings.HasPrefix(from, other+"/") {
		other = c.servers[1]
	}
	otherName := other[:strings.LastIndex(other, "-")]
	out = c.mustAdmin(t, "move", from, otherName)
	if !strings.Contains(out, "moved tablet") || !strings.Contains(out, other) {
		t.Fatalf("move: %s", out)
	}
	ts = list()
	if len(ts) != 3 || !strings.HasPrefix(ts[1][0], other+"/") {
		t.Fatalf("after the move, the middle tablet is not on %s: %v", other, ts)
	}
	if _, errOut, code := c.admin(t, "move", ts[1][0], "nosuchserver"); code != 1 || !strings.Contains(errOut, "no live tablet server") {
		t.Fatalf("move to a bad server: exit %d %q", code, errOut)
	}
	if _, errOut, code := c.admin(t, "move", ts[1][0], other); code != 1 || !strings.Contains(errOut, "already on server") {
		t.Fatalf("move to its own server: exit %d %q", code, errOut)
	}
	// Moving with no server named picks the other one: back again.
	c.mustAdmin(t, "move", ts[1][0])
	if ts2 := list(); strings.HasPrefix(ts2[1][0], other+"/") {
		t.Fatalf("move to any other server left it on %s: %v", other, ts2)
	}

	// Major compaction of the table, then of one tablet; the rows are
	// intact, and the GC rule (one version) applies.
	out, errOut, code = c.admin(t, "compact", "web")
	if code != 0 || !strings.Contains(out, "compacted 3 tablets of web") || !strings.Contains(errOut, "compact web:") || !strings.Contains(errOut, "100%") {
		t.Fatalf("compact: exit %d\n%s%s", code, out, errOut)
	}
	ts = list()
	out = c.mustAdmin(t, "compact", "web", ts[0][0])
	if !strings.Contains(out, "compacted 1 tablets of web") {
		t.Fatalf("compact one tablet: %s", out)
	}
	checkRows := func(what string) {
		t.Helper()
		sc := c.kv.Scan(ctx, "web", model.RowRange{}, kvclient.Filter{}, 0)
		n := 0
		for sc.Next() {
			r := sc.Row()
			if want := fmt.Sprintf("k%05d", n); string(r.Key) != want || len(r.Cells) != 1 || !bytes.Equal(r.Cells[0].Value, value(n, 2)) {
				t.Fatalf("row %d after %s: %q with %d cells, want %s with one cell of version 2", n, what, r.Key, len(r.Cells), want)
			}
			n++
		}
		if err := sc.Err(); err != nil || n != rows {
			t.Fatalf("scan after %s: %d rows, %v", what, n, err)
		}
	}
	checkRows("the compaction")

	// Forced merges: the middle tablet goes to the other server first, so
	// that merging the first tablet with it moves one of the two.
	ts = list()
	c.mustAdmin(t, "move", ts[1][0], otherName)
	out = c.mustAdmin(t, "merge", "web", "k00000")
	if !strings.Contains(out, "first") || !strings.Contains(out, "merged web into [<start>, k02500)") {
		t.Fatalf("merge across servers: %s", out)
	}
	out = c.mustAdmin(t, "merge", "web")
	if !strings.Contains(out, "merged web into [<start>, <end>)") {
		t.Fatalf("merge of the first tablet: %s", out)
	}
	if ts := list(); len(ts) != 1 {
		t.Fatalf("tablets after two merges: %v", ts)
	}
	if _, errOut, code := c.admin(t, "merge", "web", "k00001"); code != 1 || !strings.Contains(errOut, "no right neighbour") {
		t.Fatalf("merge of the last tablet: exit %d %q", code, errOut)
	}
	checkRows("the merges")

	c.mustAdmin(t, "table", "drop", "web")
	if _, errOut, code := c.admin(t, "table", "describe", "web"); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("describe a dropped table: exit %d %q", code, errOut)
	}
	if _, errOut, code := c.admin(t, "table", "drop", "web"); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("drop a dropped table: exit %d %q", code, errOut)
	}
}
