package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // the parser's value expressions

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pglex"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// The dialect's DDL and MySQL-style statements, read by the TiDB grammar
// after the PG lexical front end: CREATE TABLE, ALTER TABLE, DROP TABLE,
// SHOW TABLES, SHOW CREATE TABLE, DESCRIBE. Schemas are changed through
// the master, which keeps them in Chubby; DDL is not transactional and
// takes effect at once, even inside a transaction block.

// tidb returns the session's TiDB parser (a parser is not goroutine-safe;
// a session runs one statement at a time).
func (s *Session) tidb() *parser.Parser {
	if s.tidbParser == nil {
		s.tidbParser = parser.New()
		s.tidbParser.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes)
	}
	return s.tidbParser
}

// parseDialect runs the front end and the TiDB grammar over a statement.
func (s *Session) parseDialect(text string) (ast.StmtNode, *pglex.Result, error) {
	r, err := pglex.Rewrite(text)
	if err != nil {
		var le *pglex.Error
		if errors.As(err, &le) {
			code := sqlstate.CodeSyntaxError
			if le.Unsupported {
				code = sqlstate.CodeFeatureNotSupported
			}
			return nil, nil, &sqlstate.Error{Code: code, Message: le.Msg, Position: le.Position}
		}
		return nil, nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "%v", err)
	}
	if strings.TrimSpace(r.SQL) == "" || (len(r.Options) > 0 && alterOnly(r.SQL)) {
		return nil, r, nil
	}
	stmt, err := s.tidb().ParseOneStmt(r.SQL, "", "")
	if err != nil {
		return nil, nil, tidbSyntaxError(err, r)
	}
	return stmt, r, nil
}

// alterOnly: ALTER TABLE name with nothing left once SET (…) is out.
func alterOnly(sql string) bool {
	f := strings.Fields(sql)
	return len(f) == 3 && strings.EqualFold(f[0], "alter") && strings.EqualFold(f[1], "table")
}

// tidbSyntaxError turns the TiDB grammar's error into a 42601 pointing at
// the client's text ("near" quotes the text from the error on).
func tidbSyntaxError(err error, r *pglex.Result) error {
	msg := err.Error()
	e := &sqlstate.Error{Code: sqlstate.CodeSyntaxError, Message: "syntax error"}
	if i := strings.Index(msg, `near "`); i >= 0 {
		near := msg[i+len(`near "`):]
		if j := strings.LastIndex(near, `"`); j >= 0 {
			near = near[:j]
		}
		if k := strings.LastIndex(r.SQL, near); k >= 0 && near != "" {
			e.Position = r.InputPosition(k)
			tok := strings.Fields(near)
			if len(tok) > 0 {
				e.Message = fmt.Sprintf("syntax error at or near %q", strings.Trim(tok[0], `"`))
			}
		} else {
			e.Message = "syntax error at end of input"
			e.Position = r.InputPosition(len(r.SQL))
		}
	}
	return e
}

func (s *Session) compileDialect(ctx context.Context, p piece) (*Statement, error) {
	stmt, r, err := s.parseDialect(p.text)
	if err != nil {
		return nil, err
	}
	if s.opts.Tables == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this session is not connected to a cluster")
	}
	st := &Statement{SQL: p.text}
	switch x := stmt.(type) {
	case nil:
		if len(r.Options) > 0 {
			name := strings.Trim(strings.Fields(r.SQL)[2], `"`)
			st.kind, st.run = "ALTER TABLE", s.alterRun(name, func(t *catalog.Table, sc model.Schema) (*catalog.Altered, error) {
				return catalog.AlterOptions(t, sc, r.Options)
			})
			return st, nil
		}
		return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "syntax error at end of input")
	case *ast.CreateTableStmt:
		created, err := catalog.FromCreate(x, r.Options)
		if err != nil {
			return nil, err
		}
		name := created.Table.Name
		if err := checkTableName(name); err != nil {
			return nil, err
		}
		ifNotExists := x.IfNotExists
		st.kind = "CREATE TABLE"
		st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
			if _, _, err := s.opts.Tables.Get(ctx, name); err == nil {
				if ifNotExists {
					return &Result{Tag: "CREATE TABLE", Notices: []*sqlstate.Error{sqlstate.Notice("NOTICE", codeDuplicateTable, "relation %q already exists, skipping", name)}}, nil
				}
				return nil, sqlstate.Errorf(codeDuplicateTable, "relation %q already exists", name)
			}
			err := s.opts.Tables.KV.CreateTable(ctx, name, created.Schema, created.Splits)
			s.opts.Tables.Invalidate()
			if err != nil {
				if errors.Is(err, model.ErrAlreadyExists) {
					return nil, sqlstate.Errorf(codeDuplicateTable, "relation %q already exists", name)
				}
				return nil, kvError(err, true)
			}
			return &Result{Tag: "CREATE TABLE"}, nil
		}
	case *ast.DropTableStmt:
		if x.IsView {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "views are not supported")
		}
		var names []string
		for _, t := range x.Tables {
			names = append(names, t.Name.O)
		}
		ifExists := x.IfExists
		st.kind = "DROP TABLE"
		st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
			res := &Result{Tag: "DROP TABLE"}
			// Every name is checked before any table is dropped.
			var drop []string
			for _, name := range names {
				if _, _, err := s.opts.Tables.Get(ctx, name); err != nil {
					if ifExists {
						res.Notices = append(res.Notices, sqlstate.Notice("NOTICE", "00000", "table %q does not exist, skipping", name))
						continue
					}
					return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "table %q does not exist", name)
				}
				drop = append(drop, name)
			}
			for _, name := range drop {
				err := s.opts.Tables.KV.DeleteTable(ctx, name)
				s.opts.Tables.Invalidate()
				if err != nil {
					return nil, kvError(err, true)
				}
			}
			return res, nil
		}
	case *ast.AlterTableStmt:
		st.kind = "ALTER TABLE"
		st.run = s.alterRun(x.Table.Name.O, func(t *catalog.Table, sc model.Schema) (*catalog.Altered, error) {
			return catalog.FromAlter(t, sc, x)
		})
	case *ast.ShowStmt:
		return s.compileShowDialect(st, x)
	case *ast.ExplainStmt:
		// DESCRIBE t reads as EXPLAIN of a table.
		if show, ok := x.Stmt.(*ast.ShowStmt); ok && show.Tp == ast.ShowColumns {
			return s.compileShowDialect(st, show)
		}
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this form of EXPLAIN is not supported")
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%T is not supported", stmt)
	}
	return st, nil
}

