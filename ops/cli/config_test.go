package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cellar.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigFilePrecedence(t *testing.T) {
	path := writeConfig(t, `# a comment
a = file-a
b = file-b   # trailing comment
c = "file c # not a comment"

d = 3s
`)
	env := Env{Stderr: io.Discard, Getenv: func(k string) string {
		return map[string]string{"CELLAR_X_B": "env-b", "CELLAR_X_A": "env-a"}[k]
	}}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("config", "", "")
	a := fs.String("a", "def-a", "")
	b := fs.String("b", "def-b", "")
	c := fs.String("c", "def-c", "")
	d := fs.Duration("d", time.Second, "")
	e := fs.String("e", "def-e", "")
	if _, err := parseFlags(fs, []string{"-config", path, "-a", "flag-a"}, env, "CELLAR_X"); err != nil {
		t.Fatal(err)
	}
	// flag > environment > file > default
	if *a != "flag-a" || *b != "env-b" || *c != "file c # not a comment" || *d != 3*time.Second || *e != "def-e" {
		t.Fatalf("a %q b %q c %q d %v e %q", *a, *b, *c, *d, *e)
	}
}

func TestConfigFileErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"listen = 127.0.0.1:1\nnope = 1\n", ":2: unknown setting \"nope\""},
		{"\n\nscan-interval = soon\n", ":3: scan-interval = \"soon\""},
		{"listen 127.0.0.1:1\n", ":1: \"listen 127.0.0.1:1\" is not a setting"},
		{"rpc = 127.0.0.1:1\nrpc = 127.0.0.1:2\n", ":2: \"rpc\" is already set on line 1"},
		{"config = other.conf\n", ":1: unknown setting \"config\""},
		{"listen = \"127.0.0.1:1\" extra\n", ":1: listen: text after the quoted value"},
	} {
		path := writeConfig(t, tc.text)
		code, _, stderr := run("master", "-config", path)
		if code != 2 || !strings.Contains(stderr, path+tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tc.text, code, stderr, path+tc.want)
		}
	}
	code, _, stderr := run("master", "-config", filepath.Join(t.TempDir(), "missing.conf"))
	if code != 2 || !strings.Contains(stderr, "missing.conf") {
		t.Errorf("a missing file: exit %d, stderr %q", code, stderr)
	}
}

func TestRolesRefuseInvalidSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"master", "-listen", "nowhere"}, `-listen "nowhere" is not host:port`},
		{[]string{"master", "-scan-interval", "0s"}, "-scan-interval 0s must be above zero"},
		{[]string{"master", "-rpc", "127.0.0.1:99999"}, "port \"99999\" is not a number from 0 to 65535"},
		{[]string{"tabletserver", "-dfs", "", "-split-size", "-1"}, "-dfs is required"},
		{[]string{"tabletserver", "-chubby", ""}, "-chubby is required"},
		{[]string{"gateway", "-tls-cert", "x.pem"}, "-tls-cert and -tls-key go together"},
		{[]string{"chubby", "-id", "1", "-peers", "1=127.0.0.1:1/127.0.0.1:2", "-lease", "-1s"}, "-lease -1s must be above zero"},
		{[]string{"demo", "-pgwire", "localhost"}, `-pgwire "localhost" is not host:port`},
		{[]string{"master", "-log-level", "loud"}, `-log-level "loud"`},
		{[]string{"master", "-log-format", "xml"}, `-log-format "xml"`},
	} {
		code, _, stderr := run(tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}
