package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBigtableNodeClient runs Google's Node client of the Bigtable API
// (@google-cloud/bigtable, which scripts/deps.sh installs from npm)
// against the demo's Bigtable API, through BIGTABLE_EMULATOR_HOST as a
// program written for Cloud Bigtable would find it. The script
// (tests/clients/bigtable-node/client.js) checks every answer itself:
// admin create with a GC rule and a split, batch and single-row writes,
// point and prefix reads with filters, versions, increment and append,
// check-and-mutate, deletes, SampleRowKeys, DropRowRange and delete.
func TestBigtableNodeClient(t *testing.T) {
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	defer d.stop(t)
	dir, _ := filepath.Abs(filepath.Join("clients", "bigtable-node"))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "client.js"), "node_t")
	cmd.Env = append(os.Environ(), "BIGTABLE_EMULATOR_HOST="+d.bigtable)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "ok\n") {
		t.Fatalf("node client.js: %v\n%s", err, out)
	}
}
