package tests

import (
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPgRegress runs PostgreSQL's pg_regress --use-existing over
// tests/regress against cellar demo: the expected output is PostgreSQL
// 15's own (see tests/regress/README.md).
func TestPgRegress(t *testing.T) {
	const regress = "/usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress"
	if _, err := exec.LookPath(regress); err != nil {
		t.Fatalf("pg_regress is missing (%v); scripts/deps.sh installs postgresql-client", err)
	}
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	u, err := url.Parse(d.pg)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := filepath.Abs("regress")
	tests, _ := filepath.Glob(filepath.Join(in, "sql", "*.sql"))
	var names []string
	for _, f := range tests {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".sql"))
	}
	args := append([]string{"--use-existing", "--host=" + u.Hostname(), "--port=" + u.Port(), "--user=cellar", "--dbname=cellar",
		"--inputdir=" + in, "--outputdir=" + t.TempDir(), "--bindir=/usr/bin"}, names...)
	out, err := exec.Command(regress, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tests passed") {
		t.Fatalf("pg_regress: %v\n%s", err, out)
	}
}
