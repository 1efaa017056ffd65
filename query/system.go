package query

import (
	"context"
	"strings"

	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/pgcatalog"
	"github.com/cellardb/cellar/query/pgeval"
)

// systemRelation resolves pg_catalog and information_schema relations,
// emulated (query/pgcatalog) from the cluster's table definitions and the
// session. schema "" searches pg_catalog only, which PostgreSQL puts
// first on every search path.
func (s *Session) systemRelation(schema, name string) (pgeval.Relation, bool) {
	if schema == "" {
		schema = "pg_catalog"
	}
	return pgcatalog.Relation(schema, name, func(ctx context.Context) (pgcatalog.Source, error) {
		var tables []*catalog.Table
		if s.opts.Tables != nil && (schema == "information_schema" || strings.HasPrefix(name, "pg_")) {
			var err error
			if tables, err = s.opts.Tables.List(ctx); err != nil {
				return pgcatalog.Source{}, err
			}
		}
		return pgcatalog.Source{Tables: tables, User: s.opts.User, Database: s.opts.Database,
			Setting: s.Setting, BackendPID: s.opts.BackendPID, Prepared: s.opts.Prepared, Sessions: s.opts.Sessions}, nil
	})
}
