#!/bin/sh
# gen.sh regenerates pg15/*.tsv, the PostgreSQL 15 data the emulated
# catalog is built from, out of a stock PostgreSQL 15 server (initdb'ed,
# without user objects in the dumped catalogs):
#
#	PGHOST=127.0.0.1 PGUSER=postgres sh gen.sh
#
# relations.tsv lists the emulated relations and their columns (rels.txt
# says which); the other files are rows of the builtin catalog data that
# cellar shows as they are: types, their I/O functions, access methods,
# operator classes, collations, languages, ranges, tablespaces, and the
# descriptions of the server's settings.
set -eu
cd "$(dirname "$0")"
out=pg15
mkdir -p "$out"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "${PGDATABASE:-postgres}" -c "$1"; }
copy() { q "COPY ($2) TO STDOUT" >"$out/$1.tsv"; }

vals=$(awk '{printf "%s(%c%s%c,%c%s%c)", (NR>1?",":""), 39, $1, 39, 39, $2, 39}' rels.txt)
rels="SELECT c.oid FROM (VALUES $vals) v(s, n) JOIN pg_namespace ns ON ns.nspname = v.s JOIN pg_class c ON c.relname = v.n AND c.relnamespace = ns.oid"

# One row per column of each emulated relation.
copy relations "SELECT ns.nspname, c.relname, c.oid, c.relkind, c.reltype, a.attnum, a.attname, a.atttypid, a.atttypmod, a.attnotnull, a.attcollation
  FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
  WHERE c.oid IN ($rels) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY ns.nspname, c.relname, a.attnum"

# The select list of a catalog table, with regproc columns as OIDs.
cols() {
  q "SELECT string_agg(CASE WHEN atttypid = 'regproc'::regtype THEN quote_ident(attname) || '::oid' ELSE quote_ident(attname) END, ', ' ORDER BY attnum)
     FROM pg_attribute WHERE attrelid = 'pg_catalog.$1'::regclass AND attnum > 0 AND NOT attisdropped"
}

# Types: every builtin type that is not the row type of a catalog
# relation cellar does not emulate (nor an array of one).
types="SELECT t.oid FROM pg_type t LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
  WHERE t.oid < 16384 AND t.typnamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN ('pg_catalog', 'information_schema'))
  AND (t.typrelid = 0 OR t.typrelid IN ($rels)) AND (e.oid IS NULL OR e.typrelid = 0 OR e.typrelid IN ($rels))"
copy pg_type "SELECT $(cols pg_type) FROM pg_type WHERE oid IN ($types) ORDER BY oid"

# The types' I/O functions, and PostgreSQL's entries for the functions
# cellar's evaluator has (functions.txt, which TestFunctionsListed keeps
# equal to pgeval.FunctionNames) whose argument and result types are
# among the types above.
fns=$(awk '{printf "%s%c%s%c", (NR>1?",":""), 39, $1, 39}' functions.txt)
procs="SELECT oid FROM pg_proc WHERE oid IN (
  SELECT unnest(ARRAY[typinput::oid, typoutput::oid, typreceive::oid, typsend::oid, typmodin::oid, typmodout::oid, typanalyze::oid, typsubscript::oid])
  FROM pg_type WHERE oid IN ($types))
  OR (proname IN ($fns) AND pronamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN ('pg_catalog', 'information_schema'))
    AND prorettype IN ($types) AND NOT EXISTS (SELECT 1 FROM unnest(proargtypes::oid[] || prorettype) a
      WHERE a NOT IN ($types) OR a::regtype::text LIKE '%range'))"
copy pg_proc "SELECT $(cols pg_proc) FROM pg_proc WHERE oid IN ($procs) ORDER BY oid"
# What pg_get_function_result, _arguments and _identity_arguments print
# for them (argument defaults are node trees cellar does not deparse).
copy pg_proc_text "SELECT oid, pg_get_function_result(oid), pg_get_function_arguments(oid), pg_get_function_identity_arguments(oid)
  FROM pg_proc WHERE oid IN ($procs) ORDER BY oid"
# Their descriptions (\df+, \da, obj_description).
copy pg_description "SELECT objoid, classoid, objsubid, description FROM pg_description
  WHERE classoid = 'pg_proc'::regclass AND objoid IN ($procs) ORDER BY objoid"

copy pg_am "SELECT $(cols pg_am) FROM pg_am ORDER BY oid"
copy pg_opclass "SELECT $(cols pg_opclass) FROM pg_opclass WHERE opcdefault AND opcmethod IN (SELECT oid FROM pg_am WHERE amname IN ('btree', 'hash')) ORDER BY oid"
copy pg_collation "SELECT $(cols pg_collation) FROM pg_collation WHERE collname IN ('default', 'C', 'POSIX', 'ucs_basic') ORDER BY oid"
copy pg_language "SELECT $(cols pg_language) FROM pg_language ORDER BY oid"
copy pg_range "SELECT $(cols pg_range) FROM pg_range ORDER BY rngtypid"
copy pg_tablespace "SELECT oid, spcname, spcowner, NULL::aclitem[], NULL::text[] FROM pg_tablespace ORDER BY oid"
copy pg_settings "SELECT name, unit, category, short_desc, extra_desc, context, vartype, min_val, max_val, enumvals, boot_val FROM pg_settings ORDER BY name"
