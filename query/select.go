package query

import (
	"context"
	"io"
	"strconv"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgcatalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// kv returns the cluster, or nil.
func (s *Session) kv() KV {
	if s.opts.Tables == nil {
		return nil
	}
	return s.opts.Tables.KV
}

// env is the evaluator's view of the session for one statement.
func (s *Session) env(cat pgeval.Catalog) *pgeval.Env {
	now := s.opts.Clock()
	if s.tx != TxIdle && !s.txStart.IsZero() {
		now = s.txStart
	}
	return &pgeval.Env{Catalog: cat, Setting: s.setting, User: s.opts.User, Database: s.opts.Database,
		BackendPID: s.opts.BackendPID, Now: now.UTC(), SortBudget: s.opts.SortBudget,
		Random: s.random, SetSeed: s.setSeed, Clock: s.opts.Clock, SignalBackend: s.opts.Signal, Notice: s.notice,
		FunctionText: pgcatalog.FunctionText}
}

// stmtCatalog resolves a statement's relations: the emulated system
// catalogs, and the user tables (in schema public, on the search path
// after pg_catalog as in PostgreSQL). It remembers the user tables it
// handed out, for the dialect's limits (no joins or subqueries over user
// tables) and so their key predicates see the statement's parameters.
type stmtCatalog struct {
	s *Session
	// extra columns per table: undeclared qualifiers of open families
	// that the statement names.
	extra map[string][]catalog.Column
	// asOf, if not 0, is the time (µs) the statement reads its tables
	// at (AS OF TIMESTAMP); set before each execution.
	asOf int64
	// analyze: EXPLAIN ANALYZE, so reads gather the tablet servers'
	// statistics.
	analyze bool
	// verbose: EXPLAIN (VERBOSE), which names each tablet's server.
	verbose bool
	user    []*tableRel
	params  []uint32
}

func (c *stmtCatalog) Relation(ctx context.Context, schema, name string) (pgeval.Relation, error) {
	switch schema {
	case "", "pg_catalog", "information_schema":
		if rel, ok := c.s.systemRelation(schema, name); ok {
			return rel, nil
		}
		if schema != "" {
			return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation \"%s.%s\" does not exist", schema, name)
		}
	case "public":
	case cellsSchema:
		if c.s.opts.Tables == nil {
			return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation \"cells.%s\" does not exist", name)
		}
		def, _, err := c.s.opts.Tables.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		c.user = append(c.user, &tableRel{name: name})
		return &cellsRel{s: c.s, name: name, def: def, cat: c}, nil
	default:
		return nil, sqlstate.Errorf("3F000", "schema %q does not exist", schema)
	}
	if c.s.opts.Tables == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation %q does not exist", name)
	}
	def, _, err := c.s.opts.Tables.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	rel := &tableRel{s: c.s, name: name, codec: newRowCodec(def, c.extra[name]), cat: c, params: &c.params}
	c.user = append(c.user, rel)
	return rel, nil
}

// cellsSchema holds each table's cells view (cells.go).
const cellsSchema = "cells"

