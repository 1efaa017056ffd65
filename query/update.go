package query

import (
	"context"
	"io"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// candidates plans the scan of the rows a WHERE selects, returning every
// target column in the target's order: those of need (nil: all) as read,
// the others as NULL, so that the read needs only their families (the
// tablet servers check the user's right to read each family it reads).
func (s *Session) candidates(ctx context.Context, t *target, where *pg.Node, x *exprs, need []bool) (*queryPlan, error) {
	sel := &pg.SelectStmt{FromClause: []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: &pg.RangeVar{Relname: t.name, Inh: true, Relpersistence: "p", Location: -1}}}}, WhereClause: where}
	for i, c := range t.codec.cols {
		val := &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{strNode(c.Name)}, Location: -1}}}
		if need != nil && !need[i] {
			val = &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Isnull: true, Location: -1}}}
		}
		sel.TargetList = append(sel.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: val, Location: -1}}})
	}
	q, err := s.prepareQuery(ctx, &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}}, x.params)
	if err != nil {
		return nil, err
	}
	if where != nil {
		x.mergeUsed(q.plan.Params(), where)
	}
	return q, nil
}

// rowLoop runs fn on each candidate row; fn returns whether the row
// counts. Rows are independent writes: with concurrent set, up to
// writeParallel run at once.
func (s *Session) rowLoop(ctx context.Context, q *queryPlan, args []any, concurrent bool, fn func(vals []any) (bool, error)) (int, error) {
	rows, err := q.plan.Run(ctx, s.env(q.cat), args)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	par := newParallel(ctx, concurrent)
	for {
		vals, err := rows.Next(ctx)
		if err == io.EOF {
			return par.wait()
		}
		if err != nil {
			par.wait()
			return 0, err
		}
		if err := par.do(func() (bool, error) { return fn(vals) }); err != nil {
			par.wait()
			return 0, err
		}
	}
}

// again waits before another attempt at a row another writer changed,
// reads it again, and reports whether it still exists and passes where.
func (s *Session) again(ctx context.Context, t *target, key []byte, attempt int, where *pgeval.Expr, env *pgeval.Env, args []any, need []bool) ([]any, bool, error) {
	if err := contended(ctx, t, attempt); err != nil {
		return nil, false, err
	}
	cur, found, err := s.readRow(ctx, t, key, need)
	if err != nil || !found {
		return nil, false, err
	}
	if where != nil {
		ok, err := where.Eval(ctx, env, cur, args)
		if err != nil || ok != true {
			return nil, false, err
		}
	}
	return cur, true, nil
}

func (s *Session) compileUpdate(ctx context.Context, text string, up *pg.UpdateStmt, paramOIDs []uint32) (*Statement, error) {
	if len(up.FromClause) > 0 || up.WithClause != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "UPDATE … FROM and WITH are not supported: a statement reads one table")
	}
	t, err := s.userTarget(ctx, up.Relation, up, false)
	if err != nil {
		return nil, err
	}
	x := &exprs{s: s, t: t, params: append([]uint32(nil), paramOIDs...)}
	set, err := x.setList(up.TargetList)
	if err != nil {
		return nil, err
	}
	var where *pgeval.Expr
	if up.WhereClause != nil {
		if hasSubquery(up.WhereClause) {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "subqueries over user tables are not supported (table %s)", t.name)
		}
		if where, err = x.compile(up.WhereClause, pgtypes.OIDBool); err != nil {
			return nil, err
		}
	}
	nodes := []protoMessage{up.WhereClause}
	for _, it := range set {
		nodes = append(nodes, it.node)
	}
	named := t.namedColumns(nodes...)
	need := t.readNeed(named, len(up.ReturningList) > 0)
	q, err := s.candidates(ctx, t, up.WhereClause, x, need)
	if err != nil {
		return nil, err
	}
	ret, err := x.returning(up.ReturningList)
	if err != nil {
		return nil, err
	}
	st := &Statement{SQL: text, Params: x.final(), kind: "UPDATE"}
	if ret != nil {
		st.Columns = ret.cols
	}
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		env := s.env(nil)
		var out [][]any
		n, err := s.rowLoop(ctx, q, args, s.txw == nil && ret == nil, func(vals []any) (bool, error) {
			key, err := t.key(vals)
			if err != nil {
				return false, err
			}
			for attempt := 0; ; attempt++ {
				w, newRow, err := applySet(ctx, env, t, set, vals, args, -1)
				if err != nil {
					return false, err
				}
				muts, err := t.mutations(w, true)
				if err != nil {
					return false, err
				}
				expects, err := t.expects(vals, named)
				if err != nil {
					return false, err
				}
				held := true
				if s.txw != nil {
					first := !s.txw.has(t.name, key)
					br := s.txw.add(t.name, key, muts, false)
					if first {
						br.expects, br.mustExist = expects, true
					}
				} else if held, err = s.kv().CompareAndMutate(ctx, t.name, key, expects, muts, nil); err != nil {
					return false, kvError(err, true)
				}
				if held {
					if ret != nil {
						r, err := ret.row(ctx, env, newRow, args)
						if err != nil {
							return false, err
						}
						out = append(out, r)
					}
					return true, nil
				}
				// Changed or gone since it was read: read it again, and
				// check that it still qualifies.
				cur, ok, err := s.again(ctx, t, key, attempt, where, env, args, need)
				if err != nil || !ok {
					return false, err
				}
				vals = cur
			}
		})
		if err != nil {
			return nil, err
		}
		return tagResult("UPDATE", n, ret, out), nil
	}
	return st, nil
}

