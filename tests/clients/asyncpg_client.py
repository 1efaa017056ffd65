"""asyncpg (Debian's python3-asyncpg) against a cellar gateway.

asyncpg speaks only the extended protocol, asks for binary results of
every type it knows, binds parameters in binary, and learns types it does
not know with a recursive query over pg_type, pg_range and pg_attribute.
Each value written here is read back and compared exactly, in its Python
type."""
import asyncio
import datetime
import decimal
import io
import json
import math
import sys
import uuid

import asyncpg

UTC = datetime.timezone.utc


def check(ok, what):
    if not ok:
        raise AssertionError(what)


async def expect_error(coro, cls, sqlstate):
    try:
        await coro
    except cls as e:
        check(e.sqlstate == sqlstate, "%s: SQLSTATE %s, want %s" % (e, e.sqlstate, sqlstate))
        return e
    raise AssertionError("no %s (%s)" % (cls.__name__, sqlstate))


# The plain table: one row of every type cellar has, with values at the
# edges of their binary forms, and a row of NULLs.
PLAIN = """CREATE TABLE apg_t (id BIGINT PRIMARY KEY, name TEXT, score DOUBLE PRECISION, ok BOOLEAN,
    at TIMESTAMPTZ, d DATE, u UUID, j JSONB, b BYTEA, n NUMERIC, i INTEGER, s SMALLINT, r REAL,
    v VARCHAR(12))"""
COLS = ["id", "name", "score", "ok", "at", "d", "u", "j", "b", "n", "i", "s", "r", "v"]
TYPES = ["int8", "text", "float8", "bool", "timestamptz", "date", "uuid", "jsonb", "bytea", "numeric",
         "int4", "int2", "float4", "varchar"]
ROWS = [
    (1, "alpha", 1.5, True, datetime.datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=UTC),
     datetime.date(2024, 2, 29), uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
     '{"a": [1, 2.5, {"b": null}], "c": "x"}', bytes(range(256)),
     decimal.Decimal("12345678901234567890.000123456789"), 2147483647, 32767, 1.25, "varchar"),
    (2, "héllo ✓ 'quoted' \"double\"", -0.1, False,
     datetime.datetime(1969, 7, 20, 20, 17, 40, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))),
     datetime.date(1999, 12, 31), uuid.UUID(int=0), '[]', b"", decimal.Decimal("-0.50"), -2147483648, -32768,
     -3.5, ""),
    (3, "", 1e300, True, datetime.datetime(2000, 1, 1, tzinfo=UTC), datetime.date(2000, 1, 1),
     uuid.UUID(int=2**128 - 1), '{"bb": 1, "a": true}', b"\x00\\x", decimal.Decimal("0"), 0, 0, 0.0, "x"),
    (-7, "negative key", float("inf"), False, datetime.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
     datetime.date(1, 1, 2), uuid.uuid4(), '"just a string"', b"\xff", decimal.Decimal("1E-20"), 7, 7,
     float("-inf"), "neg"),
]
# jsonb comes back in PostgreSQL's canonical form: keys unique, shorter
# keys first, one space after ':' and ','.
CANONICAL_JSON = {'{"bb": 1, "a": true}': '{"a": true, "bb": 1}'}


def expected(row):
    out = list(row)
    out[7] = CANONICAL_JSON.get(row[7], row[7])
    return tuple(out)


