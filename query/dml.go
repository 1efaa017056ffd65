package query

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Row writes (DESIGN.md section 5). Every statement is atomic per row,
// never across rows:
//
//   - UPSERT writes its cells blindly (one Apply per row); a NULL deletes
//     the column's cells.
//   - INSERT is a check-and-mutate per row: it writes only if the row
//     has no cell, else 23505.
//   - INSERT … ON CONFLICT (key) DO NOTHING is the same check-and-mutate,
//     skipping existing rows; DO UPDATE SET is one check-and-mutate whose
//     branches are the insert and the update when the update uses only
//     EXCLUDED values and constants, and otherwise a read followed by a
//     compare-and-swap.
//   - UPDATE and DELETE read the rows their WHERE selects (row ranges from
//     the key predicates), compute each row's new values, and write them
//     with a compare-and-swap whose expects are the values the statement
//     read (of every column it names). If another write got there first,
//     the row is read again, its WHERE re-checked and its values
//     recomputed: concurrent increments are never lost, and a row that
//     vanished is not recreated. This loop is the SQL layer's one retry
//     (casAttempts).
//
// Inside a transaction block the same mutations are buffered instead
// (txbuf.go) and applied at COMMIT.

// casAttempts bounds UPDATE's compare-and-swap loop per row; beyond it the
// statement fails with 40001 and the client may retry.
const casAttempts = 200

// casBackoff is the pause before attempt i (i ≥ 1) of a contended row.
func casBackoff(i int) time.Duration {
	return min(time.Duration(i)*200*time.Microsecond, 20*time.Millisecond)
}

// target is a table that a statement writes.
type target struct {
	name  string
	def   *catalog.Table
	codec *rowCodec
	// scope is the columns expressions see: the table's (with named
	// undeclared qualifiers), then for ON CONFLICT the excluded row's.
	scope []pgtypes.Column
}

// userTarget resolves a statement's table and flattens its column
// references so that expressions compile over the target's scope:
// t.c and c are c, f.q and t.f.q are "f:q", excluded.c is "excluded.c".
func (s *Session) userTarget(ctx context.Context, rv *pg.RangeVar, stmt protoMessage, excluded bool) (*target, error) {
	if rv.Schemaname != "" && rv.Schemaname != "public" {
		if rv.Schemaname == "pg_catalog" || rv.Schemaname == "information_schema" {
			return nil, sqlstate.Errorf(sqlstate.CodeInsufficientPrivilege, "permission denied: %s.%s is a read-only system catalog", rv.Schemaname, rv.Relname)
		}
		return nil, sqlstate.Errorf("3F000", "schema %q does not exist", rv.Schemaname)
	}
	if s.opts.Tables == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation %q does not exist", rv.Relname)
	}
	def, _, err := s.opts.Tables.Get(ctx, rv.Relname)
	if err != nil {
		e := *sqlstate.AsError(err)
		e.Position = int(rv.Location) + 1
		return nil, &e
	}
	names := map[string]bool{rv.Relname: true}
	if rv.Alias != nil {
		names = map[string]bool{rv.Alias.Aliasname: true}
	}
	cols := newStmtColumns(def)
	use := cols.use
	// Columns a write names as its targets (INSERT's list, SET's).
	walk(stmt, func(m protoMessage) bool {
		if rt, ok := m.(*pg.ResTarget); ok && rt.Name != "" {
			name := rt.Name
			if len(rt.Indirection) == 1 && rt.Indirection[0].GetString_() != nil {
				name += ":" + rt.Indirection[0].GetString_().Sval
			}
			use(name)
		}
		return true
	})
	var bad *sqlstate.Error
	columnRefs(stmt, false, func(c *pg.ColumnRef) {
		f := fieldNames(c)
		switch {
		case len(f) == 1:
			use(f[0])
		case len(f) == 2 && names[f[0]]:
			use(f[1])
			c.Fields = c.Fields[1:]
		case len(f) == 2 && excluded && f[0] == "excluded":
			use(f[1])
			c.Fields = []*pg.Node{strNode("excluded." + f[1])}
		case len(f) == 2 && use(f[0]+":"+f[1]):
			c.Fields = []*pg.Node{strNode(f[0] + ":" + f[1])}
		case len(f) == 3 && names[f[0]] && use(f[1]+":"+f[2]):
			c.Fields = []*pg.Node{strNode(f[1] + ":" + f[2])}
		case len(f) >= 2 && bad == nil:
			bad = &sqlstate.Error{Code: sqlstate.CodeUndefinedTable, Message: fmt.Sprintf("missing FROM-clause entry for table %q", f[0]), Position: int(c.Location) + 1}
		}
	})
	if bad != nil {
		return nil, bad
	}
	t := &target{name: rv.Relname, def: def, codec: newRowCodec(def, cols.extra)}
	t.scope = t.codec.columns()
	if excluded {
		for _, c := range t.codec.columns() {
			t.scope = append(t.scope, pgtypes.Column{Name: "excluded." + c.Name, OID: c.OID})
		}
	}
	return t, nil
}

