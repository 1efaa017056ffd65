package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The cluster's shared secret authenticates its members to each other: the
// Chubby cell's clients, and every call to the tablet servers and the
// master's admin RPCs (kv/client's auth.go). Every role takes it as
// -secret or -secret-file; cellar demo makes one per data directory.

// defaultSecretFile is where cellar demo keeps its secret under its
// default data directory; the cluster tools read it when given none.
const defaultSecretFile = "cellar-data/secret"

const secretFileUsage = "file holding the cluster's shared secret (used when -secret is empty)"

// readSecret returns secret, or else the trimmed contents of file ("":
// none). A missing file is an error unless optional.
func readSecret(secret, file string, optional bool) (string, error) {
	if secret != "" || file == "" {
		return secret, nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) && optional {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("secret file %s is empty", file)
	}
	return s, nil
}

// demoSecret returns the demo's secret: given, or the one in data's
// secret file, made (mode 0600) on the first run.
func demoSecret(data, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	path := filepath.Join(data, "secret")
	if s, err := readSecret("", path, true); err != nil || s != "" {
		return s, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the cluster secret: %w", err)
	}
	s := hex.EncodeToString(b)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("save the cluster secret: %w", err)
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("save the cluster secret: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("save the cluster secret: %w", err)
	}
	return s, nil
}
