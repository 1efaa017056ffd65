package query

import (
	"context"
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/sqlstate"
)

// GRANT and REVOKE of SELECT and UPDATE on a table, or on some of its
// families with PostgreSQL's column-privilege syntax, a family named as
// its column "family:" (GRANT SELECT ("a:"), UPDATE ("a:") ON t TO bob).
// They edit the table's ACL, which the tablet servers check
// (model.ACL); SELECT is read, UPDATE, INSERT and DELETE are write.

// ACLStore keeps the tables' ACLs. The session's KV implements it when
// the cluster has ACLs (ops/querykv keeps them in Chubby).
type ACLStore interface {
	// UpdateACL reads table's ACL (nil: the table has none), lets update
	// change it, and writes it back. update returning an error or a nil
	// ACL writes nothing.
	UpdateACL(ctx context.Context, table string, update func(acl *model.ACL) (*model.ACL, error)) error
}

// asUser returns ctx carrying the session's user as the principal of its
// kv calls: the tablet servers check their ACLs against it.
func (s *Session) asUser(ctx context.Context) context.Context {
	return s.principal.In(ctx)
}

// grantee is a GRANT's grantee as a principal.
func (s *Session) grantee(n *pg.Node) (string, error) {
	r := n.GetRoleSpec()
	if r == nil {
		return "", sqlstate.Errorf(sqlstate.CodeSyntaxError, "bad grantee")
	}
	switch r.Roletype {
	case pg.RoleSpecType_ROLESPEC_PUBLIC:
		return model.Everyone, nil
	case pg.RoleSpecType_ROLESPEC_CSTRING:
		return r.Rolename, nil
	}
	return s.opts.User, nil // CURRENT_USER, SESSION_USER, CURRENT_ROLE
}

// privilege is one privilege of a GRANT on some families ("*": all).
type privilege struct {
	read, write bool
	families    []string
}

func (s *Session) compileGrant(st *Statement, g *pg.GrantStmt) (*Statement, error) {
	verb := "REVOKE"
	if g.IsGrant {
		verb = "GRANT"
	}
	if g.Targtype != pg.GrantTargetType_ACL_TARGET_OBJECT || g.Objtype != pg.ObjectType_OBJECT_TABLE {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%s is supported on tables only (ON [TABLE] name)", verb)
	}
	if g.GrantOption {
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%s … GRANT OPTION is not supported: only superusers and a table's owner grant", verb)
	}
	var tables []string
	for _, o := range g.Objects {
		rv := o.GetRangeVar()
		if rv == nil {
			return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "bad table in %s", verb)
		}
		tables = append(tables, rv.Relname)
	}
	var grantees []string
	for _, n := range g.Grantees {
		p, err := s.grantee(n)
		if err != nil {
			return nil, err
		}
		grantees = append(grantees, p)
	}
	st.kind = verb
	st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
		for _, table := range tables {
			if err := s.grant(ctx, verb, table, g.Privileges, grantees); err != nil {
				return nil, err
			}
		}
		return &Result{Tag: verb}, nil
	}
	return st, nil
}

// privileges resolves a GRANT's privileges on table to families.
func (s *Session) privileges(ctx context.Context, table string, privs []*pg.Node) ([]privilege, error) {
	def, schema, err := s.opts.Tables.Get(ctx, table)
	if err != nil {
		return nil, err
	}
	if len(privs) == 0 { // ALL PRIVILEGES
		return []privilege{{read: true, write: true, families: []string{model.AnyFamily}}}, nil
	}
	var out []privilege
	for _, n := range privs {
		ap := n.GetAccessPriv()
		if ap == nil {
			return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "bad privilege")
		}
		var p privilege
		switch strings.ToLower(ap.PrivName) {
		case "select":
			p.read = true
		case "update", "insert", "delete":
			p.write = true
		case "":
			p.read, p.write = true, true
		default:
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "privilege %s is not supported: cellar has SELECT and UPDATE (INSERT, DELETE) on families", strings.ToUpper(ap.PrivName))
		}
		if len(ap.Cols) == 0 {
			p.families = []string{model.AnyFamily}
		}
		for _, c := range ap.Cols {
			name := c.GetString_().GetSval()
			fam, qual, colon := strings.Cut(name, ":")
			switch {
			case colon && qual == "":
			case colon:
				return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "privileges are per family: name the family %q as the column \"%s:\"", fam, fam)
			default:
				col, ok := def.Column(name)
				if !ok {
					return nil, sqlstate.Errorf(sqlstate.CodeUndefinedColumn, "column %q of relation %q does not exist", name, table)
				}
				if col.Key {
					return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "the key column %q has no privileges of its own: they are per family", name)
				}
				fam = col.Family
			}
			known := false
			for _, f := range schema.Families {
				known = known || f.Name == fam
			}
			if !known {
				return nil, sqlstate.Errorf(sqlstate.CodeUndefinedColumn, "family %q of relation %q does not exist", fam, table)
			}
			p.families = append(p.families, fam)
		}
		out = append(out, p)
	}
	return out, nil
}

func (s *Session) grant(ctx context.Context, verb, table string, privs []*pg.Node, grantees []string) error {
	if s.opts.Tables == nil {
		return sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation %q does not exist", table)
	}
	store, ok := s.opts.Tables.KV.(ACLStore)
	if !ok {
		return sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%s: this server keeps no ACLs", verb)
	}
	ps, err := s.privileges(ctx, table, privs)
	if err != nil {
		return err
	}
	err = store.UpdateACL(ctx, table, func(acl *model.ACL) (*model.ACL, error) {
		owner := acl != nil && acl.Owner != "" && acl.Owner == s.opts.User
		if !s.opts.Superuser && !owner {
			return nil, sqlstate.Errorf(sqlstate.CodeInsufficientPrivilege, "permission denied for table %s: only a superuser or the table's owner may %s", table, verb)
		}
		if acl == nil {
			if verb == "REVOKE" {
				return nil, nil // an open table: nothing to take away
			}
			acl = &model.ACL{}
		}
		for _, p := range ps {
			for _, f := range p.families {
				for _, who := range grantees {
					if verb == "GRANT" {
						acl.Grant(f, who, p.read, p.write)
					} else {
						acl.Revoke(f, who, p.read, p.write)
					}
				}
			}
		}
		return acl, nil
	})
	if err != nil {
		return kvError(fmt.Errorf("%s on %s: %w", verb, table, err), true)
	}
	return nil
}
