package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPsqlAgainstDemo connects Debian's psql (installed by scripts/deps.sh)
// to the demo's gateway with the URL the demo prints, and runs what the
// SQL layer answers today.
func TestPsqlAgainstDemo(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed; scripts/deps.sh installs postgresql-client")
	}
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(psql, append([]string{"-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", d.pg}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("-c", "SELECT 1 AS one, 'cellar' || '!' AS name", "-c", "SHOW server_version",
		"-c", "SET application_name = 'psql-test'", "-c", "SHOW application_name", "-c", "SELECT current_user, current_database()")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	want := "1|cellar!\n15.4\nSET\npsql-test\ncellar|cellar\n"
	if out != want {
		t.Fatalf("psql printed:\n%s\nwant:\n%s", out, want)
	}
	// A transaction block in one script, with an error inside it.
	out, err = run("-v", "ON_ERROR_STOP=0", "-c", "BEGIN; SELECT 1/0; SELECT 1; ROLLBACK;")
	if !strings.Contains(out, "division by zero") {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	// \copy of a query, to psql's stdout, in CSV.
	out, err = run("-c", `\copy (SELECT 1 AS a, 'x,y' AS b) TO STDOUT WITH (FORMAT csv, HEADER)`)
	if err != nil || out != "a,b\n1,\"x,y\"\n" {
		t.Fatalf("\\copy: %v\n%q", err, out)
	}
	// cellar sqltest runs users' sqllogictest files; tests/sql/session.slt
	// passes against PostgreSQL 15 too (with -endpoint postgresql).
	if out, err := exec.Command(bin, "sqltest", "-url", d.pg, "sql/session.slt").CombinedOutput(); err != nil || !strings.Contains(string(out), " 0 failed") {
		t.Fatalf("cellar sqltest: %v\n%s", err, out)
	}
	// COPY into a table: psql's \copy sends COPY … FROM STDIN, in text
	// and CSV, and reads it back with COPY … TO STDOUT.
	csv := filepath.Join(t.TempDir(), "people.csv")
	if err := os.WriteFile(csv, []byte("id,name\n1,ada\n2,\"lovelace, ada\"\n3,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run("-c", `CREATE TABLE copy_people (id INT PRIMARY KEY, name TEXT)`,
		"-c", `\copy copy_people FROM '`+csv+`' WITH (FORMAT csv, HEADER)`,
		"-c", `\copy copy_people TO STDOUT`, "-c", `\copy copy_people FROM '`+csv+`' WITH (FORMAT csv, HEADER)`)
	if !strings.Contains(out, "1\tada\n2\tlovelace, ada\n3\t\\N\n") || !strings.Contains(out, `duplicate key value violates unique constraint "copy_people_pkey"`) {
		t.Fatalf("\\copy: %v\n%s", err, out)
	}
	// Errors point at the right character.
	out, _ = run("-c", "SELECT x")
	if !strings.Contains(out, `column "x" does not exist`) || !strings.Contains(out, "LINE 1: SELECT x") {
		t.Fatalf("psql error: %s", out)
	}
}

// TestPsqlMetaCommands runs psql's catalog commands against a table of each
// shape; their answers come from the emulated pg_catalog.
func TestPsqlMetaCommands(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed; scripts/deps.sh installs postgresql-client")
	}
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	run := func(cmd string) string {
		out, err := exec.Command(psql, "-X", "-v", "ON_ERROR_STOP=1", d.pg, "-c", cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("psql -c %q: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	run(`CREATE TABLE meta_t (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, v DOUBLE PRECISION)`)
	run(`CREATE TABLE meta_web (_key TEXT PRIMARY KEY, "anchor:" TEXT, "info:rank" BIGINT)`)
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{`\dt`, []string{"public | meta_t   | table | cellar", "public | meta_web | table | cellar"}},
		{`\d`, []string{"List of relations", "meta_t"}},
		{`\d meta_t`, []string{`Table "public.meta_t"`, "id     | integer               |           | not null |",
			"name   | character varying(64) |           | not null |", "v      | double precision      |           |          |",
			`"meta_t_pkey" PRIMARY KEY, btree (id)`}},
		{`\d meta_web`, []string{`Table "public.meta_web"`, "_key      | text   |           | not null |",
			"info:rank | bigint |           |          |", "anchor    | jsonb  |           |          |", `"meta_web_pkey" PRIMARY KEY, btree (_key)`}},
		{`\d+ meta_t`, []string{`Table "public.meta_t"`, "Storage", "Access method: heap"}},
		{`\l`, []string{"List of databases", "cellar"}},
		{`\dn`, []string{"List of schemas", "public"}},
		// The functions cellar has, with PostgreSQL's signatures.
		{`\df now`, []string{"pg_catalog | now  | timestamp with time zone |                     | func"}},
		{`\df pg_terminate_backend`, []string{"| boolean          | pid integer, timeout bigint DEFAULT 0 | func"}},
		{`\df+ lower`, []string{"| lower | text             | text                | func | immutable  | safe     |", "| lowercase"}},
		{`\da count`, []string{`| count | bigint           | "any"               | number of input rows for which the input expression is not null`}},
	} {
		out := run(c.cmd)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("psql %s: missing %q in\n%s", c.cmd, w, out)
			}
		}
	}
}
