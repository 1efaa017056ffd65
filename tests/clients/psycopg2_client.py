"""psycopg2 (Debian's python3-psycopg2) against a cellar gateway."""
import sys

import psycopg2

conn = psycopg2.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("SELECT %s::int4 + 1, %s::text", (41, "hi"))
assert cur.fetchone() == (42, "hi"), "parameters"
cur.execute("SHOW server_version")
assert cur.fetchone()[0].startswith("15."), "server_version"
conn.commit()
# A named (server-side) cursor: DECLARE and FETCH in a transaction.
with conn.cursor(name="named") as named:
    named.execute("SELECT 1 AS a, 'b' AS b")
    assert named.fetchall() == [(1, "b")], "named cursor"
conn.commit()
try:
    cur.execute("SELECT 1/0")
    raise AssertionError("no error")
except psycopg2.Error as e:
    assert e.pgcode == "22012", e.pgcode
conn.rollback()
conn.autocommit = True
cur.execute("SET application_name = 'psycopg2'")
cur.execute("SELECT current_setting('application_name')")
assert cur.fetchone()[0] == "psycopg2"
conn.close()
print("ok")