// column finds a target column by name; 42703 if there is none.
func (t *target) column(name string, pos int32) (int, error) {
	for i, c := range t.codec.cols {
		if c.Name == name {
			return i, nil
		}
	}
	return 0, &sqlstate.Error{Code: sqlstate.CodeUndefinedColumn, Message: fmt.Sprintf("column %q of relation %q does not exist", name, t.name), Position: int(pos) + 1}
}

// exprs compiles expressions over the target's scope, sharing the
// statement's parameter types.
type exprs struct {
	s      *Session
	t      *target
	params []uint32
}

func (x *exprs) compile(n *pg.Node, want uint32) (*pgeval.Expr, error) {
	if hasSubquery(n) {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "subqueries in writes are not supported (table %s); a statement reads one table, once", x.t.name)
	}
	var e *pgeval.Expr
	var err error
	if want != 0 {
		// As an assignment: unknown literals and parameters take the
		// type, other values convert only where PostgreSQL would.
		e, err = pgeval.CompileExprAs(n, x.t.scope, want, x.s.env(nil), x.params)
	} else {
		e, err = pgeval.CompileExpr(n, x.t.scope, x.s.env(nil), x.params)
	}
	if err != nil {
		return nil, err
	}
	x.mergeUsed(e.Params(), n)
	return e, nil
}

// mergeUsed merges the types of the parameters n refers to. An
// expression's Params has every parameter it was given, those it did not
// use defaulted to text, which must not fix theirs: a client that sends
// 0 for each parameter's type (psqlODBC) got text for every value after
// the first.
func (x *exprs) mergeUsed(ps []uint32, n *pg.Node) {
	if p := n.GetParamRef(); p != nil {
		if i := int(p.Number) - 1; i >= 0 && i < len(ps) {
			x.mergeAt(i, ps[i])
		}
		return
	}
	walk(n, func(m protoMessage) bool {
		if p, ok := m.(*pg.ParamRef); ok {
			if i := int(p.Number) - 1; i >= 0 && i < len(ps) {
				x.mergeAt(i, ps[i])
			}
		}
		return true
	})
}

func (x *exprs) mergeAt(i int, oid uint32) {
	for len(x.params) <= i {
		x.params = append(x.params, 0)
	}
	if x.params[i] == 0 {
		x.params[i] = oid
	}
}

// compileFor compiles a value for a column, with PostgreSQL's assignment
// rules: a value of another type converts only by an implicit or
// assignment cast (numbers into numbers, anything into text), else the
// column is named in a 42804.
func (x *exprs) compileFor(n *pg.Node, col catalog.Column) (*pgeval.Expr, error) {
	if hasSubquery(n) {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "subqueries in writes are not supported (table %s); a statement reads one table, once", x.t.name)
	}
	to := col.OID()
	if n.GetParamRef() != nil {
		return x.compile(n, to) // a parameter takes the column's type
	}
	// The value's own type, without fixing any parameter's (a constant's
	// is known without compiling it: a multi-row VALUES has many).
	from, ok := constOID(n)
	if !ok {
		natural, err := pgeval.CompileExpr(n, x.t.scope, x.s.env(nil), x.params)
		if err != nil {
			return nil, err
		}
		from = natural.OID()
	}
	if !assignable(from, to) {
		return nil, sqlstate.Errorf(sqlstate.CodeDatatypeMismatch, "column %q is of type %s but expression is of type %s", col.Name, pgtypes.TypeName(to), pgtypes.TypeName(from))
	}
	return x.compile(n, to)
}

// assignable: PostgreSQL converts a from value to to in an assignment.
func assignable(from, to uint32) bool {
	kind := func(oid uint32) string {
		switch oid {
		case pgtypes.OIDInt2, pgtypes.OIDInt4, pgtypes.OIDInt8, pgtypes.OIDFloat4, pgtypes.OIDFloat8, pgtypes.OIDNumeric:
			return "number"
		case pgtypes.OIDText, pgtypes.OIDVarchar, pgtypes.OIDName, 1042:
			return "string"
		case pgtypes.OIDDate, pgtypes.OIDTimestamp, pgtypes.OIDTimestamptz:
			return "time"
		case pgtypes.OIDJSON, pgtypes.OIDJSONB:
			return "json"
		}
		return fmt.Sprint(oid)
	}
	switch {
	case from == to, from == pgtypes.OIDUnknown:
		return true
	case kind(to) == "string":
		return true // I/O conversion to a string type
	}
	return kind(from) == kind(to)
}

// final returns the statement's parameter types (unknown ones as text).
func (x *exprs) final() []uint32 {
	out := append([]uint32(nil), x.params...)
	for i, oid := range out {
		if oid == 0 {
			out[i] = pgtypes.OIDText
		}
	}
	return out
}

