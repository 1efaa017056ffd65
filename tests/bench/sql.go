package main

// The sql suite measures cellar's PostgreSQL gateway against PostgreSQL 15,
// both driven by PostgreSQL's own pgbench with the same scripts over the
// same table and data:
//
//   - load: 100k rows of 1000-byte text values, in multi-row INSERTs of
//     sqlLoadBatch rows, from sqlLoaders psql processes at once;
//   - point-select: SELECT * of one random key, prepared, 8 clients;
//   - range-100: SELECT * of 100 rows from a random key on, in key order;
//   - count: SELECT count(*) FROM bench, 2 clients;
//   - upsert: INSERT … ON CONFLICT (k) DO UPDATE of one random existing key,
//     16 clients (a durable commit each).
//
// Each side runs alone, one after the other, with its data on the same
// disk: cellar as `cellar demo` built from this checkout, PostgreSQL from
// Debian's postgresql-15, initdb'd into a fresh directory and started on a
// free port with its defaults (fsync on, synchronous_commit on). The table
// is the plain one `CREATE TABLE bench (k text PRIMARY KEY, v text)` on both
// sides, so every statement is the same text on both; see README.md for why
// not the Bigtable-shaped `_key` / "f:v" form.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sqlConfig is the sql suite's part of the command line.
type sqlConfig struct {
	rows         int
	valueSize    int
	duration     time.Duration
	quick        bool
	readClients  int
	writeClients int
	countClients int
	threads      int
	// cellar is what the "cellar" side is: "demo" (cellar demo built from
	// this checkout), "postgres" (a second PostgreSQL, to check that the
	// harness is symmetric), or a postgresql:// URL of a running endpoint.
	cellar     string
	cellarBin  string // a cellar binary to run instead of building one
	pgBin      string
	workloads  []string
	schemaName string
	schema     sqlSchema
	runs       int
}

var (
	sqlCfg       sqlConfig
	sqlWorkloads string
)

// The suite's flags register themselves, so main.go only dispatches.
func init() {
	flag.IntVar(&sqlCfg.rows, "sql-rows", 100_000, "sql: rows loaded on each side (at least 1000)")
	flag.IntVar(&sqlCfg.valueSize, "sql-value-size", 1000, "sql: bytes of each row's text value")
	flag.DurationVar(&sqlCfg.duration, "sql-duration", 10*time.Second, "sql: how long pgbench runs each workload (whole seconds)")
	flag.BoolVar(&sqlCfg.quick, "sql-quick", false, "sql: a quick run: 20000 rows and 3s per workload, unless -sql-rows or -sql-duration say otherwise")
	flag.IntVar(&sqlCfg.readClients, "sql-read-clients", 8, "sql: pgbench clients of point-select and range-100")
	flag.IntVar(&sqlCfg.writeClients, "sql-write-clients", 16, "sql: pgbench clients of upsert")
	flag.IntVar(&sqlCfg.countClients, "sql-count-clients", 2, "sql: pgbench clients of count")
	flag.IntVar(&sqlCfg.threads, "sql-threads", 2, "sql: pgbench worker threads (-j)")
	flag.StringVar(&sqlCfg.cellar, "sql-cellar", "demo", "sql: the cellar side: demo (start `cellar demo` built from this checkout), postgres (a second PostgreSQL, to test the harness), or a postgresql://user@host:port/db URL of a running endpoint (its table bench is dropped and recreated)")
	flag.StringVar(&sqlCfg.cellarBin, "sql-cellar-bin", "", "sql: with -sql-cellar demo, run this cellar binary instead of building ./ops/cmd/cellar")
	flag.StringVar(&sqlCfg.pgBin, "sql-pg-bin", "/usr/lib/postgresql/15/bin", "sql: directory of PostgreSQL's initdb, postgres, psql and pgbench (Debian's postgresql-15)")
	flag.StringVar(&sqlCfg.schemaName, "sql-schema", "plain", "sql: the table: plain (k text PRIMARY KEY, v text) or family (_key text PRIMARY KEY, \"f:v\" text, cellar's Bigtable-shaped form; its upsert runs in pgbench's simple mode)")
	flag.StringVar(&sqlWorkloads, "sql-workloads", strings.Join(sqlWorkloadNames(), ","), "sql: comma-separated workloads (the load always runs)")
}

