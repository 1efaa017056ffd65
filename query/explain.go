package query

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// EXPLAIN shows a query's plan: the evaluator's plan tree with, at each
// scan of a user table, its row ranges and pushed-down limit. EXPLAIN
// ANALYZE runs the query and adds rows and time per step. Writes are
// explained by the scan that finds their rows.

func (s *Session) compileExplain(ctx context.Context, p piece, ex *pg.ExplainStmt, paramOIDs []uint32) (*Statement, error) {
	analyze, verbose := false, false
	// TIMING and SUMMARY default to ANALYZE's value, as in PostgreSQL.
	var timing, summary *bool
	for _, o := range ex.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		on := d.Arg == nil || defTrue(d.Arg)
		switch strings.ToLower(d.Defname) {
		case "analyze":
			analyze = on
		case "verbose":
			verbose = on
		case "timing":
			timing = &on
		case "summary":
			summary = &on
		case "costs", "buffers", "settings", "wal":
		case "format":
			if v := strings.ToLower(d.Arg.GetString_().GetSval()); v != "" && v != "text" {
				return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "EXPLAIN (FORMAT %s) is not supported; the format is text", strings.ToUpper(v))
			}
		default:
			return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "unrecognized EXPLAIN option %q", d.Defname)
		}
	}
	if timing != nil && *timing && !analyze {
		return nil, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "EXPLAIN option TIMING requires ANALYZE")
	}
	mode := pgeval.ExplainPlan
	if analyze {
		mode = pgeval.ExplainAnalyze
		if timing != nil && !*timing {
			mode = pgeval.ExplainAnalyzeNoTiming
		}
	}
	showTime := analyze && (summary == nil || *summary)
	st := &Statement{SQL: p.text, Columns: []pgtypes.Column{{Name: "QUERY PLAN", OID: pgtypes.OIDText}}, kind: "EXPLAIN"}
	var q *queryPlan
	var asOf func(context.Context, *Session, []any) (int64, error)
	var head string
	var inner *Statement
	switch x := ex.Query.Node.(type) {
	case *pg.Node_SelectStmt:
		var err error
		if q, err = s.prepareQuery(ctx, ex.Query, paramOIDs); err != nil {
			return nil, err
		}
		st.Params = q.plan.Params()
		q.cat.analyze, q.cat.verbose = analyze, verbose
		if p.asOf != "" {
			if asOf, st.Params, err = s.asOfTime(p.asOf, st.Params); err != nil {
				return nil, err
			}
		}
	case *pg.Node_UpdateStmt, *pg.Node_DeleteStmt, *pg.Node_InsertStmt:
		var err error
		if inner, err = s.compileTable(ctx, piece{text: p.text, upsert: p.explainUpsert}, ex.Query, paramOIDs); err != nil {
			return nil, err
		}
		st.Params = inner.Params
		switch y := x.(type) {
		case *pg.Node_UpdateStmt:
			head = "Update on " + y.UpdateStmt.Relation.Relname + " (each row: a compare-and-swap of the values read)"
			t, err := s.userTarget(ctx, y.UpdateStmt.Relation, y.UpdateStmt, false)
			if err == nil {
				q, err = s.candidates(ctx, t, y.UpdateStmt.WhereClause, &exprs{s: s, t: t, params: append([]uint32(nil), paramOIDs...)}, nil)
			}
			if err != nil {
				return nil, err
			}
		case *pg.Node_DeleteStmt:
			head = "Delete on " + y.DeleteStmt.Relation.Relname + " (each row: a check-and-mutate)"
			t, err := s.userTarget(ctx, y.DeleteStmt.Relation, y.DeleteStmt, false)
			if err == nil {
				q, err = s.candidates(ctx, t, y.DeleteStmt.WhereClause, &exprs{s: s, t: t, params: append([]uint32(nil), paramOIDs...)}, nil)
			}
			if err != nil {
				return nil, err
			}
		case *pg.Node_InsertStmt:
			head = "Insert on " + y.InsertStmt.Relation.Relname
			switch {
			case p.explainUpsert:
				head += " (each row: a blind write)"
			case y.InsertStmt.OnConflictClause != nil:
				head += " (each row: a check-and-mutate, ON CONFLICT)"
			default:
				head += " (each row: a check-and-mutate; 23505 if it exists)"
			}
		}
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "EXPLAIN of %s is not supported", statementName(ex.Query))
	}
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		res := &Result{Columns: st.Columns, Tag: "EXPLAIN"}
		if q != nil {
			for _, r := range q.cat.user {
				r.stats = ReadStats{} // this execution's reads only
			}
		}
		if asOf != nil {
			us, err := asOf(ctx, s, args)
			if err != nil {
				return nil, err
			}
			q.cat.asOf = us
		}
		var lines []string
		if head != "" {
			lines = append(lines, head)
		}
		start := time.Now()
		if analyze {
			if inner != nil {
				r, err := inner.run(ctx, s, args)
				if err != nil {
					return nil, err
				}
				lines = append(lines, "  Result: "+r.Tag)
			} else if q != nil {
				rows, err := q.plan.RunAnalyzed(ctx, s.env(q.cat), args)
				if err != nil {
					return nil, err
				}
				for {
					if _, err := rows.Next(ctx); err == io.EOF {
						break
					} else if err != nil {
						rows.Close()
						return nil, err
					}
				}
				rows.Close()
			}
		}
		if q != nil {
			m := mode
			if inner != nil {
				m = pgeval.ExplainPlan // the write ran, not this scan
			}
			for _, l := range q.plan.Explain(m) {
				if head != "" {
					l = "  " + l
				}
				lines = append(lines, l)
			}
		}
		if showTime {
			lines = append(lines, fmt.Sprintf("Execution Time: %.3f ms", float64(time.Since(start).Microseconds())/1000))
		}
		for _, l := range lines {
			res.Rows = append(res.Rows, []any{l})
		}
		return res, nil
	}
	return st, nil
}

func defTrue(n *pg.Node) bool {
	switch {
	case n.GetString_() != nil:
		v := strings.ToLower(n.GetString_().Sval)
		return v == "true" || v == "on" || v == "1"
	case n.GetBoolean() != nil:
		return n.GetBoolean().Boolval
	case n.GetInteger() != nil:
		return n.GetInteger().Ival != 0
	case n.GetAConst() != nil:
		c := n.GetAConst()
		if c.GetBoolval() != nil {
			return c.GetBoolval().Boolval
		}
		if c.GetSval() != nil {
			v := strings.ToLower(c.GetSval().Sval)
			return v == "true" || v == "on" || v == "1"
		}
		if c.GetIval() != nil {
			return c.GetIval().Ival != 0
		}
	}
	return true
}