// compileTable plans a statement that reads or writes tables.
func (s *Session) compileTable(ctx context.Context, p piece, n *pg.Node, paramOIDs []uint32) (*Statement, error) {
	switch x := n.Node.(type) {
	case *pg.Node_SelectStmt:
		if p.asOf != "" {
			return s.compileAsOf(ctx, p, n, paramOIDs)
		}
		return s.compileQuery(ctx, p.text, n, paramOIDs)
	case *pg.Node_InsertStmt:
		return s.compileInsert(ctx, p, x.InsertStmt, paramOIDs)
	case *pg.Node_UpdateStmt:
		return s.compileUpdate(ctx, p.text, x.UpdateStmt, paramOIDs)
	case *pg.Node_DeleteStmt:
		return s.compileDelete(ctx, p.text, x.DeleteStmt, paramOIDs)
	case *pg.Node_ExplainStmt:
		return s.compileExplain(ctx, p, x.ExplainStmt, paramOIDs)
	case *pg.Node_CopyStmt:
		return s.compileCopy(ctx, &Statement{SQL: p.text}, x.CopyStmt)
	case *pg.Node_DeclareCursorStmt:
		return s.compileDeclare(ctx, &Statement{SQL: p.text}, x.DeclareCursorStmt)
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%s is not supported", statementName(n))
}

// queryPlan is a prepared SELECT.
type queryPlan struct {
	plan *pgeval.Plan
	cat  *stmtCatalog
}

// prepareQuery plans a SELECT over the catalog and user tables.
func (s *Session) prepareQuery(ctx context.Context, n *pg.Node, paramOIDs []uint32) (*queryPlan, error) {
	cat := &stmtCatalog{s: s}
	if err := s.resolveNames(ctx, n, cat); err != nil {
		return nil, err
	}
	cat.params = paramOIDs
	plan, err := pgeval.Prepare(ctx, n, s.env(cat), paramOIDs)
	if err != nil {
		return nil, err
	}
	if err := dialectLimits(n, cat); err != nil {
		return nil, err
	}
	// Key and value terms compiled while planning saw the parameter
	// types the client gave; now that all are known, compile them again.
	cat.params = plan.Params()
	for _, r := range cat.user {
		r.terms = nil
	}
	return &queryPlan{plan: plan, cat: cat}, nil
}

// dialectLimits refuses what the dialect leaves out: joins and
// subqueries over user tables (the catalog's tables may be joined).
func dialectLimits(n *pg.Node, cat *stmtCatalog) error {
	if len(cat.user) == 0 {
		return nil
	}
	table := cat.user[0].name
	if hasSubquery(n) {
		return sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "subqueries over user tables are not supported (table %s); a statement reads one table, once", table)
	}
	if len(cat.user) > 1 {
		names := []string{}
		for _, r := range cat.user {
			names = append(names, r.name)
		}
		return sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "joins over user tables are not supported (this query reads %s); a statement reads one table", strings.Join(names, ", "))
	}
	var what string
	walk(n, func(m protoMessage) bool {
		switch x := m.(type) {
		case *pg.JoinExpr:
			what = "joins"
		case *pg.SelectStmt:
			if len(x.FromClause) > 1 {
				what = "joins"
			}
		}
		return what == ""
	})
	if what != "" {
		return sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%s over user tables are not supported (table %s); a statement reads one table", what, table)
	}
	return nil
}

func (s *Session) compileQuery(ctx context.Context, text string, n *pg.Node, paramOIDs []uint32) (*Statement, error) {
	q, err := s.prepareQuery(ctx, n, paramOIDs)
	if err != nil {
		return nil, err
	}
	st := &Statement{SQL: text, Columns: q.plan.Columns(), Params: q.plan.Params(), kind: "SELECT"}
	st.asOf = func(us int64) { q.cat.asOf = us }
	reads := readsRelation(n.GetSelectStmt())
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		// An error while the rows are made comes with the rows before
		// it, which PostgreSQL would have streamed to the client after
		// their RowDescription. Without rows or a relation to read, the
		// error is taken for one PostgreSQL finds while planning, before
		// any RowDescription: a constant it folds (SELECT 1/0).
		res := &Result{Columns: st.Columns}
		failed := func(err error) (*Result, error) {
			if len(res.Rows) == 0 && !reads {
				return nil, err
			}
			return res, err
		}
		rows, err := q.plan.Run(ctx, s.env(q.cat), args)
		if err != nil {
			return failed(err)
		}
		defer rows.Close()
		size := int64(0)
		for {
			row, err := rows.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				return failed(err)
			}
			res.Rows = append(res.Rows, row)
			if size += rowSize(row); size > s.resultBudget() {
				return nil, sqlstate.Errorf(codeOutOfMemory, "the result is larger than %d MiB, which a statement's result may hold in the gateway; use LIMIT, or a cursor (DECLARE … FETCH) over ranges of the key", s.resultBudget()>>20)
			}
		}
		res.Tag = selectTag(len(res.Rows))
		return res, nil
	}
	return st, nil
}

// readsRelation reports whether a SELECT (or an arm of its set
// operation) has a FROM clause.
func readsRelation(sel *pg.SelectStmt) bool {
	if sel == nil {
		return false
	}
	return len(sel.FromClause) > 0 || readsRelation(sel.Larg) || readsRelation(sel.Rarg)
}