async def plain_table(c):
    await c.execute("DROP TABLE IF EXISTS apg_t")
    await c.execute(PLAIN)
    ins = await c.prepare("INSERT INTO apg_t (%s) VALUES (%s)" % (
        ", ".join(COLS), ", ".join("$%d" % (i + 1) for i in range(len(COLS)))))
    # The parameter types are the columns' (ParameterDescription).
    check([t.name for t in ins.get_parameters()] == TYPES, "parameter types %r" % (ins.get_parameters(),))
    for row in ROWS:
        check(await ins.fetch(*row) == [], "insert returned rows")
    await c.execute("INSERT INTO apg_t (id) VALUES ($1)", 100)

    sel = await c.prepare("SELECT * FROM apg_t ORDER BY id")
    check([a.name for a in sel.get_attributes()] == COLS, "columns %r" % (sel.get_attributes(),))
    check([a.type.name for a in sel.get_attributes()] == TYPES, "column types %r" % (sel.get_attributes(),))
    rows = await sel.fetch()
    want = sorted([expected(r) for r in ROWS] + [(100,) + (None,) * (len(COLS) - 1)], key=lambda r: r[0])
    check(len(rows) == len(want), "%d rows" % len(rows))
    for got, w in zip(rows, want):
        for name, g, e in zip(COLS, got.values(), w):
            # asyncpg's UUID is a subclass of uuid.UUID.
            check(isinstance(g, type(e)) and type(g) is not bool or type(e) is bool, "%s of row %s: %r is a %s, want %s" % (name, w[0], g, type(g), type(e)))
            if isinstance(e, decimal.Decimal):
                # Digits, sign and scale: numeric keeps the scale it was given.
                check(g.as_tuple() == e.as_tuple(), "%s of row %s: %r, want %r" % (name, w[0], g, e))
            else:
                check(g == e, "%s of row %s: %r, want %r" % (name, w[0], g, e))
            if isinstance(e, datetime.datetime):
                check(g.utcoffset() == datetime.timedelta(0), "timestamptz comes back in UTC: %r" % g)

    # Text results (a simple-protocol query) agree with the binary ones.
    text = await c.fetchrow("SELECT score::text, at::text, d::text, n::text, u::text, b::text FROM apg_t WHERE id = 1")
    check(tuple(text) == ("1.5", "2024-02-29 12:34:56.789012+00", "2024-02-29",
                          "12345678901234567890.000123456789", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
                          "\\x" + bytes(range(256)).hex()), "text forms %r" % (text,))

    # A float8's binary form is exact: the last bit survives.
    x = 0.1 + 0.2
    check(await c.fetchval("SELECT $1::float8", x) == x, "float8 round trip")
    check(math.isnan(await c.fetchval("SELECT $1::float8", float("nan"))), "NaN")
    check(str(await c.fetchval("SELECT $1::numeric", decimal.Decimal("NaN"))) == "NaN", "numeric NaN")
    check(await c.fetchval("SELECT $1::int8[]", [1, None, -3]) == [1, None, -3], "int8[] parameter")
    check(await c.fetchval("SELECT $1::text[]", ["a", "b,c", ""]) == ["a", "b,c", ""], "text[] parameter")

    # A range scan of the key, a filter and an aggregate.
    ids = [r["id"] for r in await c.fetch("SELECT id FROM apg_t WHERE id >= $1 AND id < $2 ORDER BY id", 0, 3)]
    check(ids == [1, 2], "range %r" % ids)
    ids = [r["id"] for r in await c.fetch("SELECT id FROM apg_t WHERE ok ORDER BY id DESC")]
    check(ids == [3, 1], "filter %r" % ids)
    agg = await c.fetchrow("SELECT count(*), count(name), sum(i), min(d), max(at), avg(s) FROM apg_t")
    check(tuple(agg) == (5, 4, 6, datetime.date(1, 1, 2), datetime.datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=UTC),
                         decimal.Decimal("1.5")), "aggregate %r" % (agg,))
    check(str(agg[5]) == "1.5000000000000000", "avg's scale %s" % agg[5])
    check([type(v) for v in agg.values()] == [int, int, int, datetime.date, datetime.datetime, decimal.Decimal],
          "aggregate types %r" % (agg,))

    # Unique violation and the other errors drivers map to classes.
    e = await expect_error(c.execute("INSERT INTO apg_t (id, name) VALUES ($1, $2)", 1, "again"),
                           asyncpg.UniqueViolationError, "23505")
    check(e.constraint_name == "apg_t_pkey" and "(id)=(1)" in e.detail, "23505 details %r %r" % (e.constraint_name, e.detail))
    await expect_error(c.fetch("SELECT * FROM apg_nosuch"), asyncpg.UndefinedTableError, "42P01")
    await expect_error(c.fetch("SELECT nosuch FROM apg_t"), asyncpg.UndefinedColumnError, "42703")
    await expect_error(c.execute("INSERT INTO apg_t (id, s) VALUES ($1, $2::int8)", 9, 40000), asyncpg.DataError, "22003")
    await expect_error(c.execute("INSERT INTO apg_t (id, v) VALUES ($1, $2)", 9, "x" * 13),
                       asyncpg.StringDataRightTruncationError, "22001")
    # What cellar refuses on purpose is 0A000, precisely.
    e = await expect_error(c.execute("CREATE TABLE apg_arr (id BIGINT PRIMARY KEY, xs BIGINT[])"),
                           asyncpg.FeatureNotSupportedError, "0A000")
    check("array" in str(e), "0A000 message %s" % e)
    await expect_error(c.fetch("SELECT * FROM apg_t FOR UPDATE"), asyncpg.FeatureNotSupportedError, "0A000")


