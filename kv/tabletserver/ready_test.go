package tabletserver

import (
	"strings"
	"testing"
	"time"
)

func TestReadyWhileRegisteredAndServing(t *testing.T) {
	ts := startServer(t)
	deadline := time.Now().Add(10 * time.Second)
	for ts.srv.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", ts.srv.Ready())
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.coord.mu.Lock()
	var l *fakeLock
	for _, x := range ts.coord.locks {
		l = x
	}
	ts.coord.mu.Unlock()
	l.lose(true)
	if err := ts.srv.Ready(); err == nil || !strings.Contains(err.Error(), "does not hold its lock") {
		t.Fatalf("ready after losing the lock: %v", err)
	}
}
