"""SQLAlchemy 1.4 (Debian's python3-sqlalchemy, over psycopg2) against a
cellar gateway: DDL and rows through the ORM's Core, and the inspector's
catalog queries (get_table_names, get_columns, get_pk_constraint)."""
import sys

import sqlalchemy as sa


def check(ok, what):
    if not ok:
        raise AssertionError(what)


url = sys.argv[1].replace("postgresql://", "postgresql+psycopg2://", 1)
engine = sa.create_engine(url)
with engine.begin() as c:
    c.execute(sa.text("DROP TABLE IF EXISTS sa_people"))
    c.execute(sa.text(
        "CREATE TABLE sa_people (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, height DOUBLE PRECISION)"))
with engine.begin() as c:
    c.execute(sa.text("INSERT INTO sa_people VALUES (:i, :n, :h)"),
              [{"i": 1, "n": "ada", "h": 1.65}, {"i": 2, "n": "alan", "h": None}])
with engine.connect() as c:
    rows = c.execute(sa.text("SELECT id, name, height FROM sa_people ORDER BY id")).fetchall()
    check([tuple(r) for r in rows] == [(1, "ada", 1.65), (2, "alan", None)], "rows %r" % rows)

insp = sa.inspect(engine)
check("sa_people" in insp.get_table_names(), "table names %r" % insp.get_table_names())
cols = {c["name"]: c for c in insp.get_columns("sa_people")}
check(list(cols) == ["id", "name", "height"], "columns %r" % list(cols))
check(isinstance(cols["id"]["type"], sa.BigInteger) and not cols["id"]["nullable"], "id %r" % cols["id"])
check(isinstance(cols["name"]["type"], sa.String) and cols["name"]["type"].length == 64, "name %r" % cols["name"])
check(cols["height"]["nullable"], "height %r" % cols["height"])
pk = insp.get_pk_constraint("sa_people")
check(pk["constrained_columns"] == ["id"], "pk %r" % pk)
with engine.begin() as c:
    c.execute(sa.text("DROP TABLE sa_people"))
print("ok")
