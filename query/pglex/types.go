package pglex

// ddlTypes maps PostgreSQL type names that the TiDB grammar rejects, in a
// column definition, to the MySQL spelling that stands for them. Each
// MySQL spelling stands for one PostgreSQL type only, so the planner can
// map it back (query's type table is the other half):
//
//	PostgreSQL                        written for TiDB
//	bytea                             BLOB
//	jsonb, json                       JSON (both are jsonb in cellar)
//	uuid                              BINARY(16)
//	int2 / int4 / int8                SMALLINT / INT / BIGINT
//	float4, real / float8, float      FLOAT / DOUBLE
//	timestamptz,
//	timestamp with time zone          TIMESTAMP(6)
//	timestamp,
//	timestamp without time zone       DATETIME(6)
//
// Types that both grammars spell alike (text, varchar(n), boolean,
// bigint, integer, smallint, double precision, numeric(p,s), date) pass
// through.
var ddlTypes = map[string]string{
	"bytea":                       "BLOB",
	"jsonb":                       "JSON",
	"json":                        "JSON",
	"uuid":                        "BINARY(16)",
	"int2":                        "SMALLINT",
	"int4":                        "INT",
	"int8":                        "BIGINT",
	"float4":                      "FLOAT",
	"real":                        "FLOAT", // MySQL's REAL is a double
	"float8":                      "DOUBLE",
	"float":                       "DOUBLE", // PostgreSQL's float is float8
	"timestamptz":                 "TIMESTAMP(6)",
	"timestamp with time zone":    "TIMESTAMP(6)",
	"timestamp":                   "DATETIME(6)",
	"timestamp without time zone": "DATETIME(6)",
}

// multiWord lists the type names of more than one word, longest first.
var multiWord = [][]string{
	{"timestamp", "without", "time", "zone"},
	{"timestamp", "with", "time", "zone"},
	{"time", "without", "time", "zone"},
	{"time", "with", "time", "zone"},
	{"double", "precision"},
	{"character", "varying"},
	{"bit", "varying"},
}