async def copy(c):
    # copy_records_to_table: binary COPY FROM STDIN, typed by a prepared
    # SELECT of the columns.
    await c.execute("DROP TABLE IF EXISTS apg_copy")
    await c.execute(PLAIN.replace("apg_t", "apg_copy"))
    recs = [(r[0] + 1000,) + r[1:] for r in ROWS] + [(2000,) + (None,) * (len(COLS) - 1)]
    check(await c.copy_records_to_table("apg_copy", records=recs, columns=COLS) == "COPY %d" % len(recs), "COPY tag")
    got = await c.fetch("SELECT * FROM apg_copy ORDER BY id")
    check([tuple(r) for r in got] == sorted([expected(r) for r in recs], key=lambda r: r[0]), "copied rows %r" % got)
    e = await expect_error(c.copy_records_to_table("apg_copy", records=recs[:1], columns=COLS),
                           asyncpg.UniqueViolationError, "23505")
    check(e.constraint_name == "apg_copy_pkey", "COPY's 23505 %r" % e.constraint_name)
    # copy_from_query and copy_from_table: COPY TO STDOUT, as CSV.
    out = io.BytesIO()
    await c.copy_from_query("SELECT id, name, n, b FROM apg_copy WHERE id < $1 ORDER BY id", 1002, output=out,
                            format="csv", header=True)
    check(out.getvalue().decode() == 'id,name,n,b\n'
          '993,negative key,0.00000000000000000001,\\xff\n'
          '1001,alpha,12345678901234567890.000123456789,\\x' + bytes(range(256)).hex() + '\n', "CSV %r" % out.getvalue())
    out = io.BytesIO()
    check(await c.copy_from_table("apg_copy", columns=["id", "ok", "d"], output=out) == "COPY %d" % len(recs), "COPY TO tag")
    lines = out.getvalue().decode().splitlines()
    check(lines[0] == "993\tf\t0001-01-02" and lines[1] == "1001\tt\t2024-02-29" and lines[-1] == "2000\t\\N\t\\N",
          "text COPY, in key order %r" % lines)
    await c.execute("DROP TABLE apg_copy")


