package master

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestEventsRecordActivationDeathAndKeepTheNewest(t *testing.T) {
	c := &fakeCoord{files: map[string]*fakeFile{}, lost: make(chan struct{})}
	c.set("/ls/local/cellar/servers/b", &fakeFile{locked: false, contents: []byte("127.0.0.1:1")})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := New(Options{Addr: "m:1", Coord: c, ScanInterval: time.Hour, MaxEvents: 3, Clock: func() time.Time { return at }})
	if m.Active() {
		t.Fatal("active before Open")
	}
	ctx := context.Background()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if !m.Active() {
		t.Fatal("not active after Open")
	}
	ev := m.Events()
	if len(ev) != 2 || ev[0].Kind != EventMaster || ev[1].Kind != EventDeath || !strings.Contains(ev[1].Text, "server is dead") || !strings.Contains(ev[1].Text, "server=b") ||
		!ev[0].Time.Equal(at) || strings.HasPrefix(ev[1].Text, "master: ") {
		t.Fatalf("events: %+v", ev)
	}
	for i := range 4 {
		m.event(EventMove, slog.LevelInfo, fmt.Sprintf("move %d", i))
	}
	ev = m.Events()
	var texts []string
	for _, e := range ev {
		texts = append(texts, e.Text)
	}
	if fmt.Sprint(texts) != "[move 1 move 2 move 3]" {
		t.Fatalf("ring: %v", texts)
	}
	if err := (Options{Addr: "m", Coord: c, MaxEvents: -1}).Validate(); err == nil {
		t.Fatal("negative MaxEvents accepted")
	}
}