const (
	// sqlKeyBase makes every key 16 decimal digits, so that text order is
	// numeric order and pgbench's integer variables are keys as they are.
	sqlKeyBase   = 1_000_000_000_000_000
	sqlLoadBatch = 500 // rows per INSERT of the load
	sqlLoaders   = 4   // concurrent psql processes loading
	sqlRangeRows = 100
)

// sqlSchema is the table's shape and how the statements spell its columns.
type sqlSchema struct {
	name, create string
	key, val     string
	// upsertMode is pgbench's -M for the upsert, and keyVar and valVar how
	// its script writes the variables: the simple mode substitutes them as
	// text, so they are quoted there.
	upsertMode     string
	keyVar, valVar string
}

var sqlSchemas = map[string]sqlSchema{
	// The default: a PostgreSQL-style table, the same statements on both
	// sides in every pgbench mode.
	"plain": {name: "plain", create: "CREATE TABLE bench (k text PRIMARY KEY, v text)", key: "k", val: "v",
		upsertMode: "prepared", keyVar: ":k", valVar: ":val"},
	// cellar's Bigtable-shaped table: row key _key, column v of family f.
	// pgbench's prepared (and extended) mode turns the :v of "f:v" into a
	// parameter, so the upsert, which must name the column, runs in the
	// simple mode, where an undefined variable is left alone.
	"family": {name: "family", create: `CREATE TABLE bench (_key text PRIMARY KEY, "f:v" text)`, key: "_key", val: `"f:v"`,
		upsertMode: "simple", keyVar: "':k'", valVar: "':val'"},
}

func (sc sqlSchema) upsert(k, v string) string {
	return fmt.Sprintf("INSERT INTO bench (%s, %s) VALUES (%s, %s) ON CONFLICT (%s) DO UPDATE SET %s = excluded.%s",
		sc.key, sc.val, k, v, sc.key, sc.val, sc.val)
}

// sqlWorkload is one pgbench run.
type sqlWorkload struct {
	name string
	// what is the statement as the script has it.
	what    string
	mode    string // pgbench -M
	clients func(sqlConfig) int
	// script is the pgbench script; lo and hi are the first and last keys.
	script func(lo, hi int64) string
	// check runs the workload's statement once with literals through psql
	// and checks the answer, before pgbench runs it.
	check func(ctx context.Context, s *sqlSide, d *sqlData) error
}

func sqlWorkloadList(sc sqlSchema) []sqlWorkload {
	point := fmt.Sprintf("SELECT * FROM bench WHERE %s = :k", sc.key)
	rng := fmt.Sprintf("SELECT * FROM bench WHERE %s >= :a ORDER BY %s LIMIT %d", sc.key, sc.key, sqlRangeRows)
	upsert := sc.upsert(sc.keyVar, sc.valVar)
	return []sqlWorkload{
		{
			name: "point-select", what: point, mode: "prepared",
			clients: func(c sqlConfig) int { return c.readClients },
			script: func(lo, hi int64) string {
				return fmt.Sprintf("\\set k random(%d, %d)\n%s;\n", lo, hi, point)
			},
			check: func(ctx context.Context, s *sqlSide, d *sqlData) error {
				i := d.rows / 3
				return expectRows(ctx, s, fmt.Sprintf("SELECT * FROM bench WHERE %s = '%s'", sc.key, d.key(i)), []string{d.key(i) + "|" + d.value(i)})
			},
		},
		{
			name: "range-100", what: rng, mode: "prepared",
			clients: func(c sqlConfig) int { return c.readClients },
			script: func(lo, hi int64) string {
				return fmt.Sprintf("\\set a random(%d, %d)\n%s;\n", lo, hi-sqlRangeRows+1, rng)
			},
			check: func(ctx context.Context, s *sqlSide, d *sqlData) error {
				from := d.rows / 2
				var want []string
				for i := from; i < from+sqlRangeRows; i++ {
					want = append(want, d.key(i)+"|"+d.value(i))
				}
				return expectRows(ctx, s, fmt.Sprintf("SELECT * FROM bench WHERE %s >= '%s' ORDER BY %s LIMIT %d", sc.key, d.key(from), sc.key, sqlRangeRows), want)
			},
		},
		{
			name: "count", what: "SELECT count(*) FROM bench", mode: "prepared",
			clients: func(c sqlConfig) int { return c.countClients },
			script:  func(lo, hi int64) string { return "SELECT count(*) FROM bench;\n" },
			check: func(ctx context.Context, s *sqlSide, d *sqlData) error {
				return expectRows(ctx, s, "SELECT count(*) FROM bench", []string{strconv.Itoa(d.rows)})
			},
		},
		{
			name: "upsert", what: upsert, mode: sc.upsertMode,
			clients: func(c sqlConfig) int { return c.writeClients },
			script: func(lo, hi int64) string {
				return fmt.Sprintf("\\set k random(%d, %d)\n%s;\n", lo, hi, upsert)
			},
			check: func(ctx context.Context, s *sqlSide, d *sqlData) error {
				k := d.key(d.rows - 1)
				if _, err := s.query(ctx, sc.upsert("'"+k+"'", "'"+d.upsertValue()+"'")); err != nil {
					return err
				}
				if err := expectRows(ctx, s, fmt.Sprintf("SELECT * FROM bench WHERE %s = '%s'", sc.key, k), []string{k + "|" + d.upsertValue()}); err != nil {
					return err
				}
				return expectRows(ctx, s, "SELECT count(*) FROM bench", []string{strconv.Itoa(d.rows)})
			},
		},
	}
}