// assign converts an expression's value to a column's type.
func assign(v any, from uint32, col catalog.Column) (any, error) {
	if v == nil {
		return nil, nil
	}
	to := catalog.TypeOID(col.Type)
	if col.Varchar && col.Length > 0 {
		if s, ok := v.(string); ok && utf8.RuneCountInString(s) > col.Length {
			return nil, sqlstate.Errorf("22001", "value too long for type character varying(%d)", col.Length)
		}
	}
	out := v
	if from != to && (to != pgtypes.OIDText || from != pgtypes.OIDVarchar) {
		var err error
		if out, err = pgeval.Cast(v, from, to); err != nil {
			e := *sqlstate.AsError(err)
			if e.Code == sqlstate.CodeFeatureNotSupported || e.Code == sqlstate.CodeCannotCoerce || e.Code == sqlstate.CodeUndefinedFunction {
				e.Code = sqlstate.CodeDatatypeMismatch
				e.Message = fmt.Sprintf("column %q is of type %s but expression is of type %s", col.Name, pgtypes.TypeName(to), pgtypes.TypeName(from))
			}
			return nil, &e
		}
	}
	if n, ok := out.(pgtypes.Numeric); ok && col.Precision > 0 {
		return pgeval.NumericTypmod(n, col.Precision, col.Scale)
	}
	return out, nil
}

// rowWrite is one row's new column values.
type rowWrite struct {
	vals []any // by codec column; set[i] says whether i is written
	set  []bool
	ts   int64 // -1: the server's time
}

// mutations turns a row write into cells: the marker, a cell per non-NULL
// column, a column deletion per NULL one (blind writes need it; a new row
// has nothing to delete), and an open family's JSONB object as one cell
// per member.
func (t *target) mutations(w rowWrite, deleteNulls bool) ([]model.Mutation, error) {
	var muts []model.Mutation
	if !t.def.Native() {
		// A native table has no marker family; its rows exist by their
		// cells, as in Bigtable.
		muts = append(muts, markerCell(w.ts))
	}
	for i, col := range t.codec.cols {
		if col.NotNull && !col.Key && w.set[i] && w.vals[i] == nil {
			return nil, notNullViolation(t.name, col.Name)
		}
		if !w.set[i] || col.Key {
			continue
		}
		v := w.vals[i]
		if col.Qualifier == "" { // an open family's JSONB column
			ms, err := t.familyCells(col.Family, v, w.ts)
			if err != nil {
				return nil, err
			}
			muts = append(muts, ms...)
			continue
		}
		if v == nil {
			if deleteNulls {
				muts = append(muts, model.DeleteColumn(col.Family, []byte(col.Qualifier), model.TimeRange{}))
			}
			continue
		}
		b, err := t.codec.cellValue(col, v)
		if err != nil {
			return nil, err
		}
		muts = append(muts, model.SetCell(col.Family, []byte(col.Qualifier), w.ts, b))
	}
	return muts, nil
}

// familyCells writes an open family's JSONB object: the family's cells
// are replaced by one per member, typed by the family's default type.
func (t *target) familyCells(family string, v any, ts int64) ([]model.Mutation, error) {
	muts := []model.Mutation{model.DeleteFamily(family)}
	if v == nil {
		return muts, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v.(string)), &obj); err != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeDatatypeMismatch, "column %q holds family %s's qualifiers and takes a JSON object", family, family)
	}
	var typ model.ValueType
	for _, f := range t.def.Families {
		if f.Name == family {
			typ = f.DefaultType
		}
	}
	col := catalog.Column{Name: family, Family: family, Type: typ}
	for q, raw := range obj {
		var val any
		if typ == model.TypeJSONB {
			val = string(raw)
		} else {
			var text string
			var s string
			if json.Unmarshal(raw, &s) == nil {
				text = s
			} else {
				text = string(raw)
			}
			if string(raw) == "null" {
				continue
			}
			var err error
			if val, err = pgeval.Cast(text, pgtypes.OIDText, catalog.TypeOID(typ)); err != nil {
				return nil, err
			}
		}
		b, err := t.codec.cellValue(col, val)
		if err != nil {
			return nil, err
		}
		muts = append(muts, model.SetCell(family, []byte(q), ts, b))
	}
	return muts, nil
}

// key returns a row write's row key.
func (t *target) key(vals []any) ([]byte, error) {
	kv := make([]any, len(t.codec.keyIdx))
	for i, idx := range t.codec.keyIdx {
		kv[i] = vals[idx]
	}
	return t.codec.encodeKey(kv)
}

// readRow reads one row's newest cells, with the transaction's buffered
// writes applied; found is false if it has no cell. The user must be
// allowed to read the families of the columns of need (nil: all of
// them); the others' values are those of the families the user may read
// (the rest read as NULL).
func (s *Session) readRow(ctx context.Context, t *target, key []byte, need []bool) ([]any, bool, error) {
	f := ReadFilter{MaxVersions: 1, ReadableOnly: true, Require: t.families(need)}
	it := s.kv().Scan(ctx, t.name, model.RowRange{Start: key, End: append(append([]byte(nil), key...), 0)}, f, 1)
	row := model.Row{Key: key}
	if it.Next() {
		row = it.Row()
	} else if err := it.Err(); err != nil {
		return nil, false, kvError(err, false)
	}
	row = s.txw.writes(t.name).overlay(row)
	if len(row.Cells) == 0 {
		return nil, false, nil
	}
	vals, err := t.codec.decode(row, nil)
	return vals, err == nil, err
}

