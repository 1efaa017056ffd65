-- A plain PostgreSQL-style table: the same statements and answers as on
-- PostgreSQL 15.
CREATE TABLE regress_people (id INT PRIMARY KEY, name VARCHAR(32) NOT NULL, height DOUBLE PRECISION, born DATE);
INSERT INTO regress_people VALUES (1, 'ada', 1.65, '1815-12-10'), (2, 'alan', 1.78, '1912-06-23'), (3, 'grace', NULL, '1906-12-09');
SELECT * FROM regress_people ORDER BY id;
SELECT name, height FROM regress_people WHERE id = 2;
SELECT count(*), max(born), min(name) FROM regress_people;
UPDATE regress_people SET height = height + 0.01 WHERE id IN (1, 2);
SELECT id, height FROM regress_people WHERE height IS NOT NULL ORDER BY id;
INSERT INTO regress_people VALUES (1, 'dup', NULL, NULL);
INSERT INTO regress_people VALUES (4, 'edsger', 1.80, '1930-05-11') ON CONFLICT (id) DO NOTHING;
DELETE FROM regress_people WHERE id >= 3;
SELECT id, upper(name) AS name FROM regress_people ORDER BY id DESC;
BEGIN;
INSERT INTO regress_people VALUES (9, 'tx', NULL, NULL);
SELECT count(*) FROM regress_people;
ROLLBACK;
SELECT count(*) FROM regress_people;
DROP TABLE regress_people;