func sqlWorkloadNames() []string {
	var out []string
	for _, w := range sqlWorkloadList(sqlSchemas["plain"]) {
		out = append(out, w.name)
	}
	return out
}

// sqlData is the table's contents: row i has key sqlKeyBase+i and a text
// value of valueSize characters, half of it random letters and digits and
// half repeats, so that block compression about halves it (PostgreSQL does
// not compress values this small).
type sqlData struct {
	rows int
	size int
	buf  string
}

func newSQLData(rows, size int) *sqlData {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-"
	r := rand.New(rand.NewPCG(1, uint64(size)))
	var b strings.Builder
	for b.Len() < 1<<20+size {
		var chunk [50]byte
		for i := range chunk {
			chunk[i] = alphabet[r.IntN(len(alphabet))]
		}
		b.Write(chunk[:])
		b.Write(chunk[:])
	}
	return &sqlData{rows: rows, size: size, buf: b.String()}
}

func (d *sqlData) key(i int) string { return strconv.FormatInt(sqlKeyBase+int64(i), 10) }

func (d *sqlData) value(i int) string {
	off := (i * 7919) % (len(d.buf) - d.size)
	return d.buf[off : off+d.size]
}

// upsertValue is what the upsert workload writes: pgbench passes it as a
// variable (-D val=...), the same for every row.
func (d *sqlData) upsertValue() string { return d.value(d.rows + 1) }

// sqlResult is one workload's numbers on one side.
type sqlResult struct {
	tps     float64
	latency time.Duration // average per transaction
	txns    int64
	// serverCPU is the CPU the server used (-1: unknown), otherCores how
	// many cores other processes kept busy on average meanwhile.
	serverCPU  time.Duration
	otherCores float64
	err        error
}

// sqlTools are the PostgreSQL client programs the suite runs.
type sqlTools struct {
	psql, pgbench    string
	pgbenchVersion   string
	initdb, postgres string
}

func findSQLTools(pgBin string) (sqlTools, error) {
	find := func(name string) (string, error) {
		if p := filepath.Join(pgBin, name); isExecutable(p) {
			return p, nil
		}
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%s not found in %s or on PATH: apt-get install postgresql-15, or run make bench, which installs it", name, pgBin)
		}
		return p, nil
	}
	var t sqlTools
	var errs []error
	for _, x := range []struct {
		p    *string
		name string
	}{{&t.psql, "psql"}, {&t.pgbench, "pgbench"}, {&t.initdb, "initdb"}, {&t.postgres, "postgres"}} {
		p, err := find(x.name)
		*x.p = p
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return t, err
	}
	out, err := exec.Command(t.pgbench, "--version").Output()
	if err != nil {
		return t, fmt.Errorf("pgbench --version: %w", err)
	}
	t.pgbenchVersion = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "pgbench (PostgreSQL)"))
	return t, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// applyQuick makes -sql-quick shorten whatever was not given explicitly.
