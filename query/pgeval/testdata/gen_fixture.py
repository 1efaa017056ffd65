#!/usr/bin/env python3
"""Regenerates catalog.fixture: pg_catalog and information_schema relations
(and the public test tables) dumped from a PostgreSQL 15 database made by

  createdb pgeval_fixture
  psql -d pgeval_fixture <<SQL
  create table hx_bi (_key text primary key, "info:rank" bigint, "anchor:x" text);
  comment on table hx_bi is 'bi test table';
  comment on column hx_bi."info:rank" is 'the rank';
  create unique index hx_bi_rank on hx_bi ("info:rank");
  create table hx_child (id int8 primary key, k text references hx_bi(_key),
    note varchar(64) default 'x', amount numeric(10,2), created timestamptz);
  create view hx_view as select _key from hx_bi;
  SQL

Run: python3 gen_fixture.py catalog.fixture (psql on PATH, server on
127.0.0.1:5432, user postgres). Domain columns are declared with their base
types; reg* columns are dumped as OIDs.
"""
import subprocess, sys
def q(sql):
    return subprocess.run(["psql","-h","127.0.0.1","-U","postgres","-d","pgeval_fixture","-AtX","-F","\t","-c",sql],capture_output=True,text=True,check=True).stdout
rels = [l.split("\t") for l in q("""select n.nspname, c.relname, c.oid from pg_class c join pg_namespace n on n.oid=c.relnamespace
 where n.nspname in ('pg_catalog','information_schema','public') and c.relkind in ('r','v') order by 1,2""").splitlines()]
pub = "(select oid from pg_class where relnamespace='public'::regnamespace)"
cat = "('pg_class'::regclass,'pg_namespace'::regclass,'pg_type'::regclass,'pg_index'::regclass,'pg_attribute'::regclass)"
filters = {
 "pg_class": "relnamespace='public'::regnamespace or (relnamespace in ('pg_catalog'::regnamespace,'information_schema'::regnamespace) and relkind in ('r','v'))",
 "pg_attribute": f"attrelid in {pub} or attrelid in {cat}",
 "pg_proc": "proname in ('array_in','array_recv','int4recv','textrecv','version','now','lower','upper','count','sum','array_agg','pg_get_keywords','unnest','format_type') or pronamespace='public'::regnamespace",
 "pg_description": f"objoid in {pub} or objoid in (select oid from pg_namespace) or objoid in {cat}",
 "pg_depend": f"refobjid in {pub} or objid in {pub}",
 "pg_shdepend": "false",
 "pg_init_privs": "false",
 "pg_statistic": "false",
 "pg_stats": "false",
 "pg_rewrite": f"ev_class in {pub}",
 "pg_constraint": f"conrelid in {pub} or connamespace='public'::regnamespace",
 "pg_index": f"indrelid in {pub} or indrelid in {cat}",
 "pg_attrdef": f"adrelid in {pub}",
 "pg_trigger": f"tgrelid in {pub}",
 "pg_views": "schemaname in ('public')",
 "pg_tables": "schemaname in ('public','pg_catalog')",
 "pg_indexes": "schemaname = 'public'",
}
skip = {"pg_statistic","pg_stats","pg_stats_ext","pg_stats_ext_exprs","pg_statistic_ext_data","pg_largeobject"}
out = []
for nsp, rel, oid in rels:
    if rel in skip: continue
    cols = [l.split("\t") for l in q(f"select attname, case when t.typtype='d' then t.typbasetype else atttypid end from pg_attribute a join pg_type t on t.oid=a.atttypid where attrelid={oid} and attnum>0 and not attisdropped order by attnum").splitlines()]
    w = filters.get(rel)
    if w is None and any(c[0]=="table_schema" for c in cols) and nsp=="information_schema":
        w = "table_schema = 'public'"
    if w is None and any(c[0]=="schemaname" for c in cols):
        w = "schemaname = 'public'"
    lim = 700 if rel in ("pg_type","pg_class","pg_attribute","pg_namespace","pg_index","pg_constraint","pg_description","pg_settings","pg_am","pg_roles","pg_authid","pg_database","columns","tables","table_constraints","key_column_usage","pg_proc","pg_tables","pg_views") else 25
    sel = ", ".join((f'"{c[0]}"::oid' if c[1] in ("24","2205","2206","4089","4096") else f'"{c[0]}"') for c in cols)
    sql = f"select {sel} from {nsp}.{rel}" + (f" where {w}" if w else "") + f" limit {lim}"
    try:
        data = subprocess.run(["psql","-h","127.0.0.1","-U","postgres","-d","pgeval_fixture","-AtX","-c",f"copy ({sql}) to stdout"],capture_output=True,text=True,check=True).stdout
    except subprocess.CalledProcessError as e:
        print("skip", rel, e.stderr.strip(), file=sys.stderr); continue
    out.append(f"table {nsp}.{rel}")
    for c in cols: out.append(f"col {c[0]} {c[1]}")
    for line in data.splitlines():
        out.append("row\t"+line)
open(sys.argv[1],"w").write("\n".join(out)+"\n")
