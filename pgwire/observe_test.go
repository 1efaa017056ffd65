package pgwire

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// TestStatementDoneAndStats: every statement run reaches StatementDone
// with its type and error, over both protocols, and Stats counts the open
// connections.
func TestStatementDoneAndStats(t *testing.T) {
	type done struct {
		typ string
		err bool
	}
	var mu sync.Mutex
	var seen []done
	s := New(Options{NewSession: newSession, StatementDone: func(typ string, d time.Duration, err error) {
		mu.Lock()
		seen = append(seen, done{typ, err != nil})
		mu.Unlock()
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	if n := s.Stats().Connections; n != 0 {
		t.Fatalf("%d connections before any", n)
	}
	ctx := context.Background()
	c := connect(t, "postgres://cellar@"+ln.Addr().String()+"/cellar?sslmode=disable&default_query_exec_mode=simple_protocol")
	if n := s.Stats().Connections; n != 1 {
		t.Fatalf("%d connections with one open", n)
	}
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT 1/0"); err == nil {
		t.Fatal("division by zero succeeded")
	}
	if _, err := c.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	// The extended protocol: pgx prepares, then executes.
	c2 := connect(t, "postgres://cellar@"+ln.Addr().String()+"/cellar?sslmode=disable")
	var n int64
	if err := c2.QueryRow(ctx, "SELECT $1::int8", int64(7)).Scan(&n); err != nil || n != 7 {
		t.Fatalf("extended SELECT: %d %v", n, err)
	}
	if got := s.Stats().Connections; got != 2 {
		t.Fatalf("%d connections with two open", got)
	}
	c2.Close(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().Connections != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := s.Stats().Connections; got != 1 {
		t.Fatalf("%d connections after one of two closed", got)
	}

	mu.Lock()
	defer mu.Unlock()
	want := []done{{"OTHER", false}, {"SELECT", true}, {"OTHER", false}, {"SELECT", false}}
	if len(seen) != len(want) {
		t.Fatalf("StatementDone heard %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("StatementDone heard %v, want %v", seen, want)
		}
	}
}