async def bigtable_table(c):
    await c.execute("DROP TABLE IF EXISTS apg_web")
    await c.execute('CREATE TABLE apg_web (_key TEXT PRIMARY KEY, "f:" TEXT, "c:n" BIGINT, "info:rank" BIGINT, '
                    '"info:score" DOUBLE PRECISION, "info:at" TIMESTAMPTZ, "info:raw" BYTEA) WITH (splits = \'m\')')
    # executemany: one prepared INSERT, many Binds.
    rows = [("k%03d" % i, "v%d" % i, i, i % 7, i / 4, datetime.datetime(2020, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=i),
             bytes([i % 256]) * 3) for i in range(40)]
    await c.executemany('INSERT INTO apg_web (_key, "f:a", "c:n", "info:rank", "info:score", "info:at", "info:raw") '
                        'VALUES ($1, $2, $3, $4, $5, $6, $7)', rows)
    # The same statement prepared once and run many times.
    get = await c.prepare('SELECT "f:a", "c:n", "info:rank", "info:score", "info:at", "info:raw" FROM apg_web WHERE _key = $1')
    for r in rows:
        got = await get.fetchrow(r[0])
        check(tuple(got) == r[1:], "row %s: %r" % (r[0], got))
    check(await get.fetchrow("nosuch") is None, "a missing key")
    # The open family's JSONB column holds its undeclared qualifiers.
    await c.execute('UPSERT INTO apg_web (_key, "f:b", "f:zz") VALUES ($1, $2, $3)', "k001", "second", "third")
    fam = await c.fetchval("SELECT f FROM apg_web WHERE _key = 'k001'")
    check(fam == '{"a": "v1", "b": "second", "zz": "third"}', "family %r" % fam)
    check(await c.fetchval('SELECT "f:nosuch" FROM apg_web WHERE _key = $1', "k001") is None, "missing qualifier")

    # UPDATE increments, from concurrent connections too.
    for _ in range(5):
        check(await c.execute('UPDATE apg_web SET "c:n" = "c:n" + $1 WHERE _key = $2', 10, "k002") == "UPDATE 1", "update tag")
    others = [await asyncpg.connect(sys.argv[1]) for _ in range(3)]
    async def bump(o):
        for _ in range(4):
            await o.execute('UPDATE apg_web SET "c:n" = "c:n" + 1 WHERE _key = \'k002\'')
    await asyncio.gather(*[bump(o) for o in others])
    for o in others:
        await o.close()
    check(await c.fetchval('SELECT "c:n" FROM apg_web WHERE _key = $1', "k002") == 2 + 50 + 12, "increments")
    check(await c.execute('UPDATE apg_web SET "c:n" = 0 WHERE _key = $1', "nosuch") == "UPDATE 0", "update of nothing")

    # Range scans: by prefix, by bounds, backwards; a pushed filter and aggregate.
    keys = [r[0] for r in await c.fetch("SELECT _key FROM apg_web WHERE _key LIKE 'k01%' ORDER BY _key")]
    check(keys == ["k%03d" % i for i in range(10, 20)], "prefix %r" % keys)
    keys = [r[0] for r in await c.fetch("SELECT _key FROM apg_web WHERE _key > $1 AND _key <= $2", "k035", "k038")]
    check(keys == ["k036", "k037", "k038"], "bounds %r" % keys)
    keys = [r[0] for r in await c.fetch("SELECT _key FROM apg_web ORDER BY _key DESC LIMIT 2")]
    check(keys == ["k039", "k038"], "reverse %r" % keys)
    agg = await c.fetchrow('SELECT count(*), sum("info:rank"), max("info:score") FROM apg_web WHERE "info:rank" >= $1', 5)
    want = [r for r in rows if r[3] >= 5]
    check(tuple(agg) == (len(want), sum(r[3] for r in want), max(r[4] for r in want)), "aggregate %r" % (agg,))
    groups = await c.fetch('SELECT "info:rank", count(*) FROM apg_web GROUP BY "info:rank" ORDER BY 1')
    check([tuple(g) for g in groups] == [(k, len([r for r in rows if r[3] == k])) for k in range(7)], "groups %r" % groups)
    await expect_error(c.execute("INSERT INTO apg_web (_key) VALUES ('k003')"), asyncpg.UniqueViolationError, "23505")
    await expect_error(c.fetch('SELECT "nofamily:x" FROM apg_web'), asyncpg.UndefinedColumnError, "42703")
    return rows


async def cursors_and_transactions(c, rows):
    # A cursor is a portal read a few rows at a time; it needs a transaction.
    async with c.transaction():
        got = [r["_key"] async for r in c.cursor("SELECT _key FROM apg_web WHERE _key >= $1 ORDER BY _key", "k030", prefetch=3)]
        check(got == ["k%03d" % i for i in range(30, 40)], "cursor %r" % got)
        cur = await c.cursor('SELECT _key, "c:n" FROM apg_web ORDER BY _key')
        first = await cur.fetch(4)
        check([r[0] for r in first] == ["k000", "k001", "k002", "k003"], "cursor.fetch %r" % first)
        check(await cur.forward(10) == 10, "cursor.forward")
        check((await cur.fetchrow())[0] == "k014", "after forward")

    # Transactions: a rollback leaves nothing, a commit applies, a
    # savepoint undoes its part only.
    try:
        async with c.transaction():
            await c.execute("INSERT INTO apg_web (_key, \"c:n\") VALUES ('tx1', 1)")
            check(await c.fetchval("SELECT \"c:n\" FROM apg_web WHERE _key = 'tx1'") == 1, "own write")
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    check(await c.fetchval("SELECT count(*) FROM apg_web WHERE _key = 'tx1'") == 0, "rolled back")
    async with c.transaction():
        await c.execute("INSERT INTO apg_web (_key, \"c:n\") VALUES ('tx2', 2)")
        try:
            async with c.transaction():  # SAVEPOINT
                await c.execute("INSERT INTO apg_web (_key, \"c:n\") VALUES ('tx3', 3)")
                await c.execute("INSERT INTO apg_web (_key) VALUES ('tx2')")
        except asyncpg.UniqueViolationError:
            pass
        check(c.is_in_transaction(), "still in the transaction")
    keys = [r[0] for r in await c.fetch("SELECT _key FROM apg_web WHERE _key LIKE 'tx%' ORDER BY _key")]
    check(keys == ["tx2"], "savepoint %r" % keys)
    # A failed transaction refuses statements until ROLLBACK.
    tx = c.transaction()
    await tx.start()
    await expect_error(c.execute("SELECT 1/0"), asyncpg.DivisionByZeroError, "22012")
    await expect_error(c.execute("SELECT 1"), asyncpg.InFailedSQLTransactionError, "25P02")
    await tx.rollback()
    check(await c.fetchval("SELECT 1") == 1, "after rollback")


