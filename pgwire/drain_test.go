package pgwire

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// serveForClose runs a server whose Close the test calls itself.
func serveForClose(t *testing.T) (*Server, string) {
	t.Helper()
	s := New(Options{NewSession: newSession})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	return s, "postgres://cellar@" + ln.Addr().String() + "/cellar?sslmode=disable"
}

// TestCloseDrains: Close ends idle sessions at once with 57P01, lets a
// running statement finish and return its rows, and refuses new
// connections.
func TestCloseDrains(t *testing.T) {
	s, url := serveForClose(t)
	ctx := context.Background()
	idle := connect(t, url)
	busy := connect(t, url)
	result := make(chan error, 1)
	go func() {
		var n int
		err := busy.QueryRow(ctx, "SELECT 7 FROM (SELECT pg_sleep(1)) AS s").Scan(&n)
		if err == nil && n != 7 {
			err = errors.New("wrong row")
		}
		result <- err
	}()
	time.Sleep(300 * time.Millisecond) // the statement runs
	closed := make(chan error, 1)
	start := time.Now()
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		closed <- s.Close(cctx)
	}()
	// The idle session is told at once.
	time.Sleep(100 * time.Millisecond)
	if _, err := idle.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("the idle session still runs statements after Close")
	}
	if !idle.IsClosed() {
		t.Fatal("the idle session is not closed")
	}
	if _, err := pgx.Connect(ctx, url); err == nil {
		t.Fatal("a new connection was accepted after Close")
	}
	if err := <-result; err != nil {
		t.Fatalf("the running statement did not finish: %v", err)
	}
	if err := <-closed; err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("Close: %v after %v", err, time.Since(start))
	}
}

// TestCloseCancelsWhenTimeIsUp: statements still running when Close's
// context ends are cancelled.
func TestCloseCancelsWhenTimeIsUp(t *testing.T) {
	s, url := serveForClose(t)
	ctx := context.Background()
	busy := connect(t, url)
	result := make(chan error, 1)
	go func() {
		_, err := busy.Exec(ctx, "SELECT pg_sleep(30)")
		result <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-result:
		if err == nil {
			t.Fatal("the statement succeeded")
		}
		t.Logf("the statement ended after %v: %v (SQLSTATE %s)", time.Since(start), err, sqlCode(err))
	case <-time.After(5 * time.Second):
		t.Fatal("the statement still runs 5s after Close gave up")
	}
}
