package tests

import (
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealClients runs the drivers users run against the demo's gateway:
// psycopg2, psycopg 3, asyncpg, psqlODBC (through pyodbc), pgjdbc,
// node-postgres with pg-cursor, and pgbench in each protocol mode, and
// SQLAlchemy's inspector. scripts/deps.sh installs them (Debian packages
// and npm). Each client checks its answers itself and prints "ok".
func TestRealClients(t *testing.T) {
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	u, err := url.Parse(d.pg)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("clients")
	jdbc := fmt.Sprintf("jdbc:postgresql://%s/cellar?user=cellar&sslmode=disable", u.Host)
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"psycopg2", []string{"/usr/bin/python3", filepath.Join(dir, "psycopg2_client.py"), d.pg}},
		{"psycopg3", []string{"/usr/bin/python3", filepath.Join(dir, "psycopg3_client.py"), d.pg}},
		{"pgjdbc", []string{"java", "-cp", "/usr/share/java/postgresql.jar", filepath.Join(dir, "JdbcClient.java"), jdbc}},
		{"sqlalchemy", []string{"/usr/bin/python3", filepath.Join(dir, "sqlalchemy_client.py"), d.pg}},
		{"asyncpg", []string{"/usr/bin/python3", filepath.Join(dir, "asyncpg_client.py"), d.pg}},
		{"psqlodbc", []string{"/usr/bin/python3", filepath.Join(dir, "odbc_client.py"), d.pg}},
		{"node-postgres", []string{"node", filepath.Join(dir, "node", "client.js"), d.pg}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command(c.cmd[0], c.cmd[1:]...).CombinedOutput()
			if err != nil || !strings.HasSuffix(string(out), "ok\n") {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
	// pgbench's scripts write a table with the second spelling of
	// family:qualifier (f.v), since pgbench reads :v in "f:v" as a
	// variable in its extended and prepared modes.
	if out, err := exec.Command("psql", "-X", "-v", "ON_ERROR_STOP=1", d.pg, "-c", `CREATE TABLE pgb (_key TEXT PRIMARY KEY, "f:" TEXT, "c:n" BIGINT)`).CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	for _, mode := range []string{"simple", "extended", "prepared"} {
		t.Run("pgbench-"+mode, func(t *testing.T) {
			cmd := exec.Command("pgbench", "-n", "-f", filepath.Join(dir, "pgbench.sql"), "-M", mode, "-t", "50", "-c", "2", d.pg)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "number of failed transactions: 0") {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
