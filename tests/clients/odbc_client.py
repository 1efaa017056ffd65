"""psqlODBC (Debian's odbc-postgresql under unixODBC, driven by
python3-pyodbc) against a cellar gateway.

The driver is named by its library's path in the connection string, so no
odbcinst.ini entry is needed. Each part runs in three of the driver's
modes: server-side prepares (the default: Parse with every parameter's
type 0, text values, bytea in binary), declare/fetch (SELECTs through
DECLARE … CURSOR and FETCH) and client-side parameters (values inlined as
literals). The catalog functions run the driver's own queries over
pg_catalog."""
import datetime
import decimal
import glob
import sys
import urllib.parse
import uuid

import pyodbc


def check(ok, what):
    if not ok:
        raise AssertionError(what)


def expect_error(fn, cls, sqlstate, *args):
    try:
        fn(*args)
    except cls as e:
        check(e.args[0] == sqlstate, "%s: SQLSTATE %s, want %s" % (e, e.args[0], sqlstate))
        return e
    raise AssertionError("no %s (%s)" % (cls.__name__, sqlstate))


drivers = glob.glob("/usr/lib/*/odbc/psqlodbcw.so")
check(drivers, "psqlODBC is not installed (scripts/deps.sh installs odbc-postgresql)")
u = urllib.parse.urlparse(sys.argv[1])
BASE = "Driver=%s;Server=%s;Port=%d;Database=%s;Uid=%s;Pwd=%s;BoolsAsChar=0;ConnSettings=SET TimeZone='UTC';" % (
    drivers[0], u.hostname, u.port or 5432, u.path.lstrip("/"), u.username or "", u.password or "")
MODES = {
    "prep": "UseServerSidePrepare=1;UseDeclareFetch=0;",
    "fetch": "UseServerSidePrepare=1;UseDeclareFetch=1;Fetch=3;",
    "inline": "UseServerSidePrepare=0;UseDeclareFetch=0;",
}

COLS = ["id", "name", "score", "ok", "at", "d", "u", "j", "b", "n", "i", "s", "r", "v"]
# Debian's psqlODBC gives uuid as an upper-case string, jsonb as text and
# timestamptz as a naive datetime in the session's zone (UTC here).
ROWS = [
    (1, "alpha", 1.5, True, datetime.datetime(2024, 2, 29, 12, 34, 56, 789012), datetime.date(2024, 2, 29),
     uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), '{"a": [1, 2.5, {"b": null}], "c": "x"}', bytes(range(256)),
     decimal.Decimal("12345678901234.000123"), 2147483647, 32767, 1.25, "varchar"),
    (2, "héllo ✓ 'quoted' \"double\" \\ back", -0.1, False, datetime.datetime(1969, 7, 21, 1, 17, 40),
     datetime.date(1999, 12, 31), uuid.UUID(int=0), "[]", b"", decimal.Decimal("-0.50"), -2147483648, -32768, -3.5, ""),
    (3, "", 1e300, True, datetime.datetime(2000, 1, 1), datetime.date(2000, 1, 1), uuid.UUID(int=2**128 - 1),
     '{"bb": 1, "a": true}', b"\x00\\x'", decimal.Decimal("0"), 0, 0, 0.0, "x"),
    (-7, "negative key", 2.5e-300, False, datetime.datetime(1900, 1, 1, 0, 0, 0, 1), datetime.date(1, 1, 2),
     uuid.UUID("12345678-1234-5678-1234-567812345678"), '"just a string"', b"\xff", decimal.Decimal("0.00000000000000000001"),
     7, 7, 0.5, "neg"),
]
CANONICAL_JSON = {'{"bb": 1, "a": true}': '{"a": true, "bb": 1}'}


def as_read(row):
    out = list(row)
    out[6] = str(row[6]).upper()
    out[7] = CANONICAL_JSON.get(row[7], row[7])
    return tuple(out)


