package query

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// COPY table [(columns)] FROM STDIN, in text or CSV format. The wire
// layer hands over the data as it arrives (CopyIn.Data) and ends it
// (CopyIn.Done); rows are written as INSERT writes them, each a
// check-and-mutate that fails with 23505 if the row exists. Like every
// multi-row statement, COPY is atomic per row, not as a whole: if it fails
// part-way, the rows before the failure stay. Outside a transaction up to
// writeParallel rows are in flight at once; inside one they are buffered.

// CopyIn receives COPY FROM STDIN data: text and CSV through Data, and
// binary rows, which the wire layer decodes by ColumnOIDs, through Row.
type CopyIn struct {
	Format     string // "text", "csv" or "binary"
	Columns    int
	ColumnOIDs []uint32

	s       *Session
	t       *target
	cols    []int
	opts    *CopyOut
	style   pgtypes.Style // the session's DateStyle and TimeZone, for dates
	header  bool
	pending []byte
	line    int
	// par runs the rows' writes (made at the first row: it needs the
	// COPY's context).
	par *parallel
}

func (s *Session) compileCopyFrom(ctx context.Context, st *Statement, c *pg.CopyStmt, opts *CopyOut) (*Statement, error) {
	if c.Relation == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "COPY FROM needs a table")
	}
	if c.WhereClause != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "COPY FROM … WHERE is not supported")
	}
	ins := &pg.InsertStmt{Relation: c.Relation}
	for _, a := range c.Attlist {
		ins.Cols = append(ins.Cols, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: a.GetString_().GetSval(), Location: -1}}})
	}
	t, err := s.userTarget(ctx, c.Relation, ins, false)
	if err != nil {
		return nil, err
	}
	var cols []int
	if len(c.Attlist) == 0 {
		// Every column the table shows, as COPY TO writes them.
		for i := range t.def.Visible() {
			cols = append(cols, i)
		}
	}
	for _, a := range c.Attlist {
		i, err := t.column(a.GetString_().GetSval(), -1)
		if err != nil {
			return nil, err
		}
		cols = append(cols, i)
	}
	st.kind = "COPY"
	st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
		in := &CopyIn{Format: opts.Format, Columns: len(cols), s: s, t: t, cols: cols, opts: opts, header: opts.Header,
			style: pgtypes.StyleFrom(s.Setting)}
		for _, idx := range cols {
			in.ColumnOIDs = append(in.ColumnOIDs, t.codec.cols[idx].OID())
		}
		return &Result{Tag: "COPY", CopyIn: in}, nil
	}
	return st, nil
}

// Data takes the next piece of the data; an error ends the COPY (the
// wire layer then drops the rest).
func (c *CopyIn) Data(ctx context.Context, b []byte) error {
	ctx = c.s.asUser(ctx)
	c.pending = append(c.pending, b...)
	for {
		rec, rest, ok := c.nextRecord(false)
		if !ok {
			return c.failed()
		}
		c.pending = rest
		if err := c.record(ctx, rec); err != nil {
			return err
		}
	}
}

// Done ends the data and waits for the rows in flight; it returns the
// command tag.
func (c *CopyIn) Done(ctx context.Context) (string, error) {
	ctx = c.s.asUser(ctx)
	for len(c.pending) > 0 {
		rec, rest, ok := c.nextRecord(true)
		if !ok {
			break
		}
		c.pending = rest
		if err := c.record(ctx, rec); err != nil {
			c.Abort()
			return "", err
		}
	}
	n, err := c.writer(ctx).wait()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("COPY %d", n), nil
}

// Abort waits for the rows in flight after the client gave up.
func (c *CopyIn) Abort() {
	if c.par != nil {
		c.par.wait()
	}
}

// writer returns the COPY's row writer: outside a transaction up to
// writeParallel rows in flight, inside one buffered in order.
func (c *CopyIn) writer(ctx context.Context) *parallel {
	if c.par == nil {
		c.par = newParallel(ctx, c.s.txw == nil)
	}
	return c.par
}

func (c *CopyIn) failed() error {
	if c.par == nil {
		return nil
	}
	return c.par.firstError()
}

// nextRecord cuts one record (a line; in CSV, quoted fields may span
// lines) from the pending data; at the end (final) a last line may lack
// its newline.
func (c *CopyIn) nextRecord(final bool) ([]byte, []byte, bool) {
	p := c.pending
	if c.Format != "csv" {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if final && len(p) > 0 {
				return p, nil, true
			}
			return nil, p, false
		}
		return bytes.TrimSuffix(p[:i], []byte("\r")), p[i+1:], true
	}
	quote := c.opts.Quote[0]
	in := false
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == quote:
			in = !in
		case p[i] == '\n' && !in:
			return bytes.TrimSuffix(p[:i], []byte("\r")), p[i+1:], true
		}
	}
	if final && len(p) > 0 {
		return p, nil, true
	}
	return nil, p, false
}

