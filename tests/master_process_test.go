package tests

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// masterServers reads a master's /servers page.
func masterServers(t *testing.T, addr string) (live []string, dead []string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/servers")
	if err != nil {
		return nil, nil
	}
	defer resp.Body.Close()
	var body struct {
		Live []struct{ ID string } `json:"live"`
		Dead []string              `json:"dead"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, s := range body.Live {
		live = append(live, s.ID)
	}
	return live, body.Dead
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMasterFailoverAndDeadServers runs a one-replica Chubby cell, two
// masters and two tablet servers as processes. One master is active and
// the other waits; a tablet server killed with SIGKILL is declared dead
// (its file deleted) once its session lapses; the active master killed
// with SIGKILL is replaced by the standby, which names itself in the
// master file and sees the live server.
func TestMasterFailoverAndDeadServers(t *testing.T) {
	bin := buildCellar(t)
	dir := t.TempDir()
	chubby := freeLoopbackPort(t)
	startProcess(t, bin, "clients:", "chubby", "-id", "1", "-peers", "1="+freeLoopbackPort(t)+"/"+chubby,
		"-data", filepath.Join(dir, "chubby"), "-lease", "2s", "-grace", "2s", "-rtt", "10ms")
	masterA := freeLoopbackPort(t)
	a, _ := startProcess(t, bin, "active master", "master", "-listen", masterA, "-rpc", freeLoopbackPort(t), "-chubby", chubby, "-scan-interval", "100ms")
	masterB := freeLoopbackPort(t)
	startProcess(t, bin, "standby", "master", "-listen", masterB, "-rpc", freeLoopbackPort(t), "-chubby", chubby, "-scan-interval", "100ms")
	startProcess(t, bin, "serving on", "tabletserver", "-id", "ts1", "-listen", "127.0.0.1:0", "-chubby", chubby, "-data", filepath.Join(dir, "ts1"))
	ts2, _ := startProcess(t, bin, "serving on", "tabletserver", "-id", "ts2", "-listen", "127.0.0.1:0", "-chubby", chubby, "-data", filepath.Join(dir, "ts2"))

	eventually(t, "the master to see both servers", func() bool {
		live, _ := masterServers(t, masterA)
		return strings.Join(live, ",") == "ts1,ts2"
	})
	firstMaster, err := lockCLI(t, bin, chubby, "", "cat", "/ls/local/cellar/master")
	if err != nil || !strings.HasPrefix(firstMaster, "127.0.0.1:") {
		t.Fatalf("master file: %q %v", firstMaster, err)
	}

	ts2.Process.Kill()
	eventually(t, "the master to bury ts2", func() bool {
		live, dead := masterServers(t, masterA)
		return strings.Join(live, ",") == "ts1" && strings.Join(dead, ",") == "ts2"
	})
	if out, _ := lockCLI(t, bin, chubby, "", "ls", "/ls/local/cellar/servers/"); out != "ts1\n" {
		t.Fatalf("servers directory after ts2 died: %q", out)
	}

	a.Process.Kill()
	eventually(t, "the standby to take over", func() bool {
		out, err := lockCLI(t, bin, chubby, "", "cat", "/ls/local/cellar/master")
		return err == nil && out != firstMaster && strings.HasPrefix(out, "127.0.0.1:")
	})
	eventually(t, "the new master to see ts1", func() bool {
		live, _ := masterServers(t, masterB)
		return strings.Join(live, ",") == "ts1"
	})
	if out, _ := lockCLI(t, bin, chubby, "", "stat", "/ls/local/cellar/master"); !regexp.MustCompile(`lock:\s+exclusive`).MatchString(out) {
		t.Fatalf("master lock after failover:\n%s", out)
	}
}