// copySchema returns a deep copy of s, through the JSON the master
// stores schemas in.
func copySchema(s model.Schema) (model.Schema, error) {
	js, err := json.Marshal(s)
	if err != nil {
		return model.Schema{}, err
	}
	var out model.Schema
	err = json.Unmarshal(js, &out)
	return out, err
}

// checkTableName keeps user tables out of the system catalogs' names.
func checkTableName(name string) error {
	if strings.HasPrefix(name, "pg_") || name == "information_schema" || strings.Contains(name, "/") {
		return sqlstate.Errorf("42939", "table name %q is reserved", name)
	}
	return nil
}

func (s *Session) alterRun(name string, change func(*catalog.Table, model.Schema) (*catalog.Altered, error)) func(context.Context, *Session, []any) (*Result, error) {
	return func(ctx context.Context, s *Session, _ []any) (*Result, error) {
		def, sc, err := s.opts.Tables.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		// The change is made from sc, maybe from the schema cache, and
		// the master refuses it if the schema has changed since. change
		// may edit its schema's slices and maps, which the cache shares
		// with other sessions: it gets a copy.
		work, err := copySchema(sc)
		if err != nil {
			return nil, err
		}
		a, err := change(def, work)
		if err != nil {
			return nil, err
		}
		err = s.opts.Tables.KV.UpdateSchema(ctx, name, &sc, a.Schema)
		s.opts.Tables.Invalidate()
		if err != nil {
			return nil, kvError(err, true)
		}
		return &Result{Tag: "ALTER TABLE"}, nil
	}
}

func (s *Session) compileShowDialect(st *Statement, x *ast.ShowStmt) (*Statement, error) {
	text := func(names ...string) []pgtypes.Column {
		var out []pgtypes.Column
		for _, n := range names {
			out = append(out, pgtypes.Column{Name: n, OID: pgtypes.OIDText})
		}
		return out
	}
	switch x.Tp {
	case ast.ShowTables:
		st.kind, st.Columns = "SHOW TABLES", text("table_name")
		st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
			defs, err := s.opts.Tables.List(ctx)
			if err != nil {
				return nil, err
			}
			res := &Result{Columns: st.Columns}
			for _, d := range defs {
				res.Rows = append(res.Rows, []any{d.Name})
			}
			res.Tag = fmt.Sprintf("SHOW %d", len(res.Rows))
			return res, nil
		}
	case ast.ShowCreateTable:
		name := x.Table.Name.O
		st.kind, st.Columns = "SHOW CREATE TABLE", text("table_name", "create_statement")
		st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
			def, sc, err := s.opts.Tables.Get(ctx, name)
			if err != nil {
				return nil, err
			}
			var splits [][]byte
			if kv := s.kv(); kv != nil && !def.Plain {
				ts, err := kv.Tablets(ctx, name, model.RowRange{})
				if err != nil {
					return nil, err
				}
				for _, t := range ts {
					if len(t.Start) > 0 {
						splits = append(splits, t.Start)
					}
				}
			}
			return &Result{Columns: st.Columns, Rows: [][]any{{name, catalog.CreateStatement(def, sc, splits)}}, Tag: "SHOW 1"}, nil
		}
	case ast.ShowColumns:
		name := x.Table.Name.O
		st.kind, st.Columns = "DESCRIBE", text("column_name", "data_type", "is_nullable", "key", "family", "qualifier")
		st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
			def, _, err := s.opts.Tables.Get(ctx, name)
			if err != nil {
				return nil, err
			}
			res := &Result{Columns: st.Columns}
			for _, c := range def.Visible() {
				nullable, key := "YES", ""
				if c.NotNull {
					nullable = "NO"
				}
				if c.Key {
					key = "PRI"
				}
				qual := c.Qualifier
				if c.Family != "" && c.Qualifier == "" {
					qual = "(undeclared qualifiers)"
				}
				typ := c.TypeName()
				res.Rows = append(res.Rows, []any{c.Name, typ, nullable, key, c.Family, qual})
			}
			res.Tag = fmt.Sprintf("SHOW %d", len(res.Rows))
			return res, nil
		}
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "this SHOW form is not supported")
	}
	return st, nil
}