// expects are the compare-and-swap conditions that the values a statement
// read of the columns it names are still there.
func (t *target) expects(vals []any, named []bool) ([]model.Expect, error) {
	var out []model.Expect
	for i, col := range t.codec.cols {
		if !named[i] || col.Key || col.Qualifier == "" {
			continue
		}
		e := model.Expect{Family: col.Family, Qualifier: []byte(col.Qualifier)}
		if vals[i] == nil {
			e.Absent = true
		} else {
			b, err := t.codec.cellValue(col, vals[i])
			if err != nil {
				return nil, err
			}
			e.Value = b
		}
		out = append(out, e)
	}
	return out, nil
}

// namedColumns marks the target columns that expressions name.
// readNeed is what an UPDATE or DELETE reads of each row: the named
// columns and the key (nil, every column, if it returns rows).
func (t *target) readNeed(named []bool, returns bool) []bool {
	if returns {
		return nil
	}
	need := slices.Clone(named)
	for i, col := range t.codec.cols {
		need[i] = need[i] || col.Key
	}
	return need
}

// families are the families of the columns of need (nil: every column).
func (t *target) families(need []bool) []string {
	var out []string
	for i, col := range t.codec.cols {
		if (need == nil || need[i]) && !col.Key && col.Family != "" && !slices.Contains(out, col.Family) {
			out = append(out, col.Family)
		}
	}
	return out
}

func (t *target) namedColumns(nodes ...protoMessage) []bool {
	named := make([]bool, len(t.codec.cols))
	for _, n := range nodes {
		columnRefs(n, false, func(c *pg.ColumnRef) {
			f := fieldNames(c)
			for i, col := range t.codec.cols {
				if f[len(f)-1] == col.Name {
					named[i] = true
				}
			}
		})
	}
	return named
}

// returning compiles a RETURNING list over the written row.
type returning struct {
	cols  []pgtypes.Column
	exprs []*pgeval.Expr
	star  []int // for *, the codec columns it expands to (-1: an expression)
}

func (x *exprs) returning(list []*pg.Node) (*returning, error) {
	if len(list) == 0 {
		return nil, nil
	}
	r := &returning{}
	for _, n := range list {
		rt := n.GetResTarget()
		if rt == nil {
			continue
		}
		if c := rt.Val.GetColumnRef(); c != nil {
			if f := fieldNames(c); f[len(f)-1] == "*" {
				for i := range x.t.codec.cols {
					if i < len(x.t.def.Visible()) {
						r.cols = append(r.cols, x.t.scope[i])
						r.exprs = append(r.exprs, nil)
						r.star = append(r.star, i)
					}
				}
				continue
			}
		}
		e, err := x.compile(rt.Val, 0)
		if err != nil {
			return nil, err
		}
		name := rt.Name
		if name == "" {
			name = resultName(rt.Val)
		}
		r.cols = append(r.cols, pgtypes.Column{Name: name, OID: e.OID(), Origin: e.Origin()})
		r.exprs = append(r.exprs, e)
		r.star = append(r.star, -1)
	}
	return r, nil
}

