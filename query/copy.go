package query

import (
	"context"
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// COPY (query) TO STDOUT and COPY table [(columns)] TO STDOUT: the rows
// in COPY's text, CSV or binary format, which the wire layer writes
// (psql's \copy uses it too). COPY table FROM STDIN: copyin.go.

// CopyOut asks the wire layer to send a result as COPY data.
type CopyOut struct {
	Format    string // "text", "csv" or "binary"
	Header    bool
	Delimiter string
	Null      string
	Quote     string
}

func (s *Session) compileCopy(ctx context.Context, st *Statement, c *pg.CopyStmt) (*Statement, error) {
	if c.Filename != "" || c.IsProgram {
		return nil, sqlstate.Errorf(sqlstate.CodeInsufficientPrivilege, "COPY to or from a file or program on the server is not allowed; use STDIN/STDOUT or psql's \\copy")
	}
	out, err := copyOptions(c)
	if err != nil {
		return nil, err
	}
	if c.IsFrom {
		return s.compileCopyFrom(ctx, st, c, out)
	}
	query := c.Query
	if c.Relation != nil {
		// COPY t [(cols)] TO STDOUT is SELECT cols FROM t.
		sel := &pg.SelectStmt{FromClause: []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: c.Relation}}}}
		if len(c.Attlist) == 0 {
			sel.TargetList = []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{{Node: &pg.Node_AStar{AStar: &pg.A_Star{}}}}}}}}}}}
		}
		for _, a := range c.Attlist {
			sel.TargetList = append(sel.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{a}}}}}}})
		}
		query = &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}}
	}
	inner, err := s.compile(ctx, st.SQL, query, nil)
	if err != nil {
		return nil, err
	}
	if inner.Columns == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "COPY query must return rows")
	}
	st.Params = inner.Params
	st.run = func(ctx context.Context, s *Session, args []any) (*Result, error) {
		res, err := inner.run(ctx, s, args)
		if err != nil {
			return nil, err
		}
		return &Result{Columns: res.Columns, Rows: res.Rows, Tag: fmt.Sprintf("COPY %d", len(res.Rows)), Copy: out}, nil
	}
	return st, nil
}

// copyOptions reads COPY's options.
func copyOptions(c *pg.CopyStmt) (*CopyOut, error) {
	out := &CopyOut{Format: "text", Delimiter: "\t", Null: `\N`, Quote: `"`}
	delimSet, nullSet := false, false
	for _, o := range c.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		arg := ""
		if d.Arg != nil {
			switch a := d.Arg.Node.(type) {
			case *pg.Node_String_:
				arg = a.String_.Sval
			case *pg.Node_Boolean:
				arg = map[bool]string{true: "true", false: "false"}[a.Boolean.Boolval]
			case *pg.Node_Integer:
				arg = fmt.Sprint(a.Integer.Ival)
			}
		}
		switch d.Defname {
		case "format":
			switch strings.ToLower(arg) {
			case "text", "csv", "binary":
				out.Format = strings.ToLower(arg)
			default:
				return nil, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "COPY format %q not recognized", arg)
			}
		case "header":
			v := arg
			if v == "" {
				v = "true" // HEADER alone
			}
			h, err := pgtypes.ParseText(pgtypes.OIDBool, v)
			if err != nil {
				return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "header requires a Boolean value")
			}
			out.Header = h.(bool)
		case "delimiter":
			if len(arg) != 1 {
				return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "COPY delimiter must be a single one-byte character")
			}
			out.Delimiter, delimSet = arg, true
		case "null":
			out.Null, nullSet = arg, true
		case "quote":
			if len(arg) != 1 {
				return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "COPY quote must be a single one-byte character")
			}
			out.Quote = arg
		default:
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "COPY option %q is not supported", d.Defname)
		}
	}
	if out.Format == "csv" {
		if !delimSet {
			out.Delimiter = ","
		}
		if !nullSet {
			out.Null = ""
		}
	}
	if out.Format == "binary" && (delimSet || nullSet || out.Header) {
		return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "cannot specify DELIMITER, NULL or HEADER in BINARY mode")
	}
	if out.Header && out.Format == "text" {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "COPY HEADER available only in CSV mode")
	}
	return out, nil
}
