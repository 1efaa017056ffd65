package pgeval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/cellardb/cellar/query/pgtypes"
)

// TestDataDriven runs the datadriven files in testdata (see ddFiles).
// Commands:
//
//	table name=t [ordered=0,1]   columns "name type, ..." then rows of COPY text
//	query [args=a|b] [explain] [analyze]
//	set name=value ...           session settings for the rest of the file
func TestDataDriven(t *testing.T) {
	files, err := ddFiles()
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cat := &memCatalog{rels: map[string]Relation{}}
			loadFixture(t, cat)
			env := testEnv(cat)
			datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
				switch d.Cmd {
				case "table":
					return defineTable(t, cat, d)
				case "query":
					var args []string
					explain := 0
					for _, a := range d.CmdArgs {
						switch a.Key {
						case "args":
							args = strings.Split(a.Vals[0], "|")
						case "explain":
							explain = 1
						case "analyze":
							explain = 2
						}
					}
					return runQuery(env, d.Input, args, explain)
				case "budget":
					var n int
					d.ScanArgs(t, "bytes", &n)
					env.SortBudget = int64(n)
					return ""
				case "set":
					setSettings(env, d)
					return ""
				}
				t.Fatalf("unknown command %s", d.Cmd)
				return ""
			})
		})
	}
}

func defineTable(t *testing.T, cat *memCatalog, d *datadriven.TestData) string {
	var name string
	d.ScanArgs(t, "name", &name)
	lines := strings.Split(d.Input, "\n")
	r := &memRel{}
	for _, c := range strings.Split(lines[0], ",") {
		f := strings.Fields(strings.TrimSpace(c))
		oid, ok := typeNames[strings.Join(f[1:], " ")]
		if !ok {
			t.Fatalf("unknown type in %q", c)
		}
		r.cols = append(r.cols, pgtypes.Column{Name: f[0], OID: oid})
	}
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		vals := strings.Split(l, "\t")
		row := make([]any, len(r.cols))
		for i := range r.cols {
			if i >= len(vals) || vals[i] == `\N` {
				continue
			}
			v, err := castText(vals[i], r.cols[i].OID, nil)
			if err != nil {
				t.Fatalf("value %q: %v", vals[i], err)
			}
			row[i] = v
		}
		r.rows = append(r.rows, row)
	}
	var rel Relation = r
	if d.HasArg("ordered") {
		var o string
		d.ScanArgs(t, "ordered", &o)
		for _, s := range strings.Split(o, ",") {
			r.ordering = append(r.ordering, int(s[0]-'0'))
		}
		rel = orderedRel{r}
	}
	cat.rels["public."+name] = rel
	return ""
}

// biBlocks reads the BI tools' catalog queries.
func biBlocks(t *testing.T) []string {
	path := filepath.Join("..", "..", "tests", "clients", "corpus", "bi", "queries.sql")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the BI query corpus is missing at %s (tests/clients/corpus/bi, a copy of /work/shared/clients/bi): %v", path, err)
	}
	var out []string
	for _, b := range strings.Split(string(data), ";;") {
		if strings.TrimSpace(b) != "" {
			out = append(out, b)
		}
	}
	return out
}

// ddFiles lists the datadriven files: those in testdata without an
// extension (the catalog fixture and its generator have one).
func ddFiles() ([]string, error) {
	all, err := filepath.Glob("testdata/*")
	var out []string
	for _, f := range all {
		if !strings.Contains(filepath.Base(f), ".") {
			out = append(out, f)
		}
	}
	return out, err
}
