package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// clusterState is the part of cellar-cluster/cluster.json the tests read.
type clusterState struct {
	PG    string `json:"pgwire"`
	Procs []struct {
		Name, Role, Config string
		Pid                int
	} `json:"processes"`
}

func readCluster(t *testing.T, dir string) clusterState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st clusterState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// TestClusterUpStatusDown runs "cellar cluster up" on free ports, uses SQL
// through its gateway, checks status, refuses a second up, stops it with
// "cellar cluster down" and checks that no process is left; a second up
// on the directory brings the data back.
func TestClusterUpStatusDown(t *testing.T) {
	bin := buildCellar(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	cellar := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "cluster.json")); err == nil {
			cellar("cluster", "down", "-dir", dir, "-timeout", "5s")
		}
	})
	out, err := cellar("cluster", "up", "-dir", dir, "-base-port", "0")
	if err != nil {
		t.Fatalf("cluster up: %v\n%s", err, out)
	}
	if !strings.Contains(out, `psql "postgresql://cellar@`) {
		t.Fatalf("cluster up printed no connection string:\n%s", out)
	}
	st := readCluster(t, dir)
	roles := map[string]int{}
	for _, p := range st.Procs {
		roles[p.Role]++
		if !running(p.Pid) {
			t.Fatalf("%s (pid %d) is not running after up", p.Name, p.Pid)
		}
		if _, err := os.Stat(p.Config); err != nil {
			t.Fatalf("%s has no config file: %v", p.Name, err)
		}
	}
	if roles["chubby"] != 3 || roles["master"] != 2 || roles["tabletserver"] != 3 || roles["gateway"] != 1 {
		t.Fatalf("processes by role: %v", roles)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := "postgresql://cellar@" + st.PG + "/cellar?sslmode=disable"
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"CREATE TABLE kv (k TEXT PRIMARY KEY, v BIGINT)",
		"INSERT INTO kv VALUES ('a', 1), ('b', 2), ('c', 3)",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var sum int64
	if err := conn.QueryRow(ctx, "SELECT sum(v) FROM kv").Scan(&sum); err != nil || sum != 6 {
		t.Fatalf("sum: %d %v", sum, err)
	}
	conn.Close(ctx)

	out, err = cellar("cluster", "status", "-dir", dir)
	if err != nil || strings.Count(out, " alive ") != 9 || !strings.Contains(out, "9 of 9 processes alive") {
		t.Fatalf("cluster status: %v\n%s", err, out)
	}
	out, err = cellar("cluster", "up", "-dir", dir, "-base-port", "0")
	if err == nil || !strings.Contains(out, "is running (9 of 9 processes alive)") {
		t.Fatalf("a second up: %v\n%s", err, out)
	}

	out, err = cellar("cluster", "down", "-dir", dir)
	if err != nil || !strings.Contains(out, "the cluster stopped cleanly") {
		t.Fatalf("cluster down: %v\n%s", err, out)
	}
	for _, p := range st.Procs {
		if running(p.Pid) {
			t.Fatalf("%s (pid %d) still runs after down", p.Name, p.Pid)
		}
	}
	for _, p := range st.Procs {
		log, _ := os.ReadFile(filepath.Join(dir, p.Name, p.Role+".log"))
		if !strings.Contains(string(log), "stopped") {
			t.Errorf("%s did not stop cleanly; its log:\n%s", p.Name, log)
		}
	}
	out, err = cellar("cluster", "status", "-dir", dir)
	if err == nil || !strings.Contains(out, "0 of 9 processes alive") {
		t.Fatalf("cluster status after down: %v\n%s", err, out)
	}

	// The same directory starts again, with the data.
	if out, err := cellar("cluster", "up", "-dir", dir); err != nil {
		t.Fatalf("cluster up again: %v\n%s", err, out)
	}
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT sum(v) FROM kv").Scan(&sum); err != nil || sum != 6 {
		t.Fatalf("sum after a restart: %d %v", sum, err)
	}
	conn.Close(ctx)
	if out, err := cellar("cluster", "down", "-dir", dir); err != nil {
		t.Fatalf("cluster down: %v\n%s", err, out)
	}
}