func (c *sqlConfig) applyQuick() {
	if !c.quick {
		return
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["sql-rows"] {
		c.rows = 20_000
	}
	if !set["sql-duration"] {
		c.duration = 3 * time.Second
	}
}

func (c sqlConfig) validate() error {
	switch {
	case c.rows < 1000 || c.rows > 1e14:
		return fmt.Errorf("-sql-rows %d outside [1000, 1e14]", c.rows)
	case c.valueSize < 1 || c.valueSize > 1<<20:
		return fmt.Errorf("-sql-value-size %d outside [1, 1 MiB]", c.valueSize)
	case c.duration < time.Second:
		return errors.New("-sql-duration must be at least 1s")
	case c.readClients < 1 || c.writeClients < 1 || c.countClients < 1 || c.threads < 1:
		return errors.New("-sql-read-clients, -sql-write-clients, -sql-count-clients and -sql-threads must be positive")
	case len(c.workloads) == 0:
		return errors.New("-sql-workloads: none selected")
	}
	for _, w := range c.workloads {
		if !slices.Contains(sqlWorkloadNames(), w) {
			return fmt.Errorf("-sql-workloads: unknown workload %q (have %s)", w, strings.Join(sqlWorkloadNames(), ", "))
		}
	}
	if _, ok := sqlSchemas[c.schemaName]; !ok {
		return fmt.Errorf("-sql-schema %q: want plain or family", c.schemaName)
	}
	if c.cellar != "demo" && c.cellar != "postgres" && !strings.HasPrefix(c.cellar, "postgresql://") && !strings.HasPrefix(c.cellar, "postgres://") {
		return fmt.Errorf("-sql-cellar %q: want demo, postgres or a postgresql:// URL", c.cellar)
	}
	return nil
}

// runSQLSuite starts each side in turn, loads it, runs the workloads and
// returns the report as text and as Markdown. A side or workload that
// fails is reported in its row; the others still run.
func runSQLSuite(base string, runs int) (text, md string, err error) {
	cfg := sqlCfg
	cfg.workloads = splitList(sqlWorkloads)
	cfg.runs = max(runs, 1)
	cfg.applyQuick()
	if err := cfg.validate(); err != nil {
		return "", "", err
	}
	cfg.schema = sqlSchemas[cfg.schemaName]
	tools, err := findSQLTools(cfg.pgBin)
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(base, "sql")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	data := newSQLData(cfg.rows, cfg.valueSize)

	cellarStart := func(d string) (*sqlSide, error) { return startPostgres(tools, d, "cellar", base) }
	switch {
	case cfg.cellar == "demo":
		bin, err := cfg.cellarBin, error(nil)
		if bin == "" {
			bin = filepath.Join(dir, "cellar")
			fmt.Fprintln(os.Stderr, "bench: sql: building cellar")
			// Built in the main module, with the dependency versions cellar
			// ships with.
			build := exec.Command("go", "build", "-o", bin, "./ops/cmd/cellar")
			build.Dir = filepath.Join("..", "..")
			var out bytes.Buffer
			build.Stdout, build.Stderr = &out, &out
			if err = build.Run(); err != nil {
				err = fmt.Errorf("build cellar: %v\n%s", err, tail(out.String(), 2000))
				fmt.Fprintf(os.Stderr, "bench: sql: %v\n", err)
			}
		}
		cellarStart = func(d string) (*sqlSide, error) {
			if err != nil {
				return nil, err
			}
			return startCellarDemo(tools, bin, cfg.cellarBin == "", d)
		}
	case cfg.cellar != "postgres":
		cellarStart = func(string) (*sqlSide, error) { return externalSide(tools, "cellar", cfg.cellar) }
	}
	sides := []struct {
		label string
		start func(dir string) (*sqlSide, error)
	}{
		{"cellar", cellarStart},
		{"postgres", func(d string) (*sqlSide, error) { return startPostgres(tools, d, "postgres", base) }},
	}

	all := map[string]map[string][]sqlResult{}
	info := map[string]*sqlSide{}
	for round := range cfg.runs {
		if cfg.runs > 1 {
			fmt.Fprintf(os.Stderr, "bench: sql: round %d of %d\n", round+1, cfg.runs)
		}
		for _, sd := range sides {
			if all[sd.label] == nil {
				all[sd.label] = map[string][]sqlResult{}
			}
			fmt.Fprintf(os.Stderr, "bench: sql: starting %s\n", sd.label)
			sideDir := filepath.Join(dir, fmt.Sprintf("%s-%d", sd.label, round))
			side, err := sd.start(sideDir)
			var res map[string]sqlResult
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: sql: %s failed to start: %v\n", sd.label, err)
				res = map[string]sqlResult{}
				for _, w := range append([]string{"load"}, cfg.workloads...) {
					res[w] = sqlResult{err: fmt.Errorf("start: %w", err)}
				}
				if info[sd.label] == nil {
					info[sd.label] = &sqlSide{label: sd.label}
				}
			} else {
				res = runSQLSide(side, cfg, tools, data, sideDir)
				if err := side.stop(); err != nil {
					fmt.Fprintf(os.Stderr, "bench: sql: stopping %s: %v\n", sd.label, err)
				}
				if prev := info[sd.label]; prev == nil || prev.version == "" {
					info[sd.label] = side
				}
			}
			for w, r := range res {
				all[sd.label][w] = append(all[sd.label][w], r)
			}
			os.RemoveAll(sideDir)
		}
	}
	spread := roundSpread(all) // before medianSQL sorts the runs
	results := map[string]map[string]sqlResult{}
	for label, byWorkload := range all {
		results[label] = map[string]sqlResult{}
		for w, rs := range byWorkload {
			results[label][w] = medianSQL(rs)
		}
	}
	var tb, mb bytes.Buffer
	rep := sqlReport{cfg: cfg, tools: tools, sides: info, results: results, spread: spread}
	rep.writeText(&tb)
	rep.writeMarkdown(&mb)
	var failed []string
	for _, w := range append([]string{"load"}, cfg.workloads...) {
		for _, label := range []string{"cellar", "postgres"} {
			if results[label][w].err != nil {
				failed = append(failed, label+" "+w)
			}
		}
	}
	if len(failed) > 0 {
		return tb.String(), mb.String(), fmt.Errorf("sql suite: failed: %s", strings.Join(failed, ", "))
	}
	return tb.String(), mb.String(), nil
}

