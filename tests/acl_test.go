package tests

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestACLsAgainstDemo runs cellar demo and checks per-family access
// control end to end: a user made with cellar admin, GRANT and REVOKE
// through pgwire (42501 when denied, a revoke taking effect within one
// Chubby lease), a Bigtable API token naming the same principal
// (PermissionDenied), and kv calls without the cluster's secret
// (Unauthenticated).
func TestACLsAgainstDemo(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	d := startDemo(t, bin, data)
	defer d.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	secretFile := filepath.Join(data, "secret")

	admin := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"admin"}, args...)...)
		cmd.Env = append(cmd.Environ(), "CELLAR_ADMIN_CHUBBY="+d.chubby, "CELLAR_ADMIN_SECRET_FILE="+secretFile)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustAdmin := func(stdin string, args ...string) string {
		t.Helper()
		out, err := admin(stdin, args...)
		if err != nil {
			t.Fatalf("cellar admin %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	su, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	run := func(c *pgx.Conn, sql string) error {
		_, err := c.Exec(ctx, sql)
		return err
	}
	for _, q := range []string{
		`CREATE TABLE t (_key TEXT PRIMARY KEY, "a:" TEXT, "b:" TEXT)`,
		`UPSERT INTO t (_key, "a:x", "b:x") VALUES ('k', 'A', 'B')`,
	} {
		if err := run(su, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// alice is a user of the cluster, kept in Chubby.
	mustAdmin("alice-pw\n", "user", "add", "alice")
	if out := mustAdmin("", "user", "ls"); !strings.Contains(out, "alice\tuser") {
		t.Fatalf("user ls: %q", out)
	}
	aliceURL := strings.Replace(d.pg, "cellar@", "alice:alice-pw@", 1)
	alice, err := pgx.Connect(ctx, aliceURL)
	if err != nil {
		t.Fatalf("alice connects: %v", err)
	}
	defer alice.Close(ctx)

	state := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return fmt.Sprint(err)
	}
	readA := func() error {
		var v string
		return alice.QueryRow(ctx, `SELECT "a:x" FROM t WHERE _key = 'k'`).Scan(&v)
	}
	// until polls f until want(err) or the deadline, and says how long it took.
	until := func(what string, f func() error, want func(error) bool, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			err := f()
			if want(err) {
				return time.Since(start)
			}
			if time.Since(start) > within {
				t.Fatalf("%s: still %v after %v", what, err, within)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	ok := func(err error) bool { return err == nil }
	denied := func(err error) bool { return state(err) == "42501" }

	// Only a superuser or the table's owner grants.
	if err := run(alice, `GRANT SELECT ON t TO alice`); state(err) != "42501" {
		t.Fatalf("alice grants herself: %v", err)
	}
	for q, want := range map[string]string{
		`GRANT SELECT ("a:x") ON t TO alice`:           "0A000", // privileges are per family
		`GRANT SELECT ("zz:") ON t TO alice`:           "42703",
		`GRANT SELECT ON nosuch TO alice`:              "42P01",
		`GRANT SELECT ON t TO alice WITH GRANT OPTION`: "0A000",
		`GRANT TRUNCATE ON t TO alice`:                 "0A000",
	} {
		if err := run(su, q); state(err) != want {
			t.Fatalf("%s: %v, want %s", q, err, want)
		}
	}
	if err := run(su, `GRANT SELECT ("a:") ON t TO alice`); err != nil {
		t.Fatal(err)
	}
	until("alice reads family a after GRANT", readA, ok, 15*time.Second)
	var b string
	if err := alice.QueryRow(ctx, `SELECT "b:x" FROM t WHERE _key = 'k'`).Scan(&b); !denied(err) {
		t.Fatalf("alice reads family b: %v, want 42501", err)
	}
	if err := run(alice, `SELECT * FROM t`); !denied(err) {
		t.Fatalf("alice's SELECT * reads family b: %v, want 42501", err)
	}
	upsert := func() error { return run(alice, `UPSERT INTO t (_key, "a:x") VALUES ('k2', 'mine')`) }
	if err := upsert(); !denied(err) {
		t.Fatalf("alice writes without UPDATE: %v, want 42501", err)
	}
	if err := run(su, `GRANT UPDATE ("a:") ON t TO alice`); err != nil {
		t.Fatal(err)
	}
	until("alice writes family a after GRANT UPDATE", upsert, ok, 15*time.Second)
	// UPDATE reads the columns it names; RETURNING * reads them all;
	// DELETE writes every family.
	if err := run(alice, `UPDATE t SET "a:x" = "a:x" || '!' WHERE _key = 'k'`); err != nil {
		t.Fatalf("alice updates family a: %v", err)
	}
	var ax string
	if err := su.QueryRow(ctx, `SELECT "a:x" FROM t WHERE _key = 'k'`).Scan(&ax); err != nil || ax != "A!" {
		t.Fatalf("after alice's UPDATE: %q %v", ax, err)
	}
	for _, q := range []string{
		`UPDATE t SET "a:x" = "b:x" WHERE _key = 'k'`,
		`UPDATE t SET "a:x" = 'z' WHERE "b:x" = 'B'`,
		`UPDATE t SET "a:x" = 'z' WHERE _key = 'k' RETURNING *`,
		`DELETE FROM t WHERE _key = 'k'`,
	} {
		if err := run(alice, q); !denied(err) {
			t.Fatalf("%s: %v, want 42501", q, err)
		}
	}
	if err := run(alice, `UPSERT INTO t (_key, "b:x") VALUES ('k2', 'mine')`); !denied(err) {
		t.Fatalf("alice writes family b: %v, want 42501", err)
	}
	if out := mustAdmin("", "acl", "show", "t"); !strings.Contains(out, "family a: read=alice write=alice") {
		t.Fatalf("acl show: %q", out)
	}
	// Aggregates read the marker family and the families they fold.
	var n int
	if err := alice.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("alice counts rows: %d %v", n, err)
	}
	if err := alice.QueryRow(ctx, `SELECT max("b:x") FROM t`).Scan(&b); !denied(err) {
		t.Fatalf("alice aggregates family b: %v, want 42501", err)
	}
	// The table's owner grants too.
	mustAdmin("", "acl", "owner", "t", "alice")
	if err := run(alice, `GRANT SELECT ("b:") ON t TO bob`); err != nil {
		t.Fatalf("the owner grants: %v", err)
	}
	if out := mustAdmin("", "acl", "show", "t"); !strings.Contains(out, "owner: alice") || !strings.Contains(out, "family b: read=bob write=\n") {
		t.Fatalf("acl show: %q", out)
	}
	mustAdmin("", "acl", "owner", "t", "carol")

	// The Bigtable API: alice's token names her.
	token := strings.TrimSpace(mustAdmin("", "token", "add", "alice"))
	t.Setenv("BIGTABLE_EMULATOR_HOST", d.bigtable)
	btc, err := bigtable.NewClient(ctx, "p", "i")
	if err != nil {
		t.Fatal(err)
	}
	defer btc.Close()
	tbl := btc.Open("t")
	withToken := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	if _, err := tbl.ReadRow(withToken(token), "k", bigtable.RowFilter(bigtable.FamilyFilter("b"))); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Bigtable read of family b with alice's token: %v, want PermissionDenied", err)
	}
	row, err := tbl.ReadRow(withToken(token), "k", bigtable.RowFilter(bigtable.ChainFilters(bigtable.FamilyFilter("a"), bigtable.LatestNFilter(1))))
	if err != nil || len(row["a"]) != 1 || string(row["a"][0].Value) != "A!" {
		t.Fatalf("Bigtable read of family a with alice's token: %v %v", row, err)
	}
	m := bigtable.NewMutation()
	m.Set("b", "x", bigtable.ServerTime, []byte("no"))
	if err := tbl.Apply(withToken(token), "k", m); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Bigtable write of family b with alice's token: %v, want PermissionDenied", err)
	}
	if _, err := tbl.ReadRow(withToken("cellar-wrong"), "k"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a wrong token: %v, want Unauthenticated", err)
	}
	// Anonymous on loopback: no right on t's families.
	if _, err := tbl.ReadRow(ctx, "k"); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("an anonymous read: %v, want PermissionDenied", err)
	}

	// REVOKE takes effect within one Chubby lease (12 s).
	if err := run(su, `REVOKE SELECT ("a:") ON t FROM alice`); err != nil {
		t.Fatal(err)
	}
	took := until("alice's read after REVOKE", readA, denied, 12*time.Second)
	t.Logf("the revoke took effect after %v", took)
	// cellar admin grants too.
	mustAdmin("", "grant", "-table", "t", "-family", "a", "-read", "alice")
	until("alice reads after cellar admin grant", readA, ok, 15*time.Second)
	if out, err := admin("", "grant", "-table", "nosuch", "-read", "alice"); err == nil || !strings.Contains(out, `table "nosuch" does not exist`) {
		t.Fatalf("grant on a missing table: %v %q", err, out)
	}
	if out, err := admin("", "grant", "-table", "t", "alice"); err == nil || !strings.Contains(out, "-read, -write") {
		t.Fatalf("grant without a right: %v %q", err, out)
	}

	// Users: a new password, then no user.
	mustAdmin("alice-pw2\n", "user", "passwd", "alice")
	if c, err := pgx.Connect(ctx, aliceURL); err == nil {
		c.Close(ctx)
		t.Fatal("the old password still works")
	}
	c2, err := pgx.Connect(ctx, strings.Replace(d.pg, "cellar@", "alice:alice-pw2@", 1))
	if err != nil {
		t.Fatalf("the new password: %v", err)
	}
	c2.Close(ctx)
	mustAdmin("", "user", "del", "alice")
	if out, err := admin("", "user", "del", "alice"); err == nil || !strings.Contains(out, `no user "alice"`) {
		t.Fatalf("deleting a missing user: %v %q", err, out)
	}
	if out := mustAdmin("", "token", "ls"); !strings.Contains(out, "alice\t1 token(s)") {
		t.Fatalf("token ls: %q", out)
	}
	mustAdmin("", "token", "rm", "alice")
	if _, err := tbl.ReadRow(withToken(token), "k"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a deleted token: %v, want Unauthenticated", err)
	}

	// kv calls without the cluster's secret are Unauthenticated.
	out, err := exec.Command(bin, "kv", "get", "-chubby", d.chubby, "-secret", "wrong", "t", "k").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Unauthenticated") {
		t.Fatalf("kv get with a wrong secret: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "table", "ls", "-chubby", d.chubby, "-secret", "wrong").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Unauthenticated") {
		t.Fatalf("table ls with a wrong secret: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "kv", "get", "-chubby", d.chubby, "t", "k").CombinedOutput(); err != nil {
		t.Fatalf("kv get with the demo's secret: %v\n%s", err, out)
	}
}
