package cli

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestOperationsDocCoversEveryFlag keeps docs/operations.md complete:
// every flag of every role, as "cellar <role> -h" lists it, appears with
// its environment variable in that role's reference section.
func TestOperationsDocCoversEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	flagLine := regexp.MustCompile(`(?m)^  -(\S+) \(env (\S+)\)$`)
	for _, cmd := range []string{"demo", "chubby", "master", "tabletserver", "gateway", "cluster up", "cluster down", "cluster status"} {
		var stderr bytes.Buffer
		Main(append(strings.Fields(cmd), "-h"), Env{Stdout: &stderr, Stderr: &stderr})
		flags := flagLine.FindAllStringSubmatch(stderr.String(), -1)
		if len(flags) == 0 {
			t.Fatalf("cellar %s -h lists no flags:\n%s", cmd, stderr.String())
		}
		head := "### cellar " + cmd + "\n"
		start := strings.Index(doc, head)
		if start < 0 {
			t.Errorf("docs/operations.md has no section %q", strings.TrimSpace(head))
			continue
		}
		section := doc[start+len(head):]
		if end := strings.Index(section, "\n### "); end >= 0 {
			section = section[:end]
		}
		for _, f := range flags {
			if !strings.Contains(section, "| `-"+f[1]+"` | `"+f[2]+"` |") {
				t.Errorf("docs/operations.md, section %q: flag -%s (env %s) is missing", strings.TrimSpace(head), f[1], f[2])
			}
		}
	}
}