def plain(conn, mode):
    t = "odbc_t_" + mode
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS " + t)
    cur.execute("CREATE TABLE %s (id BIGINT PRIMARY KEY, name TEXT, score DOUBLE PRECISION, ok BOOLEAN, at TIMESTAMPTZ, "
                "d DATE, u UUID, j JSONB, b BYTEA, n NUMERIC, i INTEGER, s SMALLINT, r REAL, v VARCHAR(12) NOT NULL)" % t)
    # One statement, bound and executed once per row.
    cur.executemany("INSERT INTO %s (%s) VALUES (%s)" % (t, ", ".join(COLS), ", ".join("?" * len(COLS))), ROWS)
    cur.execute("INSERT INTO %s (id, v) VALUES (?, ?)" % t, 100, "nulls")
    check(cur.rowcount == 1, "rowcount %d" % cur.rowcount)

    cur.execute("SELECT * FROM %s ORDER BY id" % t)
    check([d[0] for d in cur.description] == COLS, "columns %r" % (cur.description,))
    types = [d[1] for d in cur.description]
    check(types == [int, str, float, bool, datetime.datetime, datetime.date, str, str, bytearray, decimal.Decimal, int, int,
                    float, str], "column types %r" % types)
    # The driver sizes columns by RowDescription's type modifier and finds
    # NOT NULL through its table OID and attnum, as with PostgreSQL.
    desc = {d[0]: d for d in cur.description}
    check(desc["v"][3] == 12 and desc["v"][6] is False and desc["id"][6] is False and desc["name"][6] is True,
          "column sizes and nullability %r" % (cur.description,))
    rows = cur.fetchall()
    want = sorted([as_read(r) for r in ROWS], key=lambda r: r[0]) + [(100,) + (None,) * 12 + ("nulls",)]
    check(len(rows) == len(want), "%d rows" % len(rows))
    for got, w in zip(rows, want):
        for name, g, e in zip(COLS, got, w):
            if isinstance(e, decimal.Decimal):
                # Digits, sign and scale.
                check(g.as_tuple() == e.as_tuple(), "%s of row %s: %r, want %r" % (name, w[0], g, e))
            else:
                check(g == e and (e is None or type(g) is type(e) or isinstance(g, bytearray)),
                      "%s of row %s: %r, want %r" % (name, w[0], g, e))

    # Parameters in WHERE: a key range, a value filter and an aggregate.
    ids = [r[0] for r in cur.execute("SELECT id FROM %s WHERE id >= ? AND id < ? ORDER BY id" % t, 0, 3).fetchall()]
    check(ids == [1, 2], "range %r" % ids)
    ids = [r[0] for r in cur.execute("SELECT id FROM %s WHERE at < ? AND ok = ? ORDER BY id" % t,
                                     datetime.datetime(2001, 1, 1), True).fetchall()]
    check(ids == [3], "filter %r" % ids)
    ids = [r[0] for r in cur.execute("SELECT id FROM %s WHERE u = ? OR b = ? OR n = ? ORDER BY id" % t,
                                     ROWS[0][6], b"\xff", decimal.Decimal("-0.5")).fetchall()]
    check(ids == [-7, 1, 2], "uuid, bytea and numeric parameters %r" % ids)
    agg = cur.execute("SELECT count(*), count(name), sum(i), min(d), max(score) FROM %s" % t).fetchone()
    check(tuple(agg) == (5, 4, 6, datetime.date(1, 1, 2), 1e300), "aggregate %r" % (agg,))

    # UPDATE of a parameter's worth, and its row count.
    cur.execute("UPDATE %s SET i = i + ?, name = ? WHERE id = ?" % t, 10, "updated", 3)
    check(cur.rowcount == 1, "update rowcount %d" % cur.rowcount)
    check(tuple(cur.execute("SELECT i, name FROM %s WHERE id = 3" % t).fetchone()) == (10, "updated"), "after update")
    cur.execute("UPDATE %s SET i = 0 WHERE id = ?" % t, 12345)
    check(cur.rowcount == 0, "update of nothing %d" % cur.rowcount)

    # Errors by SQLSTATE, in pyodbc's classes.
    e = expect_error(cur.execute, pyodbc.IntegrityError, "23505", "INSERT INTO %s (id, v) VALUES (?, ?)" % t, 1, "dup")
    check("%s_pkey" % t in str(e) and "(id)=(1)" in str(e), "23505 message %s" % e)
    expect_error(cur.execute, pyodbc.IntegrityError, "23502", "INSERT INTO %s (id) VALUES (?)" % t, 9)
    expect_error(cur.execute, pyodbc.ProgrammingError, "42P01", "SELECT * FROM odbc_nosuch")
    expect_error(cur.execute, pyodbc.ProgrammingError, "42703", "SELECT nosuch FROM " + t)
    expect_error(cur.execute, pyodbc.DataError, "22001", "INSERT INTO %s (id, v) VALUES (?, ?)" % t, 9, "x" * 13)
    # What cellar refuses on purpose is 0A000.
    e = expect_error(cur.execute, pyodbc.NotSupportedError, "0A000", "SELECT * FROM %s FOR UPDATE" % t)
    check("FOR UPDATE" in str(e), "0A000 message %s" % e)
    return t


