package tests

import (
	"encoding/json"
	"net/http"
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