func (r *returning) row(ctx context.Context, env *pgeval.Env, vals []any, args []any) ([]any, error) {
	out := make([]any, len(r.exprs))
	for i, e := range r.exprs {
		if r.star[i] >= 0 {
			out[i] = vals[r.star[i]]
			continue
		}
		v, err := e.Eval(ctx, env, vals, args)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// result makes a write's result: its tag, and its RETURNING rows.
func tagResult(tag string, n int, ret *returning, rows [][]any) *Result {
	res := &Result{Tag: fmt.Sprintf("%s %d", tag, n)}
	if ret != nil {
		res.Columns, res.Rows = ret.cols, rows
	}
	return res
}

// ---- INSERT and UPSERT ----

func (s *Session) compileInsert(ctx context.Context, p piece, ins *pg.InsertStmt, paramOIDs []uint32) (*Statement, error) {
	if ins.WithClause != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "WITH in INSERT is not supported")
	}
	oc := ins.OnConflictClause
	t, err := s.userTarget(ctx, ins.Relation, ins, oc != nil && oc.Action == pg.OnConflictAction_ONCONFLICT_UPDATE)
	if err != nil {
		return nil, err
	}
	x := &exprs{s: s, t: t, params: append([]uint32(nil), paramOIDs...)}
	// Target columns: those listed, or all the table shows.
	var cols []int
	tsCol := -1
	if len(ins.Cols) == 0 {
		for i := range t.def.Visible() {
			cols = append(cols, i)
		}
	}
	for k, n := range ins.Cols {
		rt := n.GetResTarget()
		name := rt.Name
		if len(rt.Indirection) == 1 && rt.Indirection[0].GetString_() != nil {
			name += ":" + rt.Indirection[0].GetString_().Sval
		}
		if name == "_ts" {
			tsCol = k
			cols = append(cols, -1)
			continue
		}
		i, err := t.column(name, rt.Location)
		if err != nil {
			return nil, err
		}
		cols = append(cols, i)
	}
	for i, col := range t.codec.cols {
		if col.NotNull && len(ins.Cols) > 0 && !containsInt(cols, i) {
			return nil, notNullViolation(t.name, col.Name)
		}
	}
	// The rows: VALUES lists, or a query.
	var values [][]*pgeval.Expr
	var query *queryPlan
	sel := ins.SelectStmt.GetSelectStmt()
	switch {
	case sel == nil:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "INSERT … DEFAULT VALUES is not supported")
	case len(sel.ValuesLists) > 0:
		for _, l := range sel.ValuesLists {
			items := l.GetList().GetItems()
			if len(items) != len(cols) {
				if len(items) > len(cols) {
					return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "INSERT has more expressions than target columns")
				}
				return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "INSERT has more target columns than expressions")
			}
			row := make([]*pgeval.Expr, len(items))
			for k, item := range items {
				if cols[k] < 0 { // _ts: a timestamp, or µs as a bigint literal
					if item.GetParamRef() != nil {
						row[k], err = x.compile(item, pgtypes.OIDTimestamptz)
					} else {
						row[k], err = x.compile(item, 0)
					}
				} else {
					row[k], err = x.compileFor(item, t.codec.cols[cols[k]])
				}
				if err != nil {
					return nil, err
				}
			}
			values = append(values, row)
		}
	default:
		// A bare parameter in the query's select list takes its column's
		// type, as in PostgreSQL.
		for k, n := range sel.TargetList {
			if p := n.GetResTarget().GetVal().GetParamRef(); p != nil && k < len(cols) && cols[k] >= 0 && p.Number >= 1 && p.Number <= 65535 {
				x.mergeAt(int(p.Number)-1, t.codec.cols[cols[k]].OID())
			}
		}
		if query, err = s.prepareQuery(ctx, ins.SelectStmt, x.params); err != nil {
			return nil, err
		}
		x.mergeUsed(query.plan.Params(), ins.SelectStmt)
		if len(query.plan.Columns()) != len(cols) {
			return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "INSERT has %d target columns but the query gives %d", len(cols), len(query.plan.Columns()))
		}
	}
	// ON CONFLICT.
	var set []setItem
	var conflictWhere *pgeval.Expr
	if oc != nil {
		if err := t.checkConflictTarget(oc); err != nil {
			return nil, err
		}
		if oc.Action == pg.OnConflictAction_ONCONFLICT_UPDATE {
			if set, err = x.setList(oc.TargetList); err != nil {
				return nil, err
			}
			if oc.WhereClause != nil {
				if conflictWhere, err = x.compile(oc.WhereClause, pgtypes.OIDBool); err != nil {
					return nil, err
				}
			}
		}
	}
	ret, err := x.returning(ins.ReturningList)
	if err != nil {
		return nil, err
	}
	// Does the update read the existing row?
	readsRow := ret != nil || conflictWhere != nil
	for _, it := range set {
		columnRefs(it.node, false, func(c *pg.ColumnRef) {
			if f := fieldNames(c); !strings.HasPrefix(f[0], "excluded.") {
				readsRow = true
			}
		})
	}
	named := t.namedColumns(oc.GetWhereClause())
	for _, it := range set {
		for i, b := range t.namedColumns(it.node) {
			named[i] = named[i] || b
		}
	}
	upsert := p.upsert
	st := &Statement{SQL: p.text, Params: x.final(), kind: "INSERT"}
	if ret != nil {
		st.Columns = ret.cols
	}
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		env := s.env(nil)
		var rows [][]any
		next := func() ([]any, error) { return nil, io.EOF }
		if query != nil {
			it, err := query.plan.Run(ctx, s.env(query.cat), args)
			if err != nil {
				return nil, err
			}
			defer it.Close()
			qcols := query.plan.Columns()
			next = func() ([]any, error) {
				r, err := it.Next(ctx)
				if err != nil {
					return nil, err
				}
				for k := range r {
					if cols[k] >= 0 {
						if r[k], err = assign(r[k], qcols[k].OID, t.codec.cols[cols[k]]); err != nil {
							return nil, err
						}
					}
				}
				return r, nil
			}
		} else {
			i := 0
			next = func() ([]any, error) {
				if i == len(values) {
					return nil, io.EOF
				}
				row := values[i]
				i++
				out := make([]any, len(row))
				for k, e := range row {
					v, err := e.Eval(ctx, env, nil, args)
					if err != nil {
						return nil, err
					}
					if cols[k] >= 0 {
						if v, err = assign(v, e.OID(), t.codec.cols[cols[k]]); err != nil {
							return nil, err
						}
					} else if v, err = writeTimestamp(v, e.OID()); err != nil {
						return nil, err
					}
					out[k] = v
				}
				return out, nil
			}
		}
		mode := insertMode{upsert: upsert, conflict: oc, set: set, where: conflictWhere, readsRow: readsRow, named: named}
		// Rows are independent writes; outside a transaction, and
		// without RETURNING (whose rows come in order), many are in
		// flight at once.
		par := newParallel(ctx, s.txw == nil && ret == nil && (query != nil || len(values) > 1))
		for {
			in, err := next()
			if err == io.EOF {
				break
			}
			if err != nil {
				par.wait()
				return nil, err
			}
			w := rowWrite{vals: make([]any, len(t.codec.cols)), set: make([]bool, len(t.codec.cols)), ts: -1}
			for k, idx := range cols {
				if idx < 0 {
					if in[k] != nil {
						w.ts = in[k].(int64)
					}
					continue
				}
				w.vals[idx], w.set[idx] = in[k], true
			}
			if tsCol >= 0 && len(set) > 0 {
				par.wait()
				return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "_ts with ON CONFLICT DO UPDATE is not supported")
			}
			err = par.do(func() (bool, error) {
				done, out, err := s.insertRow(ctx, t, w, mode, env, args)
				if err != nil || !done || ret == nil {
					return done, err
				}
				r, err := ret.row(ctx, env, out, args)
				rows = append(rows, r)
				return true, err
			})
			if err != nil {
				par.wait()
				return nil, err
			}
		}
		n, err := par.wait()
		if err != nil {
			return nil, err
		}
		return tagResult("INSERT 0", n, ret, rows), nil
	}
	return st, nil
}

