\set x random(1, 1000)
SELECT :x::int4 + 1;
SELECT 'cellar' || :x::text;