// resolveNames prepares a statement's column names for the evaluator:
// the second spelling of family:qualifier (family.qualifier, for tools
// that treat a colon as a variable marker) becomes the first, and an open
// family's undeclared qualifiers that the statement names become columns
// of its table for this statement.
func (s *Session) resolveNames(ctx context.Context, n *pg.Node, cat *stmtCatalog) error {
	if s.opts.Tables == nil {
		return nil
	}
	// The user tables the statement names, by name and alias.
	tables := map[string]*catalog.Table{}
	walk(n, func(m protoMessage) bool {
		rv, ok := m.(*pg.RangeVar)
		if !ok || (rv.Schemaname != "" && rv.Schemaname != "public") || strings.HasPrefix(rv.Relname, "pg_") {
			return true
		}
		def, _, err := s.opts.Tables.Get(ctx, rv.Relname)
		if err != nil {
			return true
		}
		tables[rv.Relname] = def
		if rv.Alias != nil {
			tables[rv.Alias.Aliasname] = def
		}
		return true
	})
	if len(tables) == 0 {
		return nil
	}
	var only *catalog.Table
	for _, d := range tables {
		if only != nil && only != d {
			return nil // several tables: the dialect refuses it later
		}
		only = d
	}
	cols := newStmtColumns(only)
	use := cols.use
	columnRefs(n, false, func(c *pg.ColumnRef) {
		f := fieldNames(c)
		switch {
		case len(f) == 1:
			use(f[0])
		case len(f) == 2 && tables[f[0]] != nil:
			use(f[1])
		case len(f) == 2 && f[1] != "*" && use(f[0]+":"+f[1]):
			c.Fields = []*pg.Node{strNode(f[0] + ":" + f[1])}
		case len(f) == 3 && tables[f[0]] != nil && use(f[1]+":"+f[2]):
			c.Fields = []*pg.Node{c.Fields[0], strNode(f[1] + ":" + f[2])}
		}
	})
	cat.extra = map[string][]catalog.Column{only.Name: cols.extra}
	return nil
}

// stmtColumns collects the columns of a table that a statement names:
// its visible ones, and the undeclared qualifiers of its open families
// that the statement uses, which become columns for this statement.
type stmtColumns struct {
	def   *catalog.Table
	seen  map[string]bool
	extra []catalog.Column
}

func newStmtColumns(def *catalog.Table) *stmtColumns {
	c := &stmtColumns{def: def, seen: map[string]bool{}}
	for _, col := range def.Visible() {
		c.seen[col.Name] = true
	}
	return c
}

// use reports whether name is a column of the table, adding an
// undeclared qualifier's column the first time.
func (c *stmtColumns) use(name string) bool {
	if c.seen[name] {
		return true
	}
	col, ok := c.def.Column(name)
	if ok {
		c.seen[name] = true
		c.extra = append(c.extra, col)
	}
	return ok
}

// compileAsOf plans a query that reads its tables as of a past time:
// each column shows its newest version at or before it. Deletions are
// not undone: as in Bigtable, a deletion hides the cells it covers at
// every time (the cells are gone at the next major compaction).
func (s *Session) compileAsOf(ctx context.Context, p piece, n *pg.Node, paramOIDs []uint32) (*Statement, error) {
	inner, err := s.compileQuery(ctx, p.text, n, paramOIDs)
	if err != nil {
		return nil, err
	}
	at, params, err := s.asOfTime(p.asOf, inner.Params)
	if err != nil {
		return nil, err
	}
	st := &Statement{SQL: p.text, Columns: inner.Columns, Params: params, kind: "SELECT"}
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		us, err := at(ctx, s, args)
		if err != nil {
			return nil, err
		}
		inner.asOf(us)
		return inner.run(ctx, s, args)
	}
	return st, nil
}

// asOfTime compiles AS OF TIMESTAMP's expression (a constant or a
// parameter, which is a timestamptz) into the time it reads at, in µs.
func (s *Session) asOfTime(text string, params []uint32) (func(context.Context, *Session, []any) (int64, error), []uint32, error) {
	tree, err := pg.Parse("SELECT " + text)
	if err != nil {
		return nil, nil, syntaxError(err)
	}
	target := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
	e, err := pgeval.CompileExprAs(target, nil, pgtypes.OIDTimestamptz, s.env(nil), params)
	if err != nil {
		return nil, nil, err
	}
	if ps := e.Params(); len(ps) > len(params) {
		params = ps
	}
	return func(ctx context.Context, s *Session, args []any) (int64, error) {
		v, err := e.Eval(ctx, s.env(nil), nil, args)
		if err != nil {
			return 0, err
		}
		if v == nil {
			return 0, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "AS OF TIMESTAMP is NULL")
		}
		return v.(time.Time).UnixMicro(), nil
	}, params, nil
}

// resultBudget bounds the rows a statement's result holds in the gateway
// before they are sent (1 GiB unless SessionOptions.ResultBudget says).
func (s *Session) resultBudget() int64 {
	if s.opts.ResultBudget > 0 {
		return s.opts.ResultBudget
	}
	return 1 << 30
}

// rowSize estimates the memory a row holds.
func rowSize(row []any) int64 {
	n := int64(16 * len(row))
	for _, v := range row {
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		}
	}
	return n
}

// selectTags are the command tags of the commonest row counts, made once.
var selectTags = func() (t [16]string) {
	for i := range t {
		t[i] = "SELECT " + strconv.Itoa(i)
	}
	return t
}()

func selectTag(n int) string {
	if n < len(selectTags) {
		return selectTags[n]
	}
	return "SELECT " + strconv.Itoa(n)
}