func containsInt(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// writeTimestamp reads _ts: a timestamp, or µs since the epoch; it must
// be a whole millisecond, as on Bigtable.
func writeTimestamp(v any, oid uint32) (any, error) {
	var us int64
	if s, ok := v.(string); ok {
		t, err := pgeval.Cast(s, pgtypes.OIDText, pgtypes.OIDTimestamptz)
		if err != nil {
			return nil, err
		}
		v = t
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		us = x.UnixMicro()
	case int64:
		us = x
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeDatatypeMismatch, "_ts takes a timestamptz or a bigint of microseconds, not %s", pgtypes.TypeName(oid))
	}
	if us < 0 || us%1000 != 0 {
		return nil, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "_ts %d µs is not a whole, non-negative number of milliseconds", us)
	}
	return us, nil
}

// checkConflictTarget accepts ON CONFLICT on the primary key only.
func (t *target) checkConflictTarget(oc *pg.OnConflictClause) error {
	if oc.Infer == nil {
		if oc.Action == pg.OnConflictAction_ONCONFLICT_UPDATE {
			return sqlstate.Errorf("42601", "ON CONFLICT DO UPDATE requires inference specification or constraint name")
		}
		return nil
	}
	if oc.Infer.Conname != "" {
		if oc.Infer.Conname != t.name+"_pkey" {
			return sqlstate.Errorf(sqlstate.CodeUndefinedObject, "constraint %q for table %q does not exist", oc.Infer.Conname, t.name)
		}
		return nil
	}
	var names []string
	for _, e := range oc.Infer.IndexElems {
		names = append(names, e.GetIndexElem().GetName())
	}
	var key []string
	for _, idx := range t.codec.keyIdx {
		key = append(key, t.codec.cols[idx].Name)
	}
	if strings.Join(sortedCopy(names), ",") != strings.Join(sortedCopy(key), ",") {
		return sqlstate.Errorf("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification (the table's only one is its primary key (%s))", strings.Join(key, ", "))
	}
	return nil
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// setItem is one assignment of an UPDATE or ON CONFLICT DO UPDATE.
type setItem struct {
	col  int
	node *pg.Node
	expr *pgeval.Expr
}

func (x *exprs) setList(list []*pg.Node) ([]setItem, error) {
	var out []setItem
	for _, n := range list {
		rt := n.GetResTarget()
		name := rt.Name
		if len(rt.Indirection) == 1 && rt.Indirection[0].GetString_() != nil {
			name += ":" + rt.Indirection[0].GetString_().Sval
		}
		i, err := x.t.column(name, rt.Location)
		if err != nil {
			return nil, err
		}
		col := x.t.codec.cols[i]
		if col.Key {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cannot change %s, part of the row key: DELETE the row and INSERT it again", col.Name)
		}
		e, err := x.compileFor(rt.Val, col)
		if err != nil {
			return nil, err
		}
		out = append(out, setItem{col: i, node: rt.Val, expr: e})
	}
	return out, nil
}

// apply computes an update's row write over the current row (and, for ON
// CONFLICT, the excluded row after it in the scope).
func applySet(ctx context.Context, env *pgeval.Env, t *target, set []setItem, scopeRow []any, args []any, ts int64) (rowWrite, []any, error) {
	n := len(t.codec.cols)
	w := rowWrite{vals: make([]any, n), set: make([]bool, n), ts: ts}
	newRow := append([]any(nil), scopeRow[:n]...)
	for _, it := range set {
		v, err := it.expr.Eval(ctx, env, scopeRow, args)
		if err != nil {
			return w, nil, err
		}
		if v, err = assign(v, it.expr.OID(), t.codec.cols[it.col]); err != nil {
			return w, nil, err
		}
		w.vals[it.col], w.set[it.col] = v, true
		newRow[it.col] = v
	}
	return w, newRow, nil
}

type insertMode struct {
	upsert   bool
	conflict *pg.OnConflictClause
	set      []setItem
	where    *pgeval.Expr
	readsRow bool
	named    []bool
}

// insertRow writes one row; done says whether it counts (inserted or
// updated), and out is the row as written, for RETURNING.
func (s *Session) insertRow(ctx context.Context, t *target, w rowWrite, m insertMode, env *pgeval.Env, args []any) (bool, []any, error) {
	key, err := t.key(w.vals)
	if err != nil {
		return false, nil, err
	}
	insertMuts, err := t.mutations(w, m.upsert)
	if err != nil {
		return false, nil, err
	}
	kv := s.kv()
	doNothing := m.conflict != nil && m.conflict.Action == pg.OnConflictAction_ONCONFLICT_NOTHING
	doUpdate := m.conflict != nil && m.conflict.Action == pg.OnConflictAction_ONCONFLICT_UPDATE
	inTx := s.txw != nil
	// Blind writes.
	if m.upsert {
		if inTx {
			s.txw.add(t.name, key, insertMuts, false)
			return true, w.vals, nil
		}
		return true, w.vals, kvError(kv.Apply(ctx, t.name, &model.RowMutation{Row: key, Mutations: insertMuts}), true)
	}
	if doUpdate && !m.readsRow && !inTx {
		excluded := append(make([]any, len(t.codec.cols)), w.vals...)
		uw, _, err := applySet(ctx, env, t, m.set, excluded, args, w.ts)
		if err != nil {
			return false, nil, err
		}
		updateMuts, err := t.mutations(uw, true)
		if err != nil {
			return false, nil, err
		}
		if sameMutations(updateMuts, insertMuts) {
			// SET writes exactly what the insert would (v = excluded.v
			// for every column given): both branches end in the same
			// row, so the write needs no read.
			return true, w.vals, kvError(kv.Apply(ctx, t.name, &model.RowMutation{Row: key, Mutations: insertMuts}), true)
		}
		_, err = kv.CompareAndMutate(ctx, t.name, key, nil, updateMuts, insertMuts)
		return err == nil, w.vals, kvError(err, true)
	}
	if !doUpdate && !inTx {
		exists, err := kv.CompareAndMutate(ctx, t.name, key, nil, nil, insertMuts)
		if err != nil {
			return false, nil, kvError(err, true)
		}
		if exists && !doNothing {
			return false, nil, duplicateKey(t, w.vals)
		}
		return !exists, w.vals, nil
	}
	// Read first: a transaction's INSERT, or an ON CONFLICT update that
	// reads the row.
	for attempt := 0; ; attempt++ {
		cur, found, err := s.readRow(ctx, t, key, nil)
		if err != nil {
			return false, nil, err
		}
		if !found {
			if inTx {
				s.txw.add(t.name, key, insertMuts, true)
				return true, w.vals, nil
			}
			exists, err := kv.CompareAndMutate(ctx, t.name, key, nil, nil, insertMuts)
			if err != nil {
				return false, nil, kvError(err, true)
			}
			if !exists {
				return true, w.vals, nil
			}
		} else {
			if !doUpdate {
				if doNothing {
					return false, nil, nil
				}
				return false, nil, duplicateKey(t, w.vals)
			}
			scopeRow := append(append([]any(nil), cur...), w.vals...)
			if m.where != nil {
				ok, err := m.where.Eval(ctx, env, scopeRow, args)
				if err != nil {
					return false, nil, err
				}
				if ok != true {
					return false, nil, nil
				}
			}
			uw, newRow, err := applySet(ctx, env, t, m.set, scopeRow, args, w.ts)
			if err != nil {
				return false, nil, err
			}
			updateMuts, err := t.mutations(uw, true)
			if err != nil {
				return false, nil, err
			}
			expects, err := t.expects(cur, m.named)
			if err != nil {
				return false, nil, err
			}
			if inTx {
				br := s.txw.add(t.name, key, updateMuts, false)
				if !br.insert && len(br.expects) == 0 {
					br.expects, br.mustExist = expects, true
				}
				return true, newRow, nil
			}
			held, err := kv.CompareAndMutate(ctx, t.name, key, expects, updateMuts, nil)
			if err != nil {
				return false, nil, kvError(err, true)
			}
			if held {
				return true, newRow, nil
			}
		}
		if err := contended(ctx, t, attempt); err != nil {
			return false, nil, err
		}
	}
}

// contended waits before another attempt at a row another writer changed.
func contended(ctx context.Context, t *target, attempt int) error {
	if attempt+1 >= casAttempts {
		return sqlstate.Errorf(codeSerializationFailure, "could not serialize access due to concurrent update of table %q (%d attempts)", t.name, casAttempts)
	}
	timer := time.NewTimer(casBackoff(attempt + 1))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return canceled(ctx.Err())
	case <-timer.C:
		return nil
	}
}

