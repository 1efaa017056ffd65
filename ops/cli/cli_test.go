package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, Env{Stdout: &out, Stderr: &errb, Version: "test"})
	return code, out.String(), errb.String()
}

// storeWithData writes a few rows through the storage engine and flushes
// them, so that the directory holds a commit log and an SSTable.
func storeWithData(t *testing.T) string {
	dir := t.TempDir()
	ctx := context.Background()
	s := tablet.New(dfs.NewLocal(dir), "", tablet.Options{})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	s.CreateTable(ctx, "t", model.Schema{Families: []model.Family{{Name: "f"}}}, nil)
	for i := 0; i < 100; i++ {
		m := &model.RowMutation{Row: []byte(fmt.Sprintf("row%03d", i)), Mutations: []model.Mutation{model.SetCell("f", []byte("q"), 1000, []byte("value"))}}
		if err := s.Apply(ctx, "t", m); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestVersionAndHelp(t *testing.T) {
	if code, out, _ := run("version"); code != 0 || out != "cellar test\n" {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, out, _ := run("help"); code != 0 || !strings.Contains(out, "sstable") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, errs := run("frobnicate"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errs)
	}
}

func TestSSTableDumpAndCheck(t *testing.T) {
	dir := storeWithData(t)
	files, _ := filepath.Glob(filepath.Join(dir, "sst", "*.sst"))
	if len(files) == 0 {
		t.Fatal("no SSTable written")
	}
	code, out, errs := run("sstable", "dump", "-values", files[0])
	if code != 0 || !strings.Contains(out, "row042") {
		t.Fatalf("dump: %d %q %q", code, out, errs)
	}
	if code, out, _ := run("sstable", "check", files[0]); code != 0 || !strings.Contains(out, "ok (100 entries") {
		t.Fatalf("check: %d %q", code, out)
	}
	data, _ := os.ReadFile(files[0])
	data[20] ^= 0xFF
	os.WriteFile(files[0], data, 0o644)
	code, _, errs = run("sstable", "check", files[0])
	if code != 1 || !strings.Contains(errs, files[0]) || !strings.Contains(errs, "offset") {
		t.Fatalf("check of a corrupt file: %d %q", code, errs)
	}
}

func TestLogDump(t *testing.T) {
	dir := storeWithData(t)
	code, out, errs := run("log", "dump", filepath.Join(dir, "log"))
	if code != 0 || !strings.Contains(out, `row="row007"`) || !strings.Contains(out, "set f:\"q\" @1000") {
		t.Fatalf("log dump: %d %q %q", code, out, errs)
	}
}

// TestEveryCommandHasHelp: -h and --help print a usage and exit 0, for
// every command and for the subcommands of those that have them; nothing
// starts.
func TestEveryCommandHasHelp(t *testing.T) {
	cmds := [][]string{{"help"}, {"version"}}
	for name := range commands() {
		if name != "help" && name != "version" {
			cmds = append(cmds, []string{name})
		}
	}
	cmds = append(cmds, []string{"cluster", "up"}, []string{"cluster", "down"}, []string{"cluster", "status"},
		[]string{"admin", "tablets"}, []string{"admin", "table", "create"}, []string{"admin", "split"},
		[]string{"admin", "move"}, []string{"admin", "merge"}, []string{"admin", "compact"}, []string{"admin", "user", "add"}, []string{"admin", "grant"},
		[]string{"table", "create"}, []string{"kv", "scan"}, []string{"sstable", "dump"}, []string{"log", "dump"}, []string{"lock", "ls"})
	for _, c := range cmds {
		for _, h := range []string{"-h", "--help"} {
			code, stdout, stderr := run(append(append([]string{}, c...), h)...)
			if code != 0 || !strings.Contains(strings.ToLower(stdout+stderr), "usage") && c[0] != "version" {
				t.Errorf("cellar %s %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(c, " "), h, code, stdout, stderr)
			}
		}
	}
}