def catalog(conn, t):
    cur = conn.cursor()
    tables = [tuple(r)[1:4] for r in cur.tables(table=t)]
    check(tables == [("public", t, "TABLE")], "SQLTables %r" % tables)
    check(t in [r.table_name for r in cur.tables(tableType="TABLE")], "SQLTables by type")
    cols = {r.column_name: r for r in cur.columns(table=t)}
    check(list(cols) == COLS, "SQLColumns %r" % list(cols))
    check([cols[c].type_name for c in COLS] == ["int8", "text", "float8", "bool", "timestamptz", "date", "uuid", "jsonb",
                                               "bytea", "numeric", "int4", "int2", "float4", "varchar"],
          "SQLColumns types %r" % [cols[c].type_name for c in COLS])
    check(cols["id"].data_type == pyodbc.SQL_BIGINT and cols["d"].data_type == pyodbc.SQL_TYPE_DATE and
          cols["at"].data_type == pyodbc.SQL_TYPE_TIMESTAMP and cols["ok"].data_type == pyodbc.SQL_BIT,
          "SQLColumns data types %r" % [(c, cols[c].data_type) for c in COLS])
    check(cols["v"].column_size == 12, "varchar(12) column size %r" % cols["v"].column_size)
    check(cols["id"].nullable == 0 and cols["v"].nullable == 0 and cols["name"].nullable == 1, "nullable")
    check([r.ordinal_position for r in cols.values()] == list(range(1, len(COLS) + 1)), "ordinal positions")
    pk = [(r.column_name, r.key_seq, r.pk_name) for r in cur.primaryKeys(t)]
    check(pk == [("id", 1, t + "_pkey")], "SQLPrimaryKeys %r" % pk)
    idx = [(r.index_name, r.non_unique, r.column_name) for r in cur.statistics(t) if r.index_name]
    check(idx == [(t + "_pkey", 0, "id")], "SQLStatistics %r" % idx)
    types = {r.type_name: r for r in cur.getTypeInfo(pyodbc.SQL_BIGINT)}
    check("int8" in types, "SQLGetTypeInfo(SQL_BIGINT) %r" % list(types))
    check(len(cur.getTypeInfo().fetchall()) > 10, "SQLGetTypeInfo")
    check(cur.foreignKeys(table=t).fetchall() == [], "SQLForeignKeys")


