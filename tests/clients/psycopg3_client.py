"""psycopg 3 (Debian's python3-psycopg) against a cellar gateway."""
import sys

import psycopg

with psycopg.connect(sys.argv[1]) as conn:
    # Past prepare_threshold (5), psycopg prepares the statement by name.
    for i in range(8):
        row = conn.execute("SELECT %s::int4 + 1, %s::text", (i, "x")).fetchone()
        assert row == (i + 1, "x"), row
    # Binary results.
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT %s::int8 * 2, %s::float8, true", (21, 1.5))
        assert cur.fetchone() == (42, 1.5, True)
    # A server-side cursor.
    with conn.transaction():
        with conn.cursor(name="srv") as cur:
            cur.execute("SELECT 7 AS seven")
            assert cur.fetchall() == [(7,)]
    try:
        conn.execute("SELECT x")
        raise AssertionError("no error")
    except psycopg.errors.UndefinedColumn:
        pass
print("ok")