// medianSQL is the run with the median tps; any failed run fails the
// workload.
func medianSQL(runs []sqlResult) sqlResult {
	for _, r := range runs {
		if r.err != nil {
			return r
		}
	}
	slices.SortFunc(runs, func(a, b sqlResult) int { return cmp.Compare(a.tps, b.tps) })
	return runs[len(runs)/2]
}

// runSQLSide creates and loads the table on a started side and runs the
// selected workloads, each after its check.
func runSQLSide(s *sqlSide, cfg sqlConfig, tools sqlTools, d *sqlData, dir string) map[string]sqlResult {
	res := map[string]sqlResult{}
	failAll := func(err error) map[string]sqlResult {
		for _, w := range cfg.workloads {
			if _, done := res[w]; !done {
				res[w] = sqlResult{err: err}
			}
		}
		return res
	}
	ctx := context.Background()
	if s.external {
		if _, err := s.query(ctx, "DROP TABLE IF EXISTS bench"); err != nil {
			res["load"] = sqlResult{err: err}
			return failAll(errors.New("no table (see load)"))
		}
	}
	if _, err := s.query(ctx, cfg.schema.create); err != nil {
		fmt.Fprintf(os.Stderr, "bench: sql: %s: %v\n", s.label, err)
		res["load"] = sqlResult{err: err}
		return failAll(errors.New("no table (see load)"))
	}
	fmt.Fprintf(os.Stderr, "bench: sql: %s: loading %d rows\n", s.label, d.rows)
	loadCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	load := s.load(loadCtx, d, cfg.schema)
	if loadCtx.Err() != nil {
		load.err = fmt.Errorf("the load did not finish within 15 minutes: %w", load.err)
	}
	cancel()
	if load.err == nil {
		load.err = expectRows(ctx, s, "SELECT count(*) FROM bench", []string{strconv.Itoa(d.rows)})
	}
	res["load"] = load
	if load.err != nil {
		fmt.Fprintf(os.Stderr, "bench: sql: %s: load failed: %v\n", s.label, load.err)
		return failAll(errors.New("load failed"))
	}
	fmt.Fprintf(os.Stderr, "bench: sql: %s: loaded in %v (%.0f rows/s)\n", s.label, time.Duration(float64(d.rows)/load.tps*float64(time.Second)).Round(time.Millisecond), load.tps)
	if s.isPostgres {
		// What a DBA does after a bulk load: set hint bits and the
		// visibility map, gather statistics, and write the dirty pages
		// out, so that no autovacuum or checkpoint lands in a workload.
		for _, q := range []string{"VACUUM ANALYZE bench", "CHECKPOINT"} {
			if _, err := s.query(ctx, q); err != nil {
				res["load"] = sqlResult{err: err}
				return failAll(errors.New("load failed"))
			}
		}
	}
	if s.afterLoad != nil {
		// The same for cellar: a major compaction (a bulk load leaves
		// the rows in memtables and in SSTables of several runs), so
		// that no flush or compaction lands in a workload.
		actx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		err := s.afterLoad(actx)
		cancel()
		if err != nil {
			res["load"] = sqlResult{err: err}
			return failAll(errors.New("load failed"))
		}
	}
	if s.dataDir != "" {
		s.diskAfterLoad, _ = dirUsage(s.dataDir)
	}
	for _, w := range sqlWorkloadList(cfg.schema) {
		if !slices.Contains(cfg.workloads, w.name) {
			continue
		}
		if err := w.check(ctx, s, d); err != nil {
			fmt.Fprintf(os.Stderr, "bench: sql: %s %s: check failed: %v\n", s.label, w.name, err)
			res[w.name] = sqlResult{err: err}
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: sql: %s %s (%d clients, %v)\n", s.label, w.name, w.clients(cfg), cfg.duration)
		r := s.pgbench(ctx, tools, w, cfg, d, dir)
		if r.err != nil {
			fmt.Fprintf(os.Stderr, "bench: sql: %s %s failed: %v\n", s.label, w.name, r.err)
		}
		res[w.name] = r
	}
	return res
}

// expectRows runs q through psql and compares its rows, each as the
// columns joined by "|", with want.
func expectRows(ctx context.Context, s *sqlSide, q string, want []string) error {
	got, err := s.query(ctx, q)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("wrong answer: %s returned %d rows, want %d%s", shorten(q, 80), len(got), len(want), firstRowNote(got))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("wrong answer: %s: row %d is %q, want %q", shorten(q, 80), i+1, shorten(got[i], 60), shorten(want[i], 60))
		}
	}
	return nil
}