// notNullViolation is 23502 with the fields PostgreSQL sets on it.
func notNullViolation(table, column string) error {
	e := sqlstate.Errorf(codeNotNullViolation, "null value in column %q of relation %q violates not-null constraint", column, table)
	e.Schema, e.Table, e.Column = "public", table, column
	return e
}

func duplicateKey(t *target, vals []any) error {
	var names, shown []string
	for _, idx := range t.codec.keyIdx {
		names = append(names, t.codec.cols[idx].Name)
		shown = append(shown, pgtypes.FormatText(catalog.TypeOID(t.codec.cols[idx].Type), vals[idx]))
	}
	return &sqlstate.Error{Code: codeUniqueViolation, Message: fmt.Sprintf("duplicate key value violates unique constraint \"%s_pkey\"", t.name),
		Detail: fmt.Sprintf("Key (%s)=(%s) already exists.", strings.Join(names, ", "), strings.Join(shown, ", ")),
		Schema: "public", Table: t.name, Constraint: t.name + "_pkey"}
}

// resultName is the name PostgreSQL gives an unnamed result column.
func resultName(n *pg.Node) string {
	switch {
	case n.GetColumnRef() != nil:
		f := fieldNames(n.GetColumnRef())
		return f[len(f)-1]
	case n.GetFuncCall() != nil:
		f := n.GetFuncCall().Funcname
		return f[len(f)-1].GetString_().GetSval()
	case n.GetTypeCast() != nil:
		if name := resultName(n.GetTypeCast().Arg); name != "?column?" {
			return name
		}
		t := n.GetTypeCast().TypeName.Names
		return t[len(t)-1].GetString_().GetSval()
	}
	return "?column?"
}

