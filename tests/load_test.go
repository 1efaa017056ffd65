package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
)

// itemsCSV writes n rows of the items table as CSV, from row first on.
func itemsCSV(t *testing.T, path string, n int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("_key,info:name,info:qty,info:price,info:ok,info:day\n")
	for i := range n {
		// A quoted name with a comma and a doubled quote, as CSV allows.
		fmt.Fprintf(&b, "item%06d,\"name, \"\"%d\"\"\",%d,%d.5,%t,2024-01-%02d\n", i, i, i, i, i%2 == 0, i%28+1)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadCSVAndJSONLines loads 20,000 CSV rows and 5,000 JSON lines
// with cellar load into SQL tables of a running demo and reads them back
// through SQL, typed; a load killed with SIGKILL and one stopped by
// -limit both resume to every row exactly once (one version of each
// cell); bad lines stop the load with file:line, or are counted with
// -skip-bad.
func TestLoadCSVAndJSONLines(t *testing.T) {
	bin := buildCellar(t)
	data := t.TempDir()
	d := startDemo(t, bin, data)
	secret, err := os.ReadFile(filepath.Join(data, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	db, err := pgx.Connect(ctx, d.pg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	for _, table := range []string{"items", "items2", "items3"} {
		if _, err := db.Exec(ctx, `CREATE TABLE `+table+` (_key TEXT PRIMARY KEY, "info:name" TEXT, "info:qty" BIGINT,
			"info:price" DOUBLE PRECISION, "info:ok" BOOLEAN, "info:day" DATE)`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, `CREATE TABLE events (_key TEXT PRIMARY KEY, "e:kind" TEXT, "e:n" INTEGER, "e:doc" JSONB, "raw:" BYTEA)`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	load := func(args ...string) (string, string, int) {
		return cliRun(t, bin, append([]string{"load", "-chubby", d.chubby}, args...)...)
	}
	const n = 20000
	checkItems := func(table string) {
		t.Helper()
		var count, sumQty int64
		var sumPrice float64
		var oks int64
		if err := db.QueryRow(ctx, `SELECT count(*), sum("info:qty"), sum("info:price") FROM `+table).Scan(&count, &sumQty, &sumPrice); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE "info:ok"`).Scan(&oks); err != nil {
			t.Fatal(err)
		}
		wantQty := int64(n) * (n - 1) / 2
		if count != n || sumQty != wantQty || sumPrice != float64(wantQty)+0.5*n || oks != n/2 {
			t.Fatalf("%s: count %d, sum(qty) %d, sum(price) %v, ok %d; want %d, %d, %v, %d", table, count, sumQty, sumPrice, oks, n, wantQty,
				float64(wantQty)+0.5*n, n/2)
		}
		var name string
		var day time.Time
		if err := db.QueryRow(ctx, `SELECT "info:name", "info:day" FROM `+table+` WHERE _key = 'item012345'`).Scan(&name, &day); err != nil {
			t.Fatal(err)
		}
		if name != `name, "12345"` || day.Format("2006-01-02") != fmt.Sprintf("2024-01-%02d", 12345%28+1) {
			t.Fatalf("%s: item012345 is %q on %v", table, name, day)
		}
	}

	// 20,000 CSV rows.
	csvPath := filepath.Join(dir, "items.csv")
	itemsCSV(t, csvPath, n)
	out, errOut, code := load("-table", "items", csvPath)
	if code != 0 || !strings.Contains(out, "loaded 20000 rows") || !strings.Contains(errOut, "rows/s") || !strings.Contains(errOut, "ETA") {
		t.Fatalf("load: exit %d\n%s%s", code, out, errOut)
	}
	checkItems("items")
	if _, err := os.Stat(csvPath + ".checkpoint"); !os.IsNotExist(err) {
		t.Fatalf("a finished load left its checkpoint: %v", err)
	}

	// 5,000 JSON lines, with nulls, numbers, objects and a raw family.
	var jb strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&jb, `{"_key":"ev%05d","e:kind":"k%d","e:n":%d,"e:doc":{"i":%d,"tags":["a","b"]},"raw:blob":"\\x%02x","e:none":null}`+"\n", i, i%3, i, i, i%256)
		if i == 100 {
			jb.WriteString("\n") // blank lines are skipped
		}
	}
	jsonPath := filepath.Join(dir, "events.jsonl")
	// Family e declares typed columns only, so e:none is no column.
	os.WriteFile(jsonPath, []byte(jb.String()), 0o644)
	out, errOut, code = load("-table", "events", "-batch", "200", "-format", "jsonl", jsonPath)
	if code == 0 {
		t.Fatalf("a column of no family loaded: %s%s", out, errOut)
	}
	if !strings.Contains(errOut, "events.jsonl:1:") || !strings.Contains(errOut, `no column "e:none"`) {
		t.Fatalf("unknown column: exit %d %q", code, errOut)
	}
	os.Remove(jsonPath + ".checkpoint")
	os.WriteFile(jsonPath, []byte(strings.ReplaceAll(jb.String(), `,"e:none":null`, "")), 0o644)
	out, errOut, code = load("-table", "events", "-batch", "200", jsonPath)
	if code != 0 || !strings.Contains(out, "loaded 5000 rows") {
		t.Fatalf("load jsonl: exit %d\n%s%s", code, out, errOut)
	}
	var count, sumN int64
	var doc string
	var blob []byte
	if err := db.QueryRow(ctx, `SELECT count(*), sum("e:n") FROM events`).Scan(&count, &sumN); err != nil {
		t.Fatal(err)
	}
	if count != 5000 || sumN != 5000*4999/2 {
		t.Fatalf("events: %d rows, sum %d", count, sumN)
	}
	if err := db.QueryRow(ctx, `SELECT "e:doc"::text, "raw:blob" FROM events WHERE _key = 'ev00300'`).Scan(&doc, &blob); err != nil {
		t.Fatal(err)
	}
	if doc != `{"i": 300, "tags": ["a", "b"]}` || len(blob) != 1 || blob[0] != 300%256 {
		t.Fatalf("ev00300: doc %q, blob %x", doc, blob)
	}

	// Killed mid-way with SIGKILL, then resumed: small batches, one at a
	// time, keep the load running long enough to be killed.
	svc := &coordlock.Service{Client: coordclient.Options{Addrs: []string{d.chubby}, Principal: "test"}}
	sess, err := svc.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	kv := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}, Secret: strings.TrimSpace(string(secret))})
	defer kv.Close()
	killPath := filepath.Join(dir, "kill.csv")
	itemsCSV(t, killPath, n)
	cmd := exec.Command(bin, "load", "-chubby", d.chubby, "-table", "items2", "-batch", "5", "-parallel", "1", killPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	killed := false
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && !killed {
		select {
		case <-exited:
			t.Fatal("the load finished before it could be killed")
		default:
		}
		var cp struct{ Rows int64 }
		data, err := os.ReadFile(killPath + ".checkpoint")
		if err == nil && json.Unmarshal(data, &cp) == nil && cp.Rows >= 1000 {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
			t.Logf("killed the load at checkpoint %s", strings.TrimSpace(string(data)))
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	<-exited
	if !killed {
		t.Fatal("the load wrote no checkpoint with rows in it")
	}
	out, errOut, code = load("-table", "items2", killPath)
	if code != 1 || !strings.Contains(errOut, "continue it with -resume") {
		t.Fatalf("a load over a checkpoint without -resume: exit %d %q", code, errOut)
	}
	out, errOut, code = load("-table", "items2", "-resume", killPath)
	if code != 0 || !strings.Contains(out, "loaded 20000 rows") {
		t.Fatalf("resumed load: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("resumed: %s", out)
	checkItems("items2")
	checkOneVersion := func(table string) {
		t.Helper()
		sc := kv.Scan(ctx, table, model.RowRange{}, kvclient.Filter{}, 0)
		rows := 0
		for sc.Next() {
			rows++
			// The marker cell and five columns, each exactly once.
			if cells := sc.Row().Cells; len(cells) != 6 {
				t.Fatalf("%s: row %q has %d cells, want 6: a replayed row added versions", table, sc.Row().Key, len(cells))
			}
		}
		if err := sc.Err(); err != nil || rows != n {
			t.Fatalf("%s: %d rows, %v", table, rows, err)
		}
	}
	checkOneVersion("items2")

	// Stopped by -limit, then resumed.
	limitPath := filepath.Join(dir, "limit.csv")
	itemsCSV(t, limitPath, n)
	out, errOut, code = load("-table", "items3", "-limit", "7000", "-batch", "300", limitPath)
	if code != 0 || !strings.Contains(out, "stopped after 7000 rows") {
		t.Fatalf("load -limit: exit %d\n%s%s", code, out, errOut)
	}
	var partial int64
	db.QueryRow(ctx, `SELECT count(*) FROM items3`).Scan(&partial)
	if partial != 7000 {
		t.Fatalf("after -limit 7000: %d rows", partial)
	}
	out, errOut, code = load("-table", "items3", "-resume", limitPath)
	if code != 0 || !strings.Contains(out, "loaded 20000 rows") {
		t.Fatalf("resume after -limit: exit %d\n%s%s", code, out, errOut)
	}
	checkItems("items3")
	checkOneVersion("items3")

	// Bad lines: the load stops at the first with file:line; -skip-bad
	// counts them and goes on.
	badPath := filepath.Join(dir, "bad.csv")
	os.WriteFile(badPath, []byte("_key,info:qty\na,1\nb,2\nc,3\nd,lots\ne,5\n\"f,6\n"), 0o644)
	out, errOut, code = load("-table", "items", "-key", "_key", badPath)
	if code != 1 || !strings.Contains(errOut, "bad.csv:5: column info:qty") || !strings.Contains(errOut, "invalid input syntax for type bigint") {
		t.Fatalf("bad line: exit %d\n%s%s", code, out, errOut)
	}
	os.Remove(badPath + ".checkpoint")
	out, errOut, code = load("-table", "items", "-skip-bad", badPath)
	if code != 0 || !strings.Contains(out, "loaded 4 rows") || !strings.Contains(out, "skipped 2 bad lines") || !strings.Contains(errOut, "bad.csv:7:") {
		t.Fatalf("-skip-bad: exit %d\n%s%s", code, out, errOut)
	}

	// A PostgreSQL-style table: plain column names, a VARCHAR key.
	if _, err := db.Exec(ctx, `CREATE TABLE usertable (ycsb_key VARCHAR(64) PRIMARY KEY, field0 TEXT, field1 INTEGER)`); err != nil {
		t.Fatal(err)
	}
	plainPath := filepath.Join(dir, "users.csv")
	os.WriteFile(plainPath, []byte("ycsb_key,field0,field1\nuser1,alpha,1\nuser2,,2\nuser3,gamma,\n"), 0o644)
	if out, errOut, code := load("-table", "usertable", plainPath); code != 0 || !strings.Contains(out, "loaded 3 rows") {
		t.Fatalf("load a plain table: exit %d\n%s%s", code, out, errOut)
	}
	var plain []string
	rs, err := db.Query(ctx, `SELECT ycsb_key, coalesce(field0, '-'), coalesce(field1, -1) FROM usertable ORDER BY ycsb_key`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var k, f0 string
		var f1 int64
		rs.Scan(&k, &f0, &f1)
		plain = append(plain, fmt.Sprintf("%s/%s/%d", k, f0, f1))
	}
	rs.Close()
	if strings.Join(plain, " ") != "user1/alpha/1 user2/-/2 user3/gamma/-1" {
		t.Fatalf("usertable: %v", plain)
	}

	// Usage errors exit 2.
	for _, args := range [][]string{{"-table", "items"}, {csvPath}, {"-table", "items", "-format", "xml", csvPath}, {"-table", "items", filepath.Join(dir, "x.txt")}} {
		if _, errOut, code := load(args...); code != 2 || !strings.Contains(errOut, "usage") {
			t.Errorf("cellar load %v: exit %d %q", args, code, errOut)
		}
	}
	if _, errOut, code := load("-table", "nosuch", csvPath); code != 1 || !strings.Contains(errOut, `table "nosuch" does not exist`) {
		t.Errorf("load into a missing table: exit %d %q", code, errOut)
	}
}