func firstRowNote(rows []string) string {
	if len(rows) == 0 {
		return ""
	}
	return fmt.Sprintf(" (first: %q)", shorten(rows[0], 60))
}

// shorten cuts s to n bytes with an ellipsis, on one line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// load inserts every row in multi-row INSERTs from sqlLoaders psql
// processes, each taking every sqlLoaders-th batch. Its tps is rows per
// second; its latency the average INSERT's.
func (s *sqlSide) load(ctx context.Context, d *sqlData, sc sqlSchema) sqlResult {
	batches := (d.rows + sqlLoadBatch - 1) / sqlLoadBatch
	errs := make([]error, sqlLoaders)
	meter := startSQLMeter(s)
	var meterMu sync.Mutex
	start := time.Now()
	var wg sync.WaitGroup
	for w := range sqlLoaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := &sqlMeter{}
			defer func() { meterMu.Lock(); meter.clients += m.clients; meterMu.Unlock() }()
			errs[w] = s.psqlScript(ctx, m, func(out *bytes.Buffer, flush func() error) error {
				for b := w; b < batches; b += sqlLoaders {
					fmt.Fprintf(out, "INSERT INTO bench (%s, %s) VALUES ", sc.key, sc.val)
					for i := b * sqlLoadBatch; i < min((b+1)*sqlLoadBatch, d.rows); i++ {
						if i > b*sqlLoadBatch {
							out.WriteByte(',')
						}
						fmt.Fprintf(out, "('%s','%s')", d.key(i), d.value(i))
					}
					out.WriteString(";\n")
					if err := flush(); err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return sqlResult{err: err}
	}
	r := sqlResult{tps: float64(d.rows) / elapsed.Seconds(), txns: int64(d.rows),
		latency: elapsed * time.Duration(min(sqlLoaders, batches)) / time.Duration(batches)}
	meter.finish(&r)
	return r
}

var (
	reTPS     = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
	reLatency = regexp.MustCompile(`(?m)^latency average = ([0-9.]+) ms`)
	reTxns    = regexp.MustCompile(`(?m)^number of transactions actually processed: ([0-9]+)`)
	reFailed  = regexp.MustCompile(`(?m)^number of failed transactions: ([0-9]+)`)
)

// pgbench runs one workload's script for the configured duration.
func (s *sqlSide) pgbench(ctx context.Context, tools sqlTools, w sqlWorkload, cfg sqlConfig, d *sqlData, dir string) sqlResult {
	script := filepath.Join(dir, w.name+".pgbench")
	if err := os.WriteFile(script, []byte(w.script(sqlKeyBase, sqlKeyBase+int64(d.rows)-1)), 0o644); err != nil {
		return sqlResult{err: err}
	}
	clients := w.clients(cfg)
	secs := max(int(cfg.duration.Round(time.Second)/time.Second), 1)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+2*time.Minute)
	defer cancel()
	args := []string{"-n", "-M", w.mode, "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(cfg.threads, clients)),
		"-T", strconv.Itoa(secs), "-f", script, "-D", "val=" + d.upsertValue(),
		"-h", s.host, "-p", s.port, "-U", s.user, s.db}
	cmd := exec.CommandContext(ctx, tools.pgbench, args...)
	cmd.Env = sqlClientEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	meter := startSQLMeter(s)
	err := cmd.Run()
	meter.addClient(cmd.ProcessState)
	if ctx.Err() != nil {
		return sqlResult{err: fmt.Errorf("pgbench did not finish within %v of its -T %d (a statement hangs?)", 2*time.Minute, secs)}
	}
	if err != nil {
		return sqlResult{err: fmt.Errorf("pgbench: %v: %s", err, pgbenchError(stderr.String()))}
	}
	out := stdout.String()
	m, l, n := reTPS.FindStringSubmatch(out), reLatency.FindStringSubmatch(out), reTxns.FindStringSubmatch(out)
	if m == nil || l == nil || n == nil {
		return sqlResult{err: fmt.Errorf("cannot read pgbench's output: %s", shorten(out, 300))}
	}
	if f := reFailed.FindStringSubmatch(out); f != nil && f[1] != "0" {
		return sqlResult{err: fmt.Errorf("pgbench: %s failed transactions: %s", f[1], pgbenchError(stderr.String()))}
	}
	tps, _ := strconv.ParseFloat(m[1], 64)
	lat, _ := strconv.ParseFloat(l[1], 64)
	txns, _ := strconv.ParseInt(n[1], 10, 64)
	if txns == 0 {
		return sqlResult{err: errors.New("pgbench finished no transaction")}
	}
	r := sqlResult{tps: tps, latency: time.Duration(lat * float64(time.Millisecond)), txns: txns}
	meter.finish(&r)
	return r
}

// pgbenchError is the first error pgbench reported, on one line.
func pgbenchError(stderr string) string {
	var lines []string
	for _, line := range strings.Split(stderr, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	for i, line := range lines {
		if strings.Contains(line, "error:") {
			msg := line
			// The server's DETAIL or LINE follows on the next lines.
			if i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "pgbench:") {
				msg += " " + lines[i+1]
			}
			return shorten(strings.TrimPrefix(msg, "pgbench: error: "), 400)
		}
	}
	return shorten(strings.Join(lines, " "), 400)
}
