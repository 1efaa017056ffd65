package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cellardb/cellar/query"
)

func newSession(opts query.SessionOptions) (Session, error) { return query.NewSession(opts) }

// startServer runs a server on a free loopback port.
func startServer(t *testing.T, opts Options) string {
	t.Helper()
	if opts.NewSession == nil {
		opts.NewSession = newSession
	}
	s := New(opts)
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
	return ln.Addr().String()
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func sqlCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestPgxQueryModes(t *testing.T) {
	addr := startServer(t, Options{})
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			c := connect(t, fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable&default_query_exec_mode=%s", addr, strings.ReplaceAll(mode.String(), " ", "_")))
			for i := 0; i < 7; i++ { // past pgx's and drivers' "prepare after 5" thresholds
				var n int64
				var s string
				var b bool
				var f float64
				if err := c.QueryRow(ctx, "SELECT $1::int8 + 1, $2::text || '!', $3::bool, $4::float8", int64(i), "hi", true, 1.5).Scan(&n, &s, &b, &f); err != nil {
					t.Fatal(err)
				}
				if n != int64(i)+1 || s != "hi!" || !b || f != 1.5 {
					t.Fatalf("got %d %q %v %v", n, s, b, f)
				}
			}
			var u [16]byte
			var ts time.Time
			var num string
			var by []byte
			if err := c.QueryRow(ctx, "SELECT '7f6c1e0a-3a2f-4b7e-9d0e-1c2b3a4d5e6f'::uuid, '2026-11-22 08:00:00.5+00'::timestamptz, 12.345::numeric::text, 'ab'::bytea").Scan(&u, &ts, &num, &by); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%x", u) != "7f6c1e0a3a2f4b7e9d0e1c2b3a4d5e6f" || !ts.Equal(time.Date(2026, 11, 22, 8, 0, 0, 5e8, time.UTC)) || num != "12.345" || string(by) != "ab" {
				t.Fatalf("got %x %v %q %q", u, ts, num, by)
			}
			if err := c.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSessionBehaviour(t *testing.T) {
	addr := startServer(t, Options{})
	ctx := context.Background()
	c := connect(t, "postgres://cellar@"+addr+"/cellar?sslmode=disable&application_name=tester")
	pc := c.PgConn()
	for name, want := range map[string]string{"server_version": "15.4", "server_encoding": "UTF8", "client_encoding": "UTF8",
		"DateStyle": "ISO, MDY", "integer_datetimes": "on", "standard_conforming_strings": "on", "application_name": "tester",
		"is_superuser": "on", "session_authorization": "cellar", "in_hot_standby": "off", "IntervalStyle": "postgres"} {
		if got := pc.ParameterStatus(name); got != want {
			t.Errorf("ParameterStatus %s = %q, want %q", name, got, want)
		}
	}
	if pc.PID() == 0 || len(pc.SecretKey()) != 4 {
		t.Error("no BackendKeyData")
	}
	// A SET of a reported setting sends its new value.
	if _, err := c.Exec(ctx, "SET application_name = 'renamed'"); err != nil {
		t.Fatal(err)
	}
	if got := pc.ParameterStatus("application_name"); got != "renamed" {
		t.Errorf("after SET, application_name is %q", got)
	}
	// Transactions: an error aborts the block until ROLLBACK.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1/0"); sqlCode(err) != "22012" {
		t.Fatalf("division by zero: %v", err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); sqlCode(err) != "25P02" {
		t.Fatalf("in a failed transaction: %v", err)
	}
	if pc.TxStatus() != 'E' {
		t.Fatalf("transaction status %c", pc.TxStatus())
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Errors carry SQLSTATE and positions.
	_, err = c.Exec(ctx, "SELECT 1 +")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42601" || pe.Position != 11 {
		t.Fatalf("syntax error: %#v", err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE t (_key TEXT PRIMARY KEY)"); sqlCode(err) != "0A000" {
		t.Fatalf("unsupported statement: %v", err)
	}
	// A parameter type the wire does not carry is named.
	if _, err := c.Exec(ctx, "SELECT $1::aclitem", "x"); !errors.As(err, &pe) || pe.Code != "0A000" ||
		pe.Message != "parameters of type aclitem (1033) are not supported" {
		t.Fatalf("an aclitem parameter: %v", err)
	}
	// A batch.
	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	b.Queue("SELECT $1::int4 * 2", 21)
	b.Queue("SHOW DateStyle")
	br := c.SendBatch(ctx, b)
	var one, two int
	var style string
	if err := br.QueryRow().Scan(&one); err != nil {
		t.Fatal(err)
	}
	if err := br.QueryRow().Scan(&two); err != nil {
		t.Fatal(err)
	}
	if err := br.QueryRow().Scan(&style); err != nil {
		t.Fatal(err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if one != 1 || two != 42 || style != "ISO, MDY" {
		t.Fatalf("batch: %d %d %q", one, two, style)
	}
}

// TestStartupClientEncoding: asyncpg's startup packet sends
// client_encoding as 'utf-8', quotes included, which PostgreSQL accepts
// as UTF8.
func TestStartupClientEncoding(t *testing.T) {
	addr := startServer(t, Options{})
	c := connect(t, "postgres://cellar@"+addr+"/cellar?sslmode=disable&client_encoding=%27utf-8%27")
	if got := c.PgConn().ParameterStatus("client_encoding"); got != "UTF8" {
		t.Fatalf("client_encoding = %q", got)
	}
}

func TestCancelAndStatementTimeout(t *testing.T) {
	addr := startServer(t, Options{})
	ctx := context.Background()
	c := connect(t, "postgres://cellar@"+addr+"/cellar?sslmode=disable")
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := c.Exec(ctx, "SELECT pg_sleep(30)")
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if sqlCode(err) != "57014" || !strings.Contains(err.Error(), "user request") {
			t.Fatalf("canceled statement: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the cancel did not end the statement after %v", time.Since(start))
	}
	if _, err := c.Exec(ctx, "SET statement_timeout = 100"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT pg_sleep(30)"); sqlCode(err) != "57014" || !strings.Contains(err.Error(), "statement timeout") {
		t.Fatalf("statement timeout: %v", err)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after a timeout: %v", err)
	}
}

func TestLimits(t *testing.T) {
	addr := startServer(t, Options{MaxConns: 1, MaxMessageSize: 1 << 10})
	ctx := context.Background()
	c := connect(t, "postgres://cellar@"+addr+"/cellar?sslmode=disable")
	if _, err := pgx.Connect(ctx, "postgres://cellar@"+addr+"/cellar?sslmode=disable"); sqlCode(err) != "53300" {
		t.Fatalf("a connection over the limit: %v", err)
	}
	if _, err := c.Exec(ctx, "SELECT '"+strings.Repeat("x", 2<<10)+"'"); err == nil {
		t.Fatal("an oversized message was accepted")
	}
	// The startup packet is checked before anything else.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte{0, 0, 0x40, 0, 0, 3, 0, 0})
	buf := make([]byte, 512)
	n, _ := nc.Read(buf)
	if !strings.Contains(string(buf[:n]), "invalid length of startup packet") {
		t.Fatalf("oversized startup packet: %q", buf[:n])
	}
	// Protocol 2.0 is refused.
	nc2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	nc2.Write([]byte{0, 0, 0, 9, 0, 2, 0, 0, 0})
	n, _ = nc2.Read(buf)
	if !strings.Contains(string(buf[:n]), "unsupported frontend protocol 2.0") {
		t.Fatalf("protocol 2.0: %q", buf[:n])
	}
}

func TestIdleSessionTimeout(t *testing.T) {
	addr := startServer(t, Options{})
	ctx := context.Background()
	c := connect(t, "postgres://cellar@"+addr+"/cellar?sslmode=disable")
	if _, err := c.Exec(ctx, "SET idle_session_timeout = 100"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("an idle session outlived its timeout")
	}
}

// selfSigned returns a TLS config with a fresh certificate for 127.0.0.1.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cellar"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func TestAuthentication(t *testing.T) {
	users := &FileUsers{Path: filepath.Join(t.TempDir(), "users.json")}
	alice, err := NewUser("alice", "s3cret", false, true)
	if err != nil {
		t.Fatal(err)
	}
	bob, _ := NewUser("bob", "hunter2", false, false) // SCRAM only
	if err := users.Put(alice); err != nil {
		t.Fatal(err)
	}
	if err := users.Put(bob); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		method string
		tls    bool
	}{{MethodSCRAM, false}, {MethodSCRAM, true}, {MethodMD5, false}, {MethodPassword, true}} {
		t.Run(fmt.Sprintf("%s/tls=%v", c.method, c.tls), func(t *testing.T) {
			opts := Options{Users: users, Rules: []Rule{{Source: "all", Method: c.method}}}
			ssl := "disable"
			if c.tls {
				opts.TLS, ssl = selfSigned(t), "require"
			}
			addr := startServer(t, opts)
			url := func(user, pw string) string {
				return fmt.Sprintf("postgres://%s:%s@%s/cellar?sslmode=%s", user, pw, addr, ssl)
			}
			conn := connect(t, url("alice", "s3cret"))
			var n int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if c.tls && !conn.PgConn().Conn().(*tls.Conn).ConnectionState().HandshakeComplete {
				t.Fatal("not encrypted")
			}
			if c.method == MethodMD5 { // SCRAM-only users get SCRAM under md5
				connect(t, url("bob", "hunter2"))
			}
			for _, bad := range []string{url("alice", "wrong"), url("nobody", "s3cret")} {
				if _, err := pgx.Connect(ctx, bad); sqlCode(err) != "28P01" {
					t.Fatalf("%s: %v", bad, err)
				}
			}
		})
	}
	t.Run("password needs TLS", func(t *testing.T) {
		addr := startServer(t, Options{Users: users, Rules: []Rule{{Source: "all", Method: MethodPassword}}})
		if _, err := pgx.Connect(ctx, "postgres://alice:s3cret@"+addr+"/cellar?sslmode=disable"); sqlCode(err) != "28000" {
			t.Fatalf("cleartext password without TLS: %v", err)
		}
	})
	t.Run("tls required", func(t *testing.T) {
		addr := startServer(t, Options{TLS: selfSigned(t), TLSRequired: true})
		if _, err := pgx.Connect(ctx, "postgres://cellar@"+addr+"/cellar?sslmode=disable"); sqlCode(err) != "28000" {
			t.Fatalf("plaintext with TLS required: %v", err)
		}
		connect(t, "postgres://cellar@"+addr+"/cellar?sslmode=require")
	})
	t.Run("demo rules", func(t *testing.T) {
		addr := startServer(t, Options{Users: users})
		connect(t, "postgres://cellar@"+addr+"/cellar?sslmode=disable")       // trusted on loopback
		connect(t, "postgres://alice:s3cret@"+addr+"/cellar?sslmode=disable") // SCRAM
		if _, err := pgx.Connect(ctx, "postgres://cellar@"+addr+"/other?sslmode=disable"); sqlCode(err) != "28P01" {
			t.Fatalf("user cellar on another database goes through SCRAM: %v", err)
		}
	})
}
