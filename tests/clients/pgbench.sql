\set x random(1, 1000)
SELECT :x::int4 + 1;
SELECT 'cellar' || :x::text;
UPSERT INTO pgb (_key, f.v, c.n) VALUES ('k' || :x, 'v' || :x, :x);
SELECT f.v, c.n FROM pgb WHERE _key = 'k' || :x;
UPDATE pgb SET c.n = c.n + 1 WHERE _key = 'k' || :x;
