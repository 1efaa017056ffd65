package query

import (
	"context"
	"fmt"
	"math"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Cursors (DECLARE / FETCH / MOVE / CLOSE), which psycopg's named cursors
// use. A cursor holds its query's result, computed at DECLARE, and reads
// forward through it. One without HOLD lives until its transaction ends,
// and may only be declared inside a transaction block.

const cursorOptHold = 0x0020 // PostgreSQL's CURSOR_OPT_HOLD

// Portals are a connection's named portals of the extended protocol. In
// PostgreSQL they share one namespace with cursors: FETCH, MOVE and CLOSE
// name either (asyncpg's Cursor.forward sends MOVE for a portal it bound
// with Bind), and neither name may be taken twice.
type Portals interface {
	// FetchPortal reads up to n rows (all if n < 0) from the named
	// portal's position on and moves past them, running its statement
	// if no Execute has yet.
	FetchPortal(ctx context.Context, name string, n int64) (cols []pgtypes.Column, rows [][]any, err error)
	// ClosePortal closes the named portal, or every one for "", and
	// reports whether there was one.
	ClosePortal(name string) bool
	// HasPortal reports whether the named portal exists.
	HasPortal(name string) bool
	// PortalColumns describes the named portal's rows (nil: none).
	PortalColumns(name string) ([]pgtypes.Column, bool)
}

type cursor struct {
	columns []pgtypes.Column
	rows    [][]any
	pos     int
	hold    bool
}

func (s *Session) compileDeclare(ctx context.Context, st *Statement, d *pg.DeclareCursorStmt) (*Statement, error) {
	inner, err := s.compile(ctx, st.SQL, d.Query, nil)
	if err != nil {
		return nil, err
	}
	if inner.Columns == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "cursor query must return rows")
	}
	name := d.Portalname
	hold := d.Options&cursorOptHold != 0
	st.Params = inner.Params
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		if !hold && s.tx == TxIdle {
			return nil, sqlstate.Errorf(sqlstate.CodeNoActiveTransaction, "DECLARE CURSOR can only be used in transaction blocks")
		}
		if _, exists := s.cursors[name]; exists || s.opts.Portals != nil && s.opts.Portals.HasPortal(name) {
			return nil, sqlstate.Errorf("42P03", "cursor %q already exists", name)
		}
		res, err := inner.run(ctx, s, args)
		if err != nil {
			return nil, err
		}
		s.cursors[name] = &cursor{columns: res.Columns, rows: res.Rows, hold: hold}
		return &Result{Tag: "DECLARE CURSOR"}, nil
	}
	return st, nil
}

func (s *Session) compileFetch(st *Statement, f *pg.FetchStmt) (*Statement, error) {
	name := f.Portalname
	if !f.Ismove {
		// FETCH's rows are the cursor's, as it is when the FETCH is
		// bound: pgx prepares a FETCH before its DECLARE has run.
		st.bound = func(s *Session) []pgtypes.Column {
			if c, ok := s.cursors[name]; ok {
				return c.columns
			}
			if s.opts.Portals != nil {
				cols, _ := s.opts.Portals.PortalColumns(name)
				return cols
			}
			return nil
		}
		st.Columns = st.bound(s)
	}
	st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
		c, ok := s.cursors[name]
		if !ok {
			return s.fetchPortal(ctx, f)
		}
		n := f.HowMany
		switch f.Direction {
		case pg.FetchDirection_FETCH_FORWARD:
		case pg.FetchDirection_FETCH_RELATIVE, pg.FetchDirection_FETCH_ABSOLUTE:
			if n < 0 {
				return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cursor can only scan forward")
			}
			if f.Direction == pg.FetchDirection_FETCH_ABSOLUTE {
				if int(n) <= c.pos {
					return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cursor can only scan forward")
				}
				c.pos = min(int(n)-1, len(c.rows))
				n = 1
			}
		default:
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cursor can only scan forward")
		}
		end := len(c.rows)
		if n != math.MaxInt64 && c.pos+int(n) < end {
			end = c.pos + int(n)
		}
		rows := c.rows[c.pos:end]
		c.pos = end
		if f.Ismove {
			return &Result{Tag: fmt.Sprintf("MOVE %d", len(rows))}, nil
		}
		return &Result{Columns: c.columns, Rows: rows, Tag: fmt.Sprintf("FETCH %d", len(rows))}, nil
	}
	return st, nil
}

// fetchPortal is FETCH or MOVE of a protocol portal: forward only, as
// cursors are here.
func (s *Session) fetchPortal(ctx context.Context, f *pg.FetchStmt) (*Result, error) {
	name := f.Portalname
	n := f.HowMany
	switch {
	case s.opts.Portals == nil || !s.opts.Portals.HasPortal(name):
		return nil, sqlstate.Errorf(sqlstate.CodeInvalidCursorName, "cursor %q does not exist", name)
	case f.Direction != pg.FetchDirection_FETCH_FORWARD && !(f.Direction == pg.FetchDirection_FETCH_RELATIVE && n >= 0):
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "cursor can only scan forward")
	case n == math.MaxInt64:
		n = -1
	}
	cols, rows, err := s.opts.Portals.FetchPortal(ctx, name, n)
	if err != nil {
		return nil, err
	}
	if f.Ismove {
		return &Result{Tag: fmt.Sprintf("MOVE %d", len(rows))}, nil
	}
	return &Result{Columns: cols, Rows: rows, Tag: fmt.Sprintf("FETCH %d", len(rows))}, nil
}

func (s *Session) compileClose(st *Statement, name string) (*Statement, error) {
	st.run = func(context.Context, *Session, []any) (*Result, error) {
		if name == "" {
			s.cursors = map[string]*cursor{}
			if s.opts.Portals != nil {
				s.opts.Portals.ClosePortal("")
			}
			return &Result{Tag: "CLOSE CURSOR ALL"}, nil
		}
		if _, ok := s.cursors[name]; !ok {
			if s.opts.Portals != nil && s.opts.Portals.ClosePortal(name) {
				return &Result{Tag: "CLOSE CURSOR"}, nil
			}
			return nil, sqlstate.Errorf(sqlstate.CodeInvalidCursorName, "cursor %q does not exist", name)
		}
		delete(s.cursors, name)
		return &Result{Tag: "CLOSE CURSOR"}, nil
	}
	return st, nil
}

// dropCursors ends the cursors of a transaction: all of them on
// rollback, the ones without HOLD on commit.
func (s *Session) dropCursors(commit bool) {
	for name, c := range s.cursors {
		if !commit || !c.hold {
			delete(s.cursors, name)
		}
	}
}

// BoundColumns describes the rows st returns if it is bound now. Only a
// FETCH's may differ from its Columns, which are as of Parse.
func (s *Session) BoundColumns(st *Statement) []pgtypes.Column {
	if st.bound != nil {
		return st.bound(s)
	}
	return st.Columns
}

// CursorColumns returns the columns of a declared cursor: on the wire a
// cursor is a portal, which a client may Describe by its name.
func (s *Session) CursorColumns(name string) ([]pgtypes.Column, bool) {
	c, ok := s.cursors[name]
	if !ok {
		return nil, false
	}
	return c.columns, true
}
