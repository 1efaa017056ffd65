package faults

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
)

func TestClockSkewMovesOnlyTheWallReading(t *testing.T) {
	var c Clock
	// A reading with a monotonic part prints it as "m=±…".
	if now := c.Now(); !strings.Contains(now.String(), " m=") {
		t.Fatal("an unskewed reading has no monotonic part")
	}
	c.SetSkew(time.Hour)
	got := c.Now()
	if strings.Contains(got.String(), " m=") {
		t.Fatal("a skewed reading keeps a monotonic part, so arithmetic on it would hide the jump")
	}
	if d := got.Sub(time.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("skewed by 1h, the clock reads %v off", d)
	}
	c.SetSkew(-time.Hour)
	if d := time.Now().Sub(c.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("skewed by -1h, the clock reads %v behind", d)
	}
}

func TestEndpoints(t *testing.T) {
	m := dfs.NewMem()
	f := dfs.NewFaulty(m)
	var clock Clock
	exited := 0
	mux := http.NewServeMux()
	Mount(mux, Options{FS: f, Clock: &clock, Exit: func() { exited++ }})
	post := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := post("/debug/faults/clock?skew=-1h"); code != 200 || clock.Skew() != -time.Hour {
		t.Fatalf("clock: %d, skew %v", code, clock.Skew())
	}
	if code, _ := post("/debug/faults/clock?skew=soon"); code != 400 {
		t.Fatalf("a bad skew answered %d", code)
	}
	if code, _ := post("/debug/faults/sync-fail?n=0"); code != 400 {
		t.Fatalf("n=0 answered %d", code)
	}
	f.MkdirAll("logs")
	w, _ := f.Create("logs/a")
	f.SyncDir("logs")
	w.Write([]byte("ok"))
	w.Sync()
	if code, _ := post("/debug/faults/sync-fail?n=-1&prefix=logs/"); code != 200 {
		t.Fatalf("sync-fail answered %d", code)
	}
	w.Write([]byte("lost"))
	if err := w.Sync(); err == nil {
		t.Fatal("a sync under the rule succeeded")
	}
	post("/debug/faults/clear")
	if err := w.Sync(); err != nil {
		t.Fatalf("sync after clear: %v", err)
	}
	w.Write([]byte("tail"))
	code, body := post("/debug/faults/crash?torn=0&seed=7")
	if code != 200 || exited != 1 || !strings.Contains(body, `"Cut":1`) {
		t.Fatalf("crash: %d %q, exited %d times", code, body, exited)
	}
	if got, _ := dfs.ReadFile(m, "logs/a"); string(got) != "ok\x00\x00\x00\x00" {
		t.Fatalf("after the crash the log holds %q", got)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/faults", nil))
	if !strings.Contains(rec.Body.String(), `"clock_skew":"-1h0m0s"`) || !strings.Contains(rec.Body.String(), `"FailedSyncs":1`) {
		t.Fatalf("state: %s", rec.Body.String())
	}
}