// record parses one record and writes its row.
func (c *CopyIn) record(ctx context.Context, rec []byte) error {
	c.line++
	if c.header {
		c.header = false
		return nil
	}
	if string(rec) == `\.` {
		return nil // the end-of-data marker (psql sends it)
	}
	var fields []*string
	var err error
	if c.Format == "csv" {
		fields, err = c.csvFields(string(rec))
	} else {
		fields, err = c.textFields(string(rec))
	}
	if err != nil {
		return c.lineError(err)
	}
	if len(fields) != len(c.cols) {
		what := "extra data after last expected column"
		if len(fields) < len(c.cols) {
			what = fmt.Sprintf("missing data for column %q", c.t.codec.cols[c.cols[len(fields)]].Name)
		}
		return c.lineError(sqlstate.Errorf("22P04", "%s", what))
	}
	vals := make([]any, len(c.cols))
	for k, idx := range c.cols {
		if fields[k] == nil {
			continue
		}
		col := c.t.codec.cols[idx]
		v, err := pgtypes.ParseTextStyle(catalog.TypeOID(col.Type), *fields[k], c.style)
		if err != nil {
			if v, err = pgeval.Cast(*fields[k], pgtypes.OIDText, catalog.TypeOID(col.Type)); err != nil {
				return c.lineError(err)
			}
		}
		vals[k] = v
	}
	return c.write(ctx, vals)
}

// Row writes one row of binary COPY data, decoded by the wire layer (nil
// is NULL).
func (c *CopyIn) Row(ctx context.Context, vals []any) error {
	c.line++
	if len(vals) != len(c.cols) {
		return c.lineError(sqlstate.Errorf("22P04", "row field count is %d, expected %d", len(vals), len(c.cols)))
	}
	for k, v := range vals {
		col := c.t.codec.cols[c.cols[k]]
		if v, err := assign(v, c.ColumnOIDs[k], col); err != nil {
			return c.lineError(err)
		} else {
			vals[k] = v
		}
	}
	return c.write(ctx, vals)
}

// write writes a row's values (one per COPY column).
func (c *CopyIn) write(ctx context.Context, vals []any) error {
	w := rowWrite{vals: make([]any, len(c.t.codec.cols)), set: make([]bool, len(c.t.codec.cols)), ts: -1}
	for k, idx := range c.cols {
		w.vals[idx], w.set[idx] = vals[k], true
	}
	line := c.line
	return c.writer(ctx).do(func() (bool, error) {
		done, _, err := c.s.insertRow(ctx, c.t, w, insertMode{}, nil, nil)
		if err != nil {
			e := *sqlstate.AsError(err)
			e.Detail = strings.TrimSpace(e.Detail + fmt.Sprintf(" COPY %s, line %d.", c.t.name, line))
			return false, &e
		}
		return done, nil
	})
}

func (c *CopyIn) lineError(err error) error {
	e := *sqlstate.AsError(err)
	e.Detail = strings.TrimSpace(e.Detail + fmt.Sprintf(" COPY %s, line %d.", c.t.name, c.line))
	return &e
}

// textFields splits a line of COPY's text format: delimiter-separated,
// backslash escapes, the NULL string (\N) as NULL.
func (c *CopyIn) textFields(line string) ([]*string, error) {
	var out []*string
	for _, raw := range strings.Split(line, c.opts.Delimiter) {
		if raw == c.opts.Null {
			out = append(out, nil)
			continue
		}
		var b strings.Builder
		for i := 0; i < len(raw); i++ {
			ch := raw[i]
			if ch != '\\' || i+1 == len(raw) {
				b.WriteByte(ch)
				continue
			}
			i++
			switch raw[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'v':
				b.WriteByte('\v')
			default:
				b.WriteByte(raw[i])
			}
		}
		v := b.String()
		out = append(out, &v)
	}
	return out, nil
}

// csvFields splits a CSV record: quoted fields with doubled quotes; an
// unquoted field equal to the NULL string (empty by default) is NULL.
func (c *CopyIn) csvFields(rec string) ([]*string, error) {
	var out []*string
	delim, quote := c.opts.Delimiter[0], c.opts.Quote[0]
	i := 0
	for {
		var b strings.Builder
		quoted := false
		for i < len(rec) && rec[i] != delim {
			if rec[i] == quote {
				quoted = true
				i++
				for {
					if i >= len(rec) {
						return nil, sqlstate.Errorf("22P04", "unterminated CSV quoted field")
					}
					if rec[i] == quote {
						if i+1 < len(rec) && rec[i+1] == quote {
							b.WriteByte(quote)
							i += 2
							continue
						}
						i++
						break
					}
					b.WriteByte(rec[i])
					i++
				}
				continue
			}
			b.WriteByte(rec[i])
			i++
		}
		v := b.String()
		if !quoted && v == c.opts.Null {
			out = append(out, nil)
		} else {
			out = append(out, &v)
		}
		if i >= len(rec) {
			return out, nil
		}
		i++ // the delimiter
	}
}
