package bigtableapi

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// tableName is a parsed projects/{p}/instances/{i}/tables/{t}.
type tableName struct {
	instance string // projects/{p}/instances/{i}
	table    string // {t}, the cellar table
}

func (n tableName) String() string { return n.instance + "/tables/" + n.table }

// parseInstance checks projects/{p}/instances/{i}. Every project and
// instance names the one cluster, so only the shape matters.
func parseInstance(name string) (string, error) {
	parts := strings.Split(name, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[1] == "" || parts[2] != "instances" || parts[3] == "" {
		return "", status.Errorf(codes.InvalidArgument, "invalid instance name %q: want projects/{project}/instances/{instance}", name)
	}
	return name, nil
}

// parseTable parses projects/{p}/instances/{i}/tables/{t}.
func parseTable(name string) (tableName, error) {
	if name == "" {
		return tableName{}, status.Error(codes.InvalidArgument, "no table name: want projects/{project}/instances/{instance}/tables/{table}")
	}
	i := strings.LastIndex(name, "/tables/")
	if i < 0 {
		return tableName{}, status.Errorf(codes.InvalidArgument, "invalid table name %q: want projects/{project}/instances/{instance}/tables/{table}", name)
	}
	inst, table := name[:i], name[i+len("/tables/"):]
	if _, err := parseInstance(inst); err != nil || table == "" || strings.Contains(table, "/") {
		return tableName{}, status.Errorf(codes.InvalidArgument, "invalid table name %q: want projects/{project}/instances/{instance}/tables/{table}", name)
	}
	return tableName{instance: inst, table: table}, nil
}

// dataTable returns the table of a data request. Authorized and
// materialized views are not served, so a request naming one is
// Unimplemented rather than silently read from the whole table.
func dataTable(table, authorizedView, materializedView string) (tableName, error) {
	switch {
	case authorizedView != "":
		return tableName{}, status.Errorf(codes.Unimplemented, "authorized views (%q) are not supported by cellar; name the table", authorizedView)
	case materializedView != "":
		return tableName{}, status.Errorf(codes.Unimplemented, "materialized views (%q) are not supported by cellar; name the table", materializedView)
	}
	return parseTable(table)
}

// validTableID reports whether id is a table ID the service accepts in
// CreateTable: [_a-zA-Z0-9][-_.a-zA-Z0-9]*, at most 50 characters.
func validTableID(id string) bool {
	if id == "" || len(id) > 50 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case (c == '-' || c == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}
