package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgtypes"
)

// cellar load: bulk load of CSV or JSON lines into a table, in batches of
// row mutations sent by a few workers at once.
//
// Resuming: the checkpoint file records the byte offset of the input up
// to which every row is acknowledged (batches finish out of order, so it
// is the end of the longest finished prefix) and the timestamp every cell
// of the load carries. A resumed load starts at that offset with that
// timestamp, so a row written again overwrites its own cells instead of
// adding versions: replaying is harmless.

const loadUsage = "usage: cellar load -table TABLE [-format csv|jsonl] [-key COLUMN] [-batch N] [-parallel N] [-resume] [-checkpoint FILE] [-skip-bad] [-limit N] FILE"

// loadOptions are cellar load's settings.
type loadOptions struct {
	table, format, key, checkpoint, file string
	batch, parallel                      int
	resume, skipBad                      bool
	limit                                int64
}

// checkpoint is what the checkpoint file holds.
type checkpoint struct {
	Input  string `json:"input"`
	Table  string `json:"table"`
	Format string `json:"format"`
	// Offset: every row of the input before it is acknowledged.
	Offset int64 `json:"offset"`
	Rows   int64 `json:"rows"`
	Bad    int64 `json:"bad"`
	// Timestamp (µs) is every cell's: a replayed row overwrites itself.
	Timestamp int64 `json:"timestamp"`
}

func runLoad(args []string, env Env) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var cf clusterFlags
	cf.register(fs)
	var o loadOptions
	fs.StringVar(&o.table, "table", "", "the table to load into (required)")
	fs.StringVar(&o.format, "format", "", "csv or jsonl (default: from the file's extension)")
	fs.StringVar(&o.key, "key", "", "the column that holds the row key (default: _key, or a SQL table's key column)")
	fs.IntVar(&o.batch, "batch", 500, "rows per batch of mutations")
	fs.IntVar(&o.parallel, "parallel", 4, "batches in flight at once")
	fs.BoolVar(&o.resume, "resume", false, "continue a stopped load from its checkpoint")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "the checkpoint file (default: FILE.checkpoint)")
	fs.BoolVar(&o.skipBad, "skip-bad", false, "count bad lines and go on instead of stopping at the first")
	fs.Int64Var(&o.limit, "limit", 0, "stop after this many rows of this run, keeping the checkpoint (0: no limit)")
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(env.Stdout)
			fmt.Fprintln(env.Stdout, loadUsage)
			parseFlags(fs, []string{"-h"}, env, "CELLAR_LOAD")
			return 0
		}
	}
	pos, err := parseFlags(fs, args, env, "CELLAR_LOAD")
	if err != nil {
		fmt.Fprintln(env.Stderr, loadUsage)
		return flagExit(err)
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(env.Stderr, "cellar load: %s\n%s\n", fmt.Sprintf(format, a...), loadUsage)
		return 2
	}
	switch {
	case len(pos) != 1:
		return usageErr("name one input FILE")
	case o.table == "":
		return usageErr("-table is required")
	case o.batch < 1 || o.parallel < 1:
		return usageErr("-batch and -parallel must be at least 1")
	case o.limit < 0:
		return usageErr("-limit must not be negative")
	}
	o.file = pos[0]
	if o.format == "" {
		switch strings.ToLower(filepath.Ext(o.file)) {
		case ".csv":
			o.format = "csv"
		case ".jsonl", ".ndjson", ".json":
			o.format = "jsonl"
		default:
			return usageErr("cannot tell the format of %s from its extension; give -format csv or -format jsonl", o.file)
		}
	}
	if o.format != "csv" && o.format != "jsonl" {
		return usageErr("-format %q: use csv or jsonl", o.format)
	}
	if o.checkpoint == "" {
		o.checkpoint = o.file + ".checkpoint"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := load(ctx, &cf, o, env); err != nil {
		return fail(env, "load", err)
	}
	return 0
}

// loadColumn is where one input column goes.
type loadColumn struct {
	name      string
	key       bool
	family    string
	qualifier []byte
	typ       model.ValueType
	// raw columns take the input's bytes as they are (a native table's);
	// the others parse it as their SQL type does (pgtypes.ParseText).
	raw    bool
	maxLen int // VARCHAR(n)
}

// loadTarget maps input columns to cells of a table.
type loadTarget struct {
	table   string
	def     *catalog.Table
	keyName string
	cols    map[string]*loadColumn
	ts      int64
}