async def types_and_pool(dsn):
    c = await asyncpg.connect(dsn)
    # A codec for jsonb: asyncpg looks the type up in pg_type first.
    await c.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await c.execute("UPSERT INTO apg_t (id, j) VALUES ($1, $2)", 200, {"k": [1, "two", None], "n": 3.5})
    check(await c.fetchval("SELECT j FROM apg_t WHERE id = 200") == {"k": [1, "two", None], "n": 3.5}, "jsonb codec")
    check(await c.fetchval("SELECT j->'k'->>1 FROM apg_t WHERE id = $1", 200) == "two", "jsonb operators")
    # The type introspection query: a recursive CTE over pg_type,
    # pg_range and pg_attribute, with the composite row type of a table.
    reltype = await c.fetchval("SELECT reltype FROM pg_class WHERE relname = 'apg_t'")
    check(reltype, "pg_class.reltype")
    from asyncpg import introspection
    info = {r["oid"]: r for r in await c.fetch(introspection.INTRO_LOOKUP_TYPES, [reltype, 1009])}
    check(info[reltype]["kind"] == b"c" and info[reltype]["name"] == "apg_t" and info[reltype]["ns"] == "public",
          "row type %r" % info.get(reltype))
    check(list(info[reltype]["attrnames"]) == COLS, "attrnames %r" % info[reltype]["attrnames"])
    check(info[1009]["elemtype"] == 25 and info[1009]["elemtype_name"] == "text", "text[] %r" % info[1009])
    check(info[20]["elemtype_name"] == "-", "no element type prints as '-': %r" % info[20]["elemtype_name"])
    # What cellar refuses on purpose is 0A000: EXPLAIN's JSON format
    # (PreparedStatement.explain) and LISTEN (add_listener).
    stmt = await c.prepare("SELECT id FROM apg_t WHERE id = $1")
    e = await expect_error(stmt.explain(1), asyncpg.FeatureNotSupportedError, "0A000")
    check("FORMAT" in str(e) or "format" in str(e), "EXPLAIN's 0A000 %s" % e)
    e = await expect_error(c.add_listener("apg_channel", lambda *a: None), asyncpg.FeatureNotSupportedError, "0A000")
    check("LISTEN" in str(e), "LISTEN's 0A000 %s" % e)
    await c.close()

    # Without a statement cache (as behind pgbouncer) every query is an
    # unnamed statement, parsed again each time.
    c = await asyncpg.connect(dsn, statement_cache_size=0)
    for i in range(5):
        check(await c.fetchval("SELECT n FROM apg_t WHERE id = $1", 1) == ROWS[0][9], "uncached statement")
    await c.executemany("UPSERT INTO apg_t (id, name) VALUES ($1, $2)", [(300 + i, "u%d" % i) for i in range(3)])
    check(await c.fetchval("SELECT count(*) FROM apg_t WHERE id >= 300") == 3, "uncached executemany")
    await c.execute("DELETE FROM apg_t WHERE id >= 300")
    await c.close()

    # A pool resets each connection it gets back (pg_advisory_unlock_all,
    # CLOSE ALL, UNLISTEN *, RESET ALL).
    async with asyncpg.create_pool(dsn, min_size=2, max_size=2) as pool:
        for i in range(6):
            async with pool.acquire() as pc:
                await pc.execute("SET application_name = 'pooled'")
                check(await pc.fetchval("SELECT $1::int4 * 2", i) == 2 * i, "pooled query")
            async with pool.acquire() as pc:
                check(await pc.fetchval("SHOW application_name") == "", "reset by the pool")
        check(await pool.fetchval("SELECT count(*) FROM apg_t") == 6, "pool.fetchval")


async def main(dsn):
    c = await asyncpg.connect(dsn)
    check(c.get_server_version().major == 15, "server version %r" % (c.get_server_version(),))
    await plain_table(c)
    await copy(c)
    rows = await bigtable_table(c)
    await cursors_and_transactions(c, rows)
    await c.execute("DROP TABLE apg_web")
    await c.close()
    await types_and_pool(dsn)
    c = await asyncpg.connect(dsn)
    await c.execute("DROP TABLE apg_t")
    await c.close()


asyncio.run(main(sys.argv[1]))
print("ok")
