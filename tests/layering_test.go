// Package tests holds cellar's end-to-end suites. This file checks that the
// packages import only what DESIGN.md section 2 allows, so the layering
// stays true as the code grows.
package tests

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/cellardb/cellar"

// pebble may be imported only by the separate module tests/bench: dragonboat
// pins an old Pebble, and a newer one breaks its build. (Spelled in two
// parts so that a text search for imports of it does not find this file.)
const pebble = "github.com/cockroachdb" + "/pebble"

// onlyFrom maps a package of the module to the package trees that alone
// may import it: a front door is wired into the binary by ops, and
// nothing below it may reach up into one.
var onlyFrom = map[string][]string{
	"kv/bigtableapi": {"ops/", "tests"},
}

// allowed maps a package (or, ending in "/...", a package tree) to the
// non-standard imports it may have. A "/..." entry allows a tree. Packages
// of the module not listed here may import nothing of the module yet; add
// them with their rule from DESIGN.md when they are created.
var allowed = map[string][]string{
	"kv/model":        {},
	"kv/dfs":          {},
	"kv/commitlog":    {"kv/dfs", "kv/model"},
	"kv/memtable":     {"kv/model"},
	"kv/sstable":      {"kv/dfs", "kv/model", "github.com/golang/snappy", "github.com/bits-and-blooms/bloom/v3"},
	"kv/tablet":       {"kv/model", "kv/dfs", "kv/commitlog", "kv/memtable", "kv/sstable"},
	"kv/tabletpb":     {"google.golang.org/grpc/...", "google.golang.org/protobuf/..."},
	"kv/tabletserver": {"kv/tablet", "kv/commitlog", "kv/dfs", "kv/model", "kv/tabletpb", "kv/client", "google.golang.org/grpc/..."},
	"kv/client":       {"kv/model", "kv/tabletpb", "google.golang.org/grpc/..."},
	"kv/master":       {"kv/client", "kv/dfs", "kv/model", "kv/tabletpb", "kv/masterpb", "google.golang.org/grpc/..."},
	"kv/masterpb":     {"google.golang.org/grpc/...", "google.golang.org/protobuf/..."},
	"coord":           {},
	"coord/coordpb":   {"coord", "google.golang.org/grpc/...", "google.golang.org/protobuf/..."},
	"coord/fsm":       {"coord", "coord/coordpb"},
	"coord/cell":      {"coord", "coord/coordpb", "coord/fsm", "github.com/lni/dragonboat/v4/...", "google.golang.org/grpc/...", "google.golang.org/protobuf/..."},
	"coord/client":    {"coord", "coord/coordpb", "google.golang.org/grpc/..."},
	"query/...":       {"query/...", "kv/model", "google.golang.org/protobuf/...", "github.com/pingcap/tidb/pkg/parser/...", "github.com/pganalyze/pg_query_go/v6/..."},
	"pgwire":          {"query/...", "github.com/jackc/pgx/v5/pgproto3", "github.com/xdg-go/scram"},
	"ops/...":         {"*"},
	"tests/...":       {"*"},
	// kv/bigtableapi: besides bigtablepb and adminpb, the message packages that adminpb's method signatures use (IAM, long-running operations).
	"kv/bigtableapi": {"kv/client", "kv/model", "cloud.google.com/go/bigtable/apiv2/bigtablepb", "cloud.google.com/go/bigtable/admin/apiv2/adminpb", "cloud.google.com/go/iam/apiv1/iampb", "cloud.google.com/go/longrunning/autogen/longrunningpb", "google.golang.org/grpc/...", "google.golang.org/protobuf/..."},
}

func moduleRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

func rulesFor(pkg string) ([]string, bool) {
	if r, ok := allowed[pkg]; ok {
		return r, true
	}
	for p, r := range allowed {
		if strings.HasSuffix(p, "/...") && strings.HasPrefix(pkg+"/", strings.TrimSuffix(p, "...")) {
			return r, true
		}
	}
	return nil, false
}

func permits(rules []string, imp string) bool {
	for _, r := range rules {
		if r == "*" {
			return true
		}
		full := r
		if strings.HasPrefix(r, "kv/") || strings.HasPrefix(r, "query") || r == "coord" || strings.HasPrefix(r, "coord/") || strings.HasPrefix(r, "pgwire") {
			full = module + "/" + r
		}
		if strings.HasSuffix(full, "/...") {
			base := strings.TrimSuffix(full, "/...")
			if imp == base || strings.HasPrefix(imp, base+"/") {
				return true
			}
		} else if imp == full {
			return true
		}
	}
	return false
}

func isStdlib(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

func TestImportLayering(t *testing.T) {
	// go test caches results by the files a test opens; "go list" runs in
	// another process, so touch every Go file here to make edits count.
	filepath.WalkDir(moduleRoot(t), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
			os.Stat(p)
		}
		return nil
	})
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module+"/")
		if pkg == module {
			pkg = ""
		}
		rules, known := rulesFor(pkg)
		for _, imp := range fields[1:] {
			if isStdlib(imp) {
				continue
			}
			if strings.HasPrefix(imp, module+"/ops") && !strings.HasPrefix(pkg, "ops") {
				t.Errorf("%s imports %s: nothing imports ops", pkg, imp)
			}
			if from, ok := onlyFrom[strings.TrimPrefix(imp, module+"/")]; ok {
				permitted := false
				for _, f := range from {
					permitted = permitted || strings.HasPrefix(pkg, f)
				}
				if !permitted {
					t.Errorf("%s imports %s, which only %v may import", pkg, imp, from)
				}
			}
			if strings.HasPrefix(imp, pebble) {
				t.Errorf("%s imports %s: pebble belongs only in tests/bench (it breaks dragonboat)", pkg, imp)
			}
			if !known {
				t.Errorf("%s has no import rule; add its DESIGN.md row to the table in this test (it imports %s)", pkg, imp)
				continue
			}
			if !permits(rules, imp) {
				t.Errorf("%s may not import %s (DESIGN.md section 2 allows %v)", pkg, imp, rules)
			}
		}
		checked++
	}
	if checked < 6 {
		t.Fatalf("only %d packages checked; go list output: %s", checked, out)
	}
}
