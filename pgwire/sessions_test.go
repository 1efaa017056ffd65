package pgwire

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgxSimple sends statements as simple queries, so that their text is
// exactly what the test wrote.
const pgxSimple = pgx.QueryExecModeSimpleProtocol

func TestSessionsShowRunningStatements(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := New(Options{NewSession: newSession, Clock: func() time.Time { return at }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close(context.Background())
	if got := s.Sessions(); len(got) != 0 {
		t.Fatalf("sessions before any connection: %+v", got)
	}
	ctx := context.Background()
	c := connect(t, "postgres://cellar@"+ln.Addr().String()+"/cellar?sslmode=disable")
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, "SELECT pg_sleep(30)", pgxSimple)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.Sessions()
		if len(got) == 1 && got[0].State == "active" {
			g := got[0]
			if g.User != "cellar" || g.Database != "cellar" || !strings.HasPrefix(g.ClientAddr, "127.0.0.1:") || g.PID == 0 ||
				!g.ConnectedAt.Equal(at) || !g.StatementStart.Equal(at) || g.Statement != "SELECT pg_sleep(30)" {
				t.Fatalf("session: %+v", g)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no active session: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := c.Exec(ctx, "BEGIN", pgxSimple); err != nil {
		t.Fatal(err)
	}
	if got := s.Sessions(); len(got) != 1 || got[0].State != "idle in transaction" || got[0].Statement != "BEGIN" {
		t.Fatalf("in a transaction: %+v", got)
	}
	c.Close(ctx)
	for len(s.Sessions()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a closed connection stays listed: %+v", s.Sessions())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