// parallel runs a statement's row writes, up to writeParallel at once
// when allowed, else one after another; it counts the rows that were
// written and keeps the first error. The writes run on up to
// writeParallel workers that each take many rows: a goroutine per row
// grew a fresh stack for each (copystack was 7% of a bulk load's CPU).
type parallel struct {
	ctx     context.Context
	jobs    chan func() (bool, error)
	workers int
	closed  bool // wait closed jobs; it may be called again
	wg      sync.WaitGroup
	mu      sync.Mutex
	n       int
	err     error
	sync    bool
}

const writeParallel = 32

func newParallel(ctx context.Context, allowed bool) *parallel {
	return &parallel{ctx: ctx, jobs: make(chan func() (bool, error)), sync: !allowed}
}

func (p *parallel) record(done bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if done {
		p.n++
	}
	if err != nil && p.err == nil {
		p.err = err
	}
}

// firstError is the first error a write returned, if any yet.
func (p *parallel) firstError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// do runs one write; it returns the first error seen so far.
func (p *parallel) do(f func() (bool, error)) error {
	if p.sync {
		p.record(f())
		return p.firstError()
	}
	if err := p.firstError(); err != nil {
		return err
	}
	if p.workers < writeParallel {
		p.workers++
		p.wg.Add(1)
		go p.work(f)
		return nil
	}
	select {
	case p.jobs <- f:
		return nil
	case <-p.ctx.Done():
		return canceled(p.ctx.Err())
	}
}

// work runs f, then the writes handed to it, until wait closes jobs.
func (p *parallel) work(f func() (bool, error)) {
	defer p.wg.Done()
	for {
		p.record(f())
		var ok bool
		if f, ok = <-p.jobs; !ok {
			return
		}
	}
}

// wait waits for the writes in flight.
func (p *parallel) wait() (int, error) {
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
	p.wg.Wait()
	return p.n, p.err
}

// sameMutations reports whether two mutation lists write the same.
func sameMutations(a, b []model.Mutation) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Kind != y.Kind || x.Family != y.Family || !bytes.Equal(x.Qualifier, y.Qualifier) || x.Timestamp != y.Timestamp ||
			!bytes.Equal(x.Value, y.Value) || x.Range != y.Range {
			return false
		}
	}
	return true
}

// constOID is the type PostgreSQL gives a literal.
func constOID(n *pg.Node) (uint32, bool) {
	c := n.GetAConst()
	switch {
	case c == nil:
		return 0, false
	case c.Isnull, c.GetSval() != nil:
		return pgtypes.OIDUnknown, true
	case c.GetIval() != nil:
		return pgtypes.OIDInt4, true
	case c.GetBoolval() != nil:
		return pgtypes.OIDBool, true
	}
	return 0, false // a float or bit string: let the evaluator say
}
