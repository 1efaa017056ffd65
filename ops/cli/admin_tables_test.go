package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
)

func TestGCRuleText(t *testing.T) {
	for _, text := range []string{"none", "versions:3", "age:30d", "age:12h", "age:90s", "age:1.5s",
		"union(versions:2,age:30d)", "intersection(versions:1,union(age:7d,versions:5))"} {
		r, err := parseGCRule(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got := gcText(r); got != text {
			t.Errorf("%s reads back as %s", text, got)
		}
	}
	if r, _ := parseGCRule("union( versions:2 , age:1d )"); !(r.Kind == model.GCUnion && r.Rules[1].MaxAge == 24*time.Hour) {
		t.Errorf("spaces: %+v", r)
	}
	for text, want := range map[string]string{
		"versions:0": "not a positive number", "age:-1h": "not a positive duration", "age": "needs a value",
		"union(versions:1": "missing )", "union": "in parentheses", "maxversions=3": "unknown rule",
		"versions:1)": "unexpected", "union()": "unknown rule",
	} {
		if _, err := parseGCRule(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}

func TestAlterSchema(t *testing.T) {
	old := model.Schema{Families: []model.Family{{Name: "a"}, {Name: "b", GC: model.MaxVersionsRule(2)}},
		Meta: map[string]string{"sql": "{}"}}
	next, err := alterSchema(old, []string{"c=age:1d"}, []string{"a"}, []string{"b=versions:1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Families) != 2 || next.Families[0].Name != "b" || next.Families[0].GC.MaxVersions != 1 ||
		next.Families[1].Name != "c" || next.Families[1].GC.MaxAge != 24*time.Hour || next.Meta["sql"] != "{}" {
		t.Fatalf("altered: %+v", next)
	}
	if len(old.Families) != 2 || old.Families[0].Name != "a" {
		t.Fatalf("the old schema changed: %+v", old)
	}
	for _, tc := range []struct {
		add, drop, gc []string
		want          string
	}{
		{drop: []string{"x"}, want: "no such family; the families are: a, b"},
		{add: []string{"a"}, want: "already has family a"},
		{gc: []string{"b"}, want: "use FAMILY=GC"},
		{gc: []string{"x=none"}, want: "no such family"},
		{add: []string{"bad name!"}, want: "family"},
	} {
		if _, err := alterSchema(old, tc.add, tc.drop, tc.gc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}

func TestProgressLineOnAPipe(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := newProgressLine(&buf, func() time.Time { return now })
	p.update("one")
	p.update("too soon")
	now = now.Add(2 * time.Second)
	p.update("two")
	p.finish("done")
	if got := buf.String(); got != "one\ntwo\ndone\n" {
		t.Fatalf("a pipe got %q", got)
	}
	if got := bar(5, 10, 10); got != "[=====     ]" {
		t.Fatalf("bar: %q", got)
	}
	if got := humanBytes(1536); got != "1.5 KiB" {
		t.Fatalf("humanBytes: %q", got)
	}
}

// TestPrintTablets: a running compaction shows its percentage, and a
// tablet being recovered from a dead server's log its replayed records.
func TestPrintTablets(t *testing.T) {
	var b bytes.Buffer
	printTablets(&b, []*masterpb.Tablet{
		{Table: "web", End: []byte("g"), Server: "ts1-a", ServerAddr: "127.0.0.1:1", Id: 3, SizeBytes: 2048, CompactionDoneBytes: 25, CompactionTotalBytes: 100},
		{Table: "web", Start: []byte("g"), Server: "ts2-b", ServerAddr: "127.0.0.1:2", Recovering: true, RecoveredRecords: 1200},
	})
	out := b.String()
	for _, want := range []string{"ts1-a/3", "25%", "2.0 KiB", "ts2-b/-", "recovering: 1200 log records replayed"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
