package pgwire

import (
	"context"
	"sort"

	"github.com/cellardb/cellar/query/pgcatalog"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// A conn's named portals are query.Portals: FETCH, MOVE and CLOSE in SQL
// reach them as they reach cursors, as in PostgreSQL.

func (c *conn) HasPortal(name string) bool {
	_, ok := c.portals[name]
	return ok && name != ""
}

func (c *conn) ClosePortal(name string) bool {
	if name == "" {
		n := len(c.portals)
		clear(c.portals)
		return n > 0
	}
	if _, ok := c.portals[name]; !ok {
		return false
	}
	delete(c.portals, name)
	return true
}

func (c *conn) PortalColumns(name string) ([]pgtypes.Column, bool) {
	p, ok := c.portals[name]
	if !ok || name == "" {
		return nil, false
	}
	return p.cols, true
}

func (c *conn) FetchPortal(ctx context.Context, name string, n int64) ([]pgtypes.Column, [][]any, error) {
	p, ok := c.portals[name]
	if !ok || name == "" {
		return nil, nil, sqlstate.Errorf(sqlstate.CodeInvalidCursorName, "cursor %q does not exist", name)
	}
	if p.cols == nil {
		return nil, nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "FETCH and MOVE read only portals of queries; portal %q is not one", name)
	}
	if p.res == nil {
		// The FETCH's own context bounds the portal's statement.
		res, err := c.sess.Execute(ctx, p.st, p.args)
		if err != nil {
			return nil, nil, err
		}
		c.sendNotices(res.Notices)
		p.res = res
	}
	end := len(p.res.Rows)
	if n >= 0 && int64(end-p.pos) > n {
		end = p.pos + int(n)
	}
	rows := p.res.Rows[p.pos:end]
	p.pos = end
	return p.res.Columns, rows, nil
}

// preparedStatements lists the named prepared statements, by name, for
// pg_prepared_statements (pgx checks there what a failed Prepare left).
func (c *conn) preparedStatements() []pgcatalog.PreparedStatement {
	var out []pgcatalog.PreparedStatement
	for name, p := range c.stmts {
		if name == "" {
			continue
		}
		ps := pgcatalog.PreparedStatement{Name: name, Statement: p.sql, PrepareTime: p.at, ParameterTypes: []uint32{}}
		if p.st != nil {
			ps.ParameterTypes = p.st.Params
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
