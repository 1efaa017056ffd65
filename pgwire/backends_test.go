package pgwire

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestBackendSignals: every session has the process id its BackendKeyData
// gave (pg_backend_pid), pg_stat_activity lists the server's sessions,
// pg_cancel_backend cancels another session's statement (57014) and
// pg_terminate_backend ends a session, running (its statement fails with
// FATAL 57P01) or idle, with PostgreSQL's rules for who may signal whom.
func TestBackendSignals(t *testing.T) {
	ctx := context.Background()
	users := &FileUsers{Path: filepath.Join(t.TempDir(), "users.json")}
	for _, u := range []struct {
		name  string
		super bool
	}{{"root", true}, {"alice", false}, {"bob", false}} {
		nu, err := NewUser(u.name, "pw", u.super, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := users.Put(nu); err != nil {
			t.Fatal(err)
		}
	}
	addr := startServer(t, Options{Users: users, Rules: []Rule{{Source: "all", Method: MethodSCRAM}}})
	conn := func(user, app string) *pgx.Conn {
		return connect(t, fmt.Sprintf("postgres://%s:pw@%s/cellar?sslmode=disable&application_name=%s", user, addr, app))
	}
	pidOf := func(c *pgx.Conn) int64 {
		var pid int64
		if err := c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if pid != int64(c.PgConn().PID()) || pid == 0 {
			t.Fatalf("pg_backend_pid() %d, BackendKeyData %d", pid, c.PgConn().PID())
		}
		return pid
	}
	root, alice, alice2, bob := conn("root", "admin"), conn("alice", "app1"), conn("alice", "app2"), conn("bob", "app3")
	rootPID, alicePID, alice2PID, bobPID := pidOf(root), pidOf(alice), pidOf(alice2), pidOf(bob)

	rows, err := root.Query(ctx, `SELECT pid, usename, application_name, state, query, client_addr IS NOT NULL, backend_start <= now()
		FROM pg_stat_activity ORDER BY pid`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]string{}
	for rows.Next() {
		var pid int64
		var user, app, state, query string
		var addr, started bool
		if err := rows.Scan(&pid, &user, &app, &state, &query, &addr, &started); err != nil {
			t.Fatal(err)
		}
		seen[pid] = user + " " + app + " " + state
		if pid == rootPID && (state != "active" || query == "" || !addr || !started) {
			t.Errorf("the querying session: %s %q %v %v", state, query, addr, started)
		}
	}
	if rows.Err() != nil || len(seen) != 4 || seen[alicePID] != "alice app1 idle" || seen[bobPID] != "bob app3 idle" || seen[rootPID] != "root admin active" {
		t.Fatalf("pg_stat_activity: %v %v", seen, rows.Err())
	}

	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Severity + " " + pe.Code
		}
		return fmt.Sprint(err)
	}
	signal := func(c *pgx.Conn, sql string, args ...any) (bool, error) {
		var ok bool
		err := c.QueryRow(ctx, sql, args...).Scan(&ok)
		return ok, err
	}
	// Who may signal whom: the same user, or a superuser; nobody but a
	// superuser signals a superuser.
	for _, c := range []struct {
		from *pgx.Conn
		fn   string
		pid  int64
		want string
	}{
		{bob, "pg_cancel_backend", alicePID, "ERROR 42501"},
		{bob, "pg_terminate_backend", alicePID, "ERROR 42501"},
		{alice, "pg_cancel_backend", rootPID, "ERROR 42501"},
		{alice, "pg_terminate_backend", rootPID, "ERROR 42501"},
	} {
		if _, err := signal(c.from, `SELECT `+c.fn+`($1)`, c.pid); code(err) != c.want {
			t.Errorf("%s(%d): %v, want %s", c.fn, c.pid, err, c.want)
		}
	}
	if ok, err := signal(root, `SELECT pg_terminate_backend(2147483647)`); ok || err != nil {
		t.Errorf("no such backend: %v %v", ok, err)
	}
	// PostgreSQL's warning comes with the false, before the row.
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://root:pw@%s/cellar?sslmode=disable", addr))
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		warnings = append(warnings, n.Severity+" "+n.Code+" "+n.Message)
	}
	wc, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var cancelled, terminated bool
	if err := wc.QueryRow(ctx, `SELECT pg_cancel_backend(2147483647), pg_terminate_backend(-1)`).Scan(&cancelled, &terminated); err != nil || cancelled || terminated {
		t.Errorf("no such backend: %v %v %v", cancelled, terminated, err)
	}
	if want := []string{"WARNING 01000 PID 2147483647 is not a PostgreSQL backend process",
		"WARNING 01000 PID -1 is not a PostgreSQL backend process"}; !slices.Equal(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	wc.Close(ctx)
	if _, err := signal(root, `SELECT pg_terminate_backend($1, -1)`, bobPID); code(err) != "ERROR 22023" {
		t.Errorf("a negative timeout: %v", err)
	}

	// Cancel: alice's sleep ends with 57014, and alice goes on.
	sleep := func(c *pgx.Conn) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Exec(ctx, `SELECT pg_sleep(30)`)
			done <- err
		}()
		return done
	}
	waitActive := func(pid int64) {
		for i := 0; i < 500; i++ {
			var state string
			if err := root.QueryRow(ctx, `SELECT state FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&state); err == nil && state == "active" {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("backend %d never ran its statement", pid)
	}
	done := sleep(alice)
	waitActive(alicePID)
	if ok, err := signal(alice2, `SELECT pg_cancel_backend($1)`, alicePID); !ok || err != nil {
		t.Fatalf("pg_cancel_backend: %v %v", ok, err)
	}
	if err := <-done; code(err) != "ERROR 57014" {
		t.Fatalf("the cancelled statement: %v", err)
	}
	pidOf(alice)

	// Terminate while running: the statement ends with FATAL 57P01, and
	// the session with it; the wait sees it end.
	done = sleep(alice)
	waitActive(alicePID)
	if ok, err := signal(root, `SELECT pg_terminate_backend(pid => $1, timeout => 10000)`, alicePID); !ok || err != nil {
		t.Fatalf("pg_terminate_backend: %v %v", ok, err)
	}
	if err := <-done; code(err) != "FATAL 57P01" {
		t.Fatalf("the terminated statement: %v", err)
	}
	if !alice.IsClosed() {
		t.Error("the terminated session's connection is open")
	}
	// Terminate while idle: the session's next statement finds it gone.
	if ok, err := signal(root, `SELECT pg_terminate_backend($1)`, bobPID); !ok || err != nil {
		t.Fatalf("pg_terminate_backend of an idle session: %v %v", ok, err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := bob.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("the idle terminated session still runs statements")
	}
	// A session may end itself.
	if _, err := signal(alice2, `SELECT pg_terminate_backend(pg_backend_pid())`); code(err) != "FATAL 57P01" {
		t.Fatalf("terminating itself: %v", err)
	}
	// Sessions end on the server a little after their clients see it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		err := root.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity`).Scan(&n)
		if err == nil && n == 1 {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("sessions left: %d %v", n, err)
		}
	}
	_ = alice2PID
}

// TestPreparedCatalogIsCurrent: a prepared statement over the emulated
// catalog reads it as it is at each execution, not as it was at Parse.
func TestPreparedCatalogIsCurrent(t *testing.T) {
	ctx := context.Background()
	addr := startServer(t, Options{})
	url := fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable", addr)
	c := connect(t, url)
	if _, err := c.Prepare(ctx, "n", `SELECT count(*) FROM pg_stat_activity`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := c.QueryRow(ctx, "n").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
	connect(t, url)
	if n := count(); n != 2 {
		t.Fatalf("%d sessions after a second connected, want 2", n)
	}
}