func newLoadTarget(table string, schema model.Schema, keyFlag string) (*loadTarget, error) {
	def, err := catalog.FromSchema(table, schema)
	if err != nil {
		return nil, err
	}
	t := &loadTarget{table: table, def: def, cols: map[string]*loadColumn{}}
	keys := def.KeyColumns()
	if !def.RawKey() {
		return nil, fmt.Errorf("table %q has a key made of several columns or of a non-text type, which cellar load cannot encode; load it with COPY through psql instead", table)
	}
	t.keyName = keys[0].Name
	if keyFlag != "" {
		t.keyName = keyFlag
	}
	return t, nil
}

// column returns where input column name goes.
func (t *loadTarget) column(name string) (*loadColumn, error) {
	if c := t.cols[name]; c != nil {
		return c, nil
	}
	if name == t.keyName {
		c := &loadColumn{name: name, key: true}
		t.cols[name] = c
		return c, nil
	}
	col, ok := t.def.Column(name)
	if !ok || col.Key {
		var fams []string
		for _, f := range t.def.Families {
			fams = append(fams, f.Name)
		}
		if ok {
			return nil, fmt.Errorf("column %q is the table's key; name the key column with -key %s", name, name)
		}
		return nil, fmt.Errorf("table %q has no column %q; name columns family:qualifier (its families: %s) or the key %s (-key)",
			t.table, name, strings.Join(fams, ", "), t.keyName)
	}
	c := &loadColumn{name: name, family: col.Family, qualifier: []byte(col.Qualifier), typ: col.Type, raw: t.def.Native(), maxLen: col.Length}
	t.cols[name] = c
	return c, nil
}

// cell encodes one value of column c.
func (c *loadColumn) cell(v string) ([]byte, error) {
	if c.raw {
		return []byte(v), nil
	}
	if c.maxLen > 0 && utf8.RuneCountInString(v) > c.maxLen {
		return nil, fmt.Errorf("column %s: value too long for VARCHAR(%d)", c.name, c.maxLen)
	}
	x, err := pgtypes.ParseText(catalog.TypeOID(c.typ), v)
	if err != nil {
		return nil, fmt.Errorf("column %s: %v", c.name, err)
	}
	switch y := x.(type) {
	case pgtypes.Numeric:
		x = string(y)
	case time.Time:
		x = y.UTC()
	}
	b, err := model.EncodeValue(c.typ, x)
	if err != nil {
		return nil, fmt.Errorf("column %s: %v", c.name, err)
	}
	return b, nil
}

// mutation makes a row's mutation from its values by column; an absent
// or empty value (or JSON null) writes nothing, as SQL's NULL.
func (t *loadTarget) mutation(values map[*loadColumn]string) (*model.RowMutation, error) {
	m := &model.RowMutation{}
	var keyed bool
	for c, v := range values {
		if c.key {
			m.Row, keyed = []byte(v), true
		}
	}
	if !keyed || len(m.Row) == 0 {
		return nil, fmt.Errorf("no row key (column %s is missing or empty)", t.keyName)
	}
	if !t.def.Native() {
		m.Mutations = append(m.Mutations, model.SetCell(catalog.MarkerFamily, nil, t.ts, nil))
	}
	cols := make([]*loadColumn, 0, len(values))
	for c := range values {
		cols = append(cols, c)
	}
	sort.Slice(cols, func(i, j int) bool { return cols[i].name < cols[j].name })
	for _, c := range cols {
		if c.key || values[c] == "" {
			continue
		}
		b, err := c.cell(values[c])
		if err != nil {
			return nil, err
		}
		m.Mutations = append(m.Mutations, model.SetCell(c.family, c.qualifier, t.ts, b))
	}
	return m, nil
}

// record is one parsed input row, or the reason it is bad.
type record struct {
	line int64
	end  int64 // input offset after it
	mut  *model.RowMutation
	err  error
}

// reader yields records from an input from an offset on.
type reader interface {
	next() (record, bool, error) // false at the end; the error is an I/O one
}