func (s *Session) compileDelete(ctx context.Context, text string, del *pg.DeleteStmt, paramOIDs []uint32) (*Statement, error) {
	if len(del.UsingClause) > 0 || del.WithClause != nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "DELETE … USING and WITH are not supported: a statement reads one table")
	}
	t, err := s.userTarget(ctx, del.Relation, del, false)
	if err != nil {
		return nil, err
	}
	x := &exprs{s: s, t: t, params: append([]uint32(nil), paramOIDs...)}
	var where *pgeval.Expr
	if del.WhereClause != nil {
		if hasSubquery(del.WhereClause) {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "subqueries over user tables are not supported (table %s)", t.name)
		}
		if where, err = x.compile(del.WhereClause, pgtypes.OIDBool); err != nil {
			return nil, err
		}
	}
	named := t.namedColumns(del.WhereClause)
	need := t.readNeed(named, len(del.ReturningList) > 0)
	q, err := s.candidates(ctx, t, del.WhereClause, x, need)
	if err != nil {
		return nil, err
	}
	ret, err := x.returning(del.ReturningList)
	if err != nil {
		return nil, err
	}
	st := &Statement{SQL: text, Params: x.final(), kind: "DELETE"}
	if ret != nil {
		st.Columns = ret.cols
	}
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		env := s.env(nil)
		var out [][]any
		n, err := s.rowLoop(ctx, q, args, s.txw == nil && ret == nil, func(vals []any) (bool, error) {
			key, err := t.key(vals)
			if err != nil {
				return false, err
			}
			for attempt := 0; ; attempt++ {
				expects, err := t.expects(vals, named)
				if err != nil {
					return false, err
				}
				muts := []model.Mutation{model.DeleteRow()}
				held := true
				if s.txw != nil {
					first := !s.txw.has(t.name, key)
					br := s.txw.add(t.name, key, muts, false)
					if first {
						br.expects, br.mustExist = expects, true
					}
				} else if held, err = s.kv().CompareAndMutate(ctx, t.name, key, expects, muts, nil); err != nil {
					return false, kvError(err, true)
				}
				if held {
					if ret != nil {
						r, err := ret.row(ctx, env, vals, args)
						if err != nil {
							return false, err
						}
						out = append(out, r)
					}
					return true, nil
				}
				if len(expects) == 0 {
					return false, nil // deleted by someone else
				}
				cur, ok, err := s.again(ctx, t, key, attempt, where, env, args, need)
				if err != nil || !ok {
					return false, err
				}
				vals = cur
			}
		})
		if err != nil {
			return nil, err
		}
		return tagResult("DELETE", n, ret, out), nil
	}
	return st, nil
}
