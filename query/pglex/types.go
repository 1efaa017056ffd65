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

// serialTypes are PostgreSQL's serial pseudo-types, which need a sequence.
var serialTypes = map[string]bool{
	"smallserial": true, "serial2": true, "serial": true, "serial4": true, "bigserial": true, "serial8": true,
}

// unsupportedTypes are PostgreSQL 15's built-in types that no cellar
// column has, named here so that a column of one is refused as
// unsupported (0A000) rather than as a syntax error of the TiDB grammar,
// which does not know them.
var unsupportedTypes = map[string]bool{
	"inet": true, "cidr": true, "macaddr": true, "macaddr8": true, "money": true,
	"point": true, "line": true, "lseg": true, "box": true, "path": true, "polygon": true, "circle": true,
	"xml": true, "tsvector": true, "tsquery": true, "varbit": true, "bit varying": true, "timetz": true,
	"time with time zone": true, "pg_lsn": true, "pg_snapshot": true, "txid_snapshot": true, "jsonpath": true,
	"int4range": true, "int8range": true, "numrange": true, "tsrange": true, "tstzrange": true, "daterange": true,
	"int4multirange": true, "int8multirange": true, "nummultirange": true, "tsmultirange": true,
	"tstzmultirange": true, "datemultirange": true,
	"oid": true, "xid": true, "xid8": true, "cid": true, "tid": true, "name": true, "regclass": true,
	"regtype": true, "regproc": true, "regprocedure": true, "regoper": true, "regoperator": true,
	"regnamespace": true, "regrole": true, "regconfig": true, "regdictionary": true, "regcollation": true,
}
