package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	s, err := demoSecret(dir, "")
	if err != nil || len(s) != 64 {
		t.Fatalf("demoSecret: %q %v", s, err)
	}
	st, err := os.Stat(filepath.Join(dir, "secret"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the secret file: %v %v", st.Mode(), err)
	}
	if again, err := demoSecret(dir, ""); err != nil || again != s {
		t.Fatalf("the second run's secret: %q %v, want %q", again, err, s)
	}
	if given, _ := demoSecret(dir, "mine"); given != "mine" {
		t.Fatalf("a given secret: %q", given)
	}
	if got, err := readSecret("", filepath.Join(dir, "secret"), false); err != nil || got != s {
		t.Fatalf("readSecret: %q %v", got, err)
	}
	if _, err := readSecret("", filepath.Join(dir, "missing"), false); err == nil {
		t.Fatal("a missing secret file that was asked for is no error")
	}
	if got, err := readSecret("", filepath.Join(dir, "missing"), true); err != nil || got != "" {
		t.Fatalf("an optional missing file: %q %v", got, err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	if _, err := readSecret("", empty, false); err == nil {
		t.Fatal("an empty secret file is no error")
	}
}
