package query

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
)

// The cells view: schema "cells" has one relation per table, with one row
// per cell version — the raw Bigtable layout under the SQL columns:
//
//	SELECT * FROM cells.webtable WHERE key = 'com.cnn.www';
//
// key is the row key (text for a TEXT-keyed table, else bytea), family
// and qualifier (a non-UTF-8 qualifier as \x and its hex), timestamp and
// value (bytea). Every version shows, newest first per column, including
// the marker cell of family "_". Key predicates become row ranges as on
// the table itself.
type cellsRel struct {
	s    *Session
	name string
	def  *catalog.Table
	cat  *stmtCatalog
}

func (c *cellsRel) keyOID() uint32 {
	if k := c.def.KeyColumns(); c.def.RawKey() && k[0].Type == model.TypeText {
		return pgtypes.OIDText
	}
	return pgtypes.OIDBytea
}

func (c *cellsRel) Columns() []pgtypes.Column {
	return []pgtypes.Column{{Name: "key", OID: c.keyOID()}, {Name: "family", OID: pgtypes.OIDText}, {Name: "qualifier", OID: pgtypes.OIDText},
		{Name: "timestamp", OID: pgtypes.OIDTimestamptz}, {Name: "value", OID: pgtypes.OIDBytea}}
}

func (c *cellsRel) Ordering() []int { return []int{0} }

func (c *cellsRel) ranges(ctx context.Context, req pgeval.ScanRequest) (rangeSet, error) {
	var conj []*pg.Node
	for _, f := range req.Filters {
		if n, ok := f.Node.(*pg.Node); ok {
			conj = append(conj, n)
		}
	}
	a := &keyAnalyzer{column: "key", raw: true, term: func(n *pg.Node) ([]byte, bool, bool, error) {
		if !isConstant(n) {
			return nil, false, false, nil
		}
		e, err := pgeval.CompileExpr(n, nil, req.Env, c.cat.params)
		if err != nil {
			return nil, false, false, nil
		}
		return constantKey(ctx, e, req.Env, req.Args, c.keyOID(), rawKey)
	}}
	return a.ranges(conj)
}

func (c *cellsRel) Scan(ctx context.Context, req pgeval.ScanRequest) (pgeval.Rows, error) {
	ranges, err := c.ranges(ctx, req)
	if err != nil {
		return nil, err
	}
	f := ReadFilter{}
	if c.cat.asOf != 0 {
		f.TimeRange = model.TimeRange{End: c.cat.asOf + 1}
	}
	return &cellRows{c: c, ranges: ranges, f: f}, nil
}

func (c *cellsRel) Explain(req pgeval.ScanRequest) []string {
	out := []string{"Scan cells of " + c.name + " (every version)"}
	if rs, err := c.ranges(context.Background(), req); err == nil {
		for _, r := range rs {
			out = append(out, "  Row range: "+r.String())
		}
	}
	return out
}

type cellRows struct {
	c      *cellsRel
	ranges rangeSet
	f      ReadFilter
	it     RowIterator
	row    model.Row
	i      int
}

func (r *cellRows) Next(ctx context.Context) ([]any, error) {
	for r.i >= len(r.row.Cells) {
		if r.it == nil {
			if len(r.ranges) == 0 {
				return nil, io.EOF
			}
			r.it = r.c.s.kv().Scan(ctx, r.c.name, r.ranges[0], r.f, 0)
			r.ranges = r.ranges[1:]
		}
		if !r.it.Next() {
			if err := r.it.Err(); err != nil {
				return nil, kvError(err, false)
			}
			r.it = nil
			continue
		}
		r.row, r.i = r.it.Row(), 0
	}
	cell := r.row.Cells[r.i]
	r.i++
	var key any = append([]byte(nil), r.row.Key...)
	if r.c.keyOID() == pgtypes.OIDText {
		if !utf8.Valid(r.row.Key) {
			return nil, fmt.Errorf("%w: row key %q is not UTF-8", model.ErrCorruption, r.row.Key)
		}
		key = string(r.row.Key)
	}
	qual := string(cell.Qualifier)
	if !utf8.Valid(cell.Qualifier) {
		qual = `\x` + hex.EncodeToString(cell.Qualifier)
	}
	return []any{key, cell.Family, qual, time.UnixMicro(cell.Timestamp).UTC(), append([]byte(nil), cell.Value...)}, nil
}

func (r *cellRows) Close() {}