func load(ctx context.Context, cf *clusterFlags, o loadOptions, env Env) error {
	f, err := os.Open(o.file)
	if err != nil {
		return fmt.Errorf("%w; check the path", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	cp := checkpoint{Input: o.file, Table: o.table, Format: o.format, Timestamp: time.Now().UnixMilli() * 1000}
	if data, err := os.ReadFile(o.checkpoint); err == nil {
		var old checkpoint
		if err := json.Unmarshal(data, &old); err != nil {
			return fmt.Errorf("checkpoint %s is not readable (%v); delete it to start over", o.checkpoint, err)
		}
		if !o.resume {
			return fmt.Errorf("%s exists: an earlier load of %s stopped after %d rows; continue it with -resume, or delete the checkpoint to start over",
				o.checkpoint, o.file, old.Rows)
		}
		if old.Table != o.table || old.Format != o.format {
			return fmt.Errorf("checkpoint %s is of a load into %q as %s, not %q as %s; pass the same -table and -format, or delete it",
				o.checkpoint, old.Table, old.Format, o.table, o.format)
		}
		if old.Offset > size {
			return fmt.Errorf("checkpoint %s is at byte %d but %s has only %d bytes: the input changed; delete the checkpoint to start over",
				o.checkpoint, old.Offset, o.file, size)
		}
		cp = old
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	} else if o.resume {
		fmt.Fprintf(env.Stderr, "cellar load: no checkpoint %s; starting at the beginning\n", o.checkpoint)
	}

	dctx, cancel := context.WithTimeout(ctx, cf.timeout)
	conn, err := dialMaster(dctx, cf)
	if err != nil {
		cancel()
		return err
	}
	defer conn.close()
	schema, _, err := conn.schemaOf(dctx, o.table)
	cancel()
	if err != nil {
		return (&adminDialer{c: conn, addr: conn.addr}).explain(err)
	}
	target, err := newLoadTarget(o.table, schema, o.key)
	if err != nil {
		return err
	}
	target.ts = cp.Timestamp

	var rd reader
	if o.format == "csv" {
		rd, err = newCSVReader(f, o.file, target, cp.Offset)
	} else {
		rd, err = newJSONLReader(f, o.file, target, cp.Offset)
	}
	if err != nil {
		return err
	}
	kv := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: conn.sess}, Secret: cf.secret})
	defer kv.Close()
	l := &loader{o: o, kv: kv, cp: cp, size: size, env: env, line: newProgressLine(env.Stderr, time.Now), start: time.Now(),
		startOffset: cp.Offset, startRows: cp.Rows, timeout: cf.timeout}
	return l.run(ctx, rd)
}

// loader sends batches and keeps the checkpoint.
type loader struct {
	o       loadOptions
	kv      *kvclient.Client
	env     Env
	line    *progressLine
	size    int64
	timeout time.Duration

	start                  time.Time
	startOffset, startRows int64

	mu        sync.Mutex
	cp        checkpoint
	next      int64            // the next batch to finish, in order
	finished  map[int64]*batch // finished out of order
	lastSaved time.Time
	failed    error
}

type batch struct {
	seq   int64
	recs  []record
	end   int64
	first int64 // line
	bad   int64
}

func (l *loader) run(parent context.Context, rd reader) error {
	l.finished = map[int64]*batch{}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	drawn := make(chan struct{})
	stopDrawing := make(chan struct{})
	go func() {
		defer close(drawn)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopDrawing:
				return
			case <-tick.C:
				l.line.update(l.progressText(l.snapshot()))
			}
		}
	}()
	work := make(chan *batch, l.o.parallel)
	var wg sync.WaitGroup
	for range l.o.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				if err := l.send(ctx, b); err != nil {
					l.fail(err)
					cancel()
				}
			}
		}()
	}
	readErr := l.produce(ctx, rd, work)
	close(work)
	wg.Wait()
	l.mu.Lock()
	failed := l.failed
	l.mu.Unlock()
	if err := l.save(true); err != nil && failed == nil && readErr == nil {
		return err
	}
	close(stopDrawing)
	<-drawn
	cp := l.snapshot()
	l.line.finish(l.progressText(cp))
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("interrupted after %d rows; continue with -resume (the checkpoint is %s)", cp.Rows, l.o.checkpoint)
	case failed != nil:
		return fmt.Errorf("%w\n%d rows are loaded; fix the cause and continue with -resume (the checkpoint is %s)", failed, cp.Rows, l.o.checkpoint)
	case readErr != nil:
		return fmt.Errorf("%w\n%d rows are loaded; fix the input and continue with -resume (the checkpoint is %s)", readErr, cp.Rows, l.o.checkpoint)
	}
	elapsed := time.Since(l.start)
	if l.o.limit > 0 && cp.Offset < l.size {
		fmt.Fprintf(l.env.Stdout, "stopped after %d rows of this run (-limit); %d rows loaded in all; continue with -resume\n", cp.Rows-l.startRows, cp.Rows)
		return nil
	}
	if err := os.Remove(l.o.checkpoint); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the load is complete, but its checkpoint could not be removed: %w", err)
	}
	rate := float64(cp.Rows-l.startRows) / max(elapsed.Seconds(), 1e-3)
	fmt.Fprintf(l.env.Stdout, "loaded %d rows (%s) into %s in %v (%.0f rows/s)", cp.Rows, humanBytes(l.size), l.o.table,
		elapsed.Round(time.Millisecond), rate)
	if cp.Bad > 0 {
		fmt.Fprintf(l.env.Stdout, "; skipped %d bad lines", cp.Bad)
	}
	fmt.Fprintln(l.env.Stdout)
	return nil
}