def bigtable(conn, mode):
    t = "odbc_web_" + mode
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS " + t)
    cur.execute('CREATE TABLE %s (_key TEXT PRIMARY KEY, "f:" TEXT, "c:n" BIGINT, "info:rank" BIGINT, "info:at" TIMESTAMPTZ)'
                " WITH (splits = 'k020')" % t)
    rows = [("k%03d" % i, "v%d" % i, i, i % 5, datetime.datetime(2020, 1, 1) + datetime.timedelta(minutes=i)) for i in range(30)]
    cur.executemany('INSERT INTO %s (_key, "f:a", "c:n", "info:rank", "info:at") VALUES (?, ?, ?, ?, ?)' % t, rows)
    for r in rows[::7]:
        got = cur.execute('SELECT "f:a", "c:n", "info:rank", "info:at" FROM %s WHERE _key = ?' % t, r[0]).fetchone()
        check(tuple(got) == r[1:], "row %s: %r" % (r[0], got))
    for _ in range(3):
        cur.execute('UPDATE %s SET "c:n" = "c:n" + ? WHERE _key = ?' % t, 100, "k004")
    check(cur.execute('SELECT "c:n" FROM %s WHERE _key = ?' % t, "k004").fetchone()[0] == 304, "increments")
    keys = [r[0] for r in cur.execute("SELECT _key FROM %s WHERE _key LIKE ? ORDER BY _key DESC" % t, "k01%").fetchall()]
    check(keys == ["k%03d" % i for i in range(19, 9, -1)], "prefix scan %r" % keys)
    agg = cur.execute('SELECT count(*), sum("c:n") FROM %s WHERE "info:rank" = ?' % t, 2).fetchone()
    check(tuple(agg) == (6, sum(r[2] for r in rows if r[3] == 2)), "aggregate %r" % (agg,))
    fam = cur.execute("SELECT f FROM %s WHERE _key = 'k001'" % t).fetchone()[0]
    check(fam == '{"a": "v1"}', "open family %r" % fam)
    cols = [(r.column_name, r.type_name) for r in cur.columns(table=t)]
    check(cols == [("_key", "text"), ("c:n", "int8"), ("info:rank", "int8"), ("info:at", "timestamptz"), ("f", "jsonb")],
          "SQLColumns of a Bigtable-shaped table %r" % cols)
    check([r.column_name for r in cur.primaryKeys(t)] == ["_key"], "its primary key")
    expect_error(cur.execute, pyodbc.IntegrityError, "23505", "INSERT INTO %s (_key) VALUES ('k000')" % t)
    return t


def transactions(dsn, t):
    conn = pyodbc.connect(dsn, autocommit=False)
    cur = conn.cursor()
    cur.execute("INSERT INTO %s (id, v) VALUES (?, ?)" % t, 201, "tx1")
    check(cur.execute("SELECT v FROM %s WHERE id = ?" % t, 201).fetchone()[0] == "tx1", "own write")
    conn.rollback()
    check(cur.execute("SELECT count(*) FROM %s WHERE id = ?" % t, 201).fetchone()[0] == 0, "rolled back")
    cur.execute("INSERT INTO %s (id, v) VALUES (?, ?)" % t, 202, "tx2")
    conn.commit()
    cur.execute("INSERT INTO %s (id, v) VALUES (?, ?)" % t, 203, "tx3")
    # The driver rolls a failed statement back to a savepoint it set
    # before it, so the transaction goes on.
    expect_error(cur.execute, pyodbc.DataError, "22012", "SELECT 1/0")
    check(cur.execute("SELECT count(*) FROM %s WHERE id >= 202" % t).fetchone()[0] == 2, "after a failed statement")
    conn.commit()
    conn.close()
    other = pyodbc.connect(dsn, autocommit=True)
    got = [tuple(r) for r in other.cursor().execute("SELECT id, v FROM %s WHERE id > 200 ORDER BY id" % t).fetchall()]
    check(got == [(202, "tx2"), (203, "tx3")], "committed %r" % got)
    other.close()


for mode, opts in MODES.items():
    dsn = BASE + opts
    conn = pyodbc.connect(dsn, autocommit=True)
    name = conn.getinfo(pyodbc.SQL_DBMS_NAME)
    version = conn.getinfo(pyodbc.SQL_DBMS_VER)
    check(name == "PostgreSQL" and version.startswith("15."), "DBMS %s %s" % (name, version))
    t = plain(conn, mode)
    catalog(conn, t)
    transactions(dsn, t)
    web = bigtable(conn, mode)
    cur = conn.cursor()
    cur.execute("DROP TABLE " + t)
    cur.execute("DROP TABLE " + web)
    conn.close()
print("ok")