// produce reads records into batches until the input, the limit or ctx
// ends, or a bad line stops it.
func (l *loader) produce(ctx context.Context, rd reader, work chan<- *batch) error {
	var seq, rows int64
	cur := &batch{}
	flush := func() bool {
		if len(cur.recs) == 0 && cur.bad == 0 {
			return true
		}
		cur.seq = seq
		seq++
		select {
		case work <- cur:
		case <-ctx.Done():
			return false
		}
		cur = &batch{}
		return true
	}
	for {
		if l.o.limit > 0 && rows >= l.o.limit {
			break
		}
		rec, ok, err := rd.next()
		if err != nil {
			flush()
			return err
		}
		if !ok {
			break
		}
		if rec.err != nil {
			if !l.o.skipBad {
				flush()
				return rec.err
			}
			fmt.Fprintf(l.env.Stderr, "cellar load: skipped: %v\n", rec.err)
			cur.bad++
			cur.end = rec.end
			continue
		}
		cur.recs = append(cur.recs, rec)
		cur.end = rec.end
		rows++
		if len(cur.recs) >= l.o.batch && !flush() {
			return ctx.Err()
		}
	}
	if !flush() {
		return ctx.Err()
	}
	return ctx.Err()
}

// send writes a batch; each row is retried by the client while its
// tablet moves.
func (l *loader) send(ctx context.Context, b *batch) error {
	if len(b.recs) > 0 {
		ms := make([]*model.RowMutation, len(b.recs))
		for i, r := range b.recs {
			ms[i] = r.mut
		}
		bctx, cancel := context.WithTimeout(ctx, l.timeout)
		errs := l.kv.ApplyBulk(bctx, l.o.table, ms)
		cancel()
		for i, err := range errs {
			if err != nil {
				return fmt.Errorf("%s:%d: row %q was not written: %w", l.o.file, b.recs[i].line, ms[i].Row, err)
			}
		}
	}
	l.mu.Lock()
	l.finished[b.seq] = b
	for {
		nb := l.finished[l.next]
		if nb == nil {
			break
		}
		delete(l.finished, l.next)
		l.next++
		l.cp.Offset = nb.end
		l.cp.Rows += int64(len(nb.recs))
		l.cp.Bad += nb.bad
	}
	l.mu.Unlock()
	return l.save(false)
}

func (l *loader) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = err
	}
}

func (l *loader) snapshot() checkpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cp
}

// save writes the checkpoint (at most twice a second unless forced),
// through a temporary file and a rename, so a crash leaves the old one or
// the new one.
func (l *loader) save(force bool) error {
	l.mu.Lock()
	if !force && time.Since(l.lastSaved) < 500*time.Millisecond {
		l.mu.Unlock()
		return nil
	}
	l.lastSaved = time.Now()
	cp := l.cp
	data, err := json.Marshal(cp)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	tmp := l.o.checkpoint + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the checkpoint: %w", err)
	}
	if err := os.Rename(tmp, l.o.checkpoint); err != nil {
		return fmt.Errorf("write the checkpoint: %w", err)
	}
	return nil
}

// progressText is the progress bar: bytes acknowledged of the input's,
// rows per second and the time left at this run's rate.
func (l *loader) progressText(cp checkpoint) string {
	elapsed := max(time.Since(l.start).Seconds(), 1e-3)
	rate := float64(cp.Rows-l.startRows) / elapsed
	byteRate := float64(cp.Offset-l.startOffset) / elapsed
	eta := "?"
	if byteRate > 0 {
		eta = (time.Duration(float64(l.size-cp.Offset)/byteRate) * time.Second).Round(time.Second).String()
	}
	pct := int64(100)
	if l.size > 0 {
		pct = 100 * cp.Offset / l.size
	}
	text := fmt.Sprintf("load %s: %s %3d%%  %d rows  %.0f rows/s  %s / %s  ETA %s", l.o.table, bar(cp.Offset, l.size, 20), pct,
		cp.Rows, rate, humanBytes(cp.Offset), humanBytes(l.size), eta)
	if cp.Bad > 0 {
		text += fmt.Sprintf("  %d bad", cp.Bad)
	}
	return text
}

// csvReader reads CSV with a header row naming the columns.
type csvReader struct {
	r     *csv.Reader
	file  string
	cols  []*loadColumn
	t     *loadTarget
	base  int64 // input offset the reader started at
	lines int64 // lines before base
}

func newCSVReader(f *os.File, name string, t *loadTarget, offset int64) (*csvReader, error) {
	hr := csv.NewReader(bufio.NewReader(f))
	hr.ReuseRecord = true
	header, err := hr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s is empty: a CSV input starts with a header row naming the columns", name)
		}
		return nil, fmt.Errorf("%s:1: the header row: %v", name, err)
	}
	c := &csvReader{file: name, t: t}
	hasKey := false
	for _, h := range header {
		col, err := t.column(strings.TrimPrefix(h, "\ufeff"))
		if err != nil {
			return nil, fmt.Errorf("%s:1: %v", name, err)
		}
		hasKey = hasKey || col.key
		c.cols = append(c.cols, col)
	}
	if !hasKey {
		return nil, fmt.Errorf("%s:1: the header has no key column %q; name it with -key", name, t.keyName)
	}
	if offset == 0 {
		offset = hr.InputOffset()
	}
	lines, err := countLines(f, offset)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	c.r = csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	c.r.FieldsPerRecord = len(header)
	c.base, c.lines = offset, lines
	return c, nil
}

// countLines counts the newlines in the first n bytes of f.
func countLines(f *os.File, n int64) (int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<16)
	var lines, read int64
	for read < n {
		k, err := f.Read(buf[:min(int64(len(buf)), n-read)])
		lines += int64(bytes.Count(buf[:k], []byte{'\n'}))
		read += int64(k)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
	}
	return lines, nil
}

func (c *csvReader) next() (record, bool, error) {
	fields, err := c.r.Read()
	if errors.Is(err, io.EOF) {
		return record{}, false, nil
	}
	end := c.base + c.r.InputOffset()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return record{line: c.lines + int64(pe.StartLine), end: end,
				err: fmt.Errorf("%s:%d: %v", c.file, c.lines+int64(pe.StartLine), pe.Err)}, true, nil
		}
		return record{}, false, fmt.Errorf("read %s: %w", c.file, err)
	}
	line, _ := c.r.FieldPos(0)
	rec := record{line: c.lines + int64(line), end: end}
	values := make(map[*loadColumn]string, len(fields))
	for i, v := range fields {
		values[c.cols[i]] = v
	}
	rec.mut, rec.err = c.t.mutation(values)
	if rec.err != nil {
		rec.err = fmt.Errorf("%s:%d: %v", c.file, rec.line, rec.err)
	}
	return rec, true, nil
}

// jsonlReader reads one JSON object per line.
type jsonlReader struct {
	r      *bufio.Reader
	file   string
	t      *loadTarget
	offset int64
	line   int64
}

func newJSONLReader(f *os.File, name string, t *loadTarget, offset int64) (*jsonlReader, error) {
	lines, err := countLines(f, offset)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return &jsonlReader{r: bufio.NewReaderSize(f, 1<<16), file: name, t: t, offset: offset, line: lines}, nil
}

func (j *jsonlReader) next() (record, bool, error) {
	for {
		data, err := j.r.ReadBytes('\n')
		if len(data) == 0 && errors.Is(err, io.EOF) {
			return record{}, false, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return record{}, false, fmt.Errorf("read %s: %w", j.file, err)
		}
		j.offset += int64(len(data))
		j.line++
		text := bytes.TrimSpace(data)
		if len(text) == 0 {
			continue
		}
		rec := record{line: j.line, end: j.offset}
		rec.mut, rec.err = j.parse(text)
		if rec.err != nil {
			rec.err = fmt.Errorf("%s:%d: %v", j.file, j.line, rec.err)
		}
		return rec, true, nil
	}
}

func (j *jsonlReader) parse(text []byte) (*model.RowMutation, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if d.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	values := make(map[*loadColumn]string, len(obj))
	for name, v := range obj {
		col, err := j.t.column(name)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case nil:
			continue
		case string:
			values[col] = x
		case json.Number:
			values[col] = x.String()
		case bool:
			values[col] = fmt.Sprint(x)
		default:
			b, err := json.Marshal(x)
			if err != nil {
				return nil, err
			}
			values[col] = string(b)
		}
	}
	return j.t.mutation(values)
}
