// Package pglex is the PostgreSQL lexical front end of cellar's SQL
// dialect. The dialect's grammar is TiDB's parser (a MySQL grammar, run
// with ANSI_QUOTES, PIPES_AS_CONCAT and NO_BACKSLASH_ESCAPES), which must
// never see a client's text as it is: it rejects PostgreSQL's casts, type
// names and E-strings, and silently misreads `$1`, `E'…'` and `--x`
// (DESIGN.md section 3). So a statement is first read by PostgreSQL's own
// lexer (pg_query.Scan), and its token stream, never its text, is
// rewritten into text the TiDB grammar reads the same way PostgreSQL
// would:
//
//	-- and /* */ comments          dropped
//	$n                             ? (Result.Params maps each ? to n-1, so
//	                               $1 may appear twice)
//	E'a\nb', $$x$$, 'it''s'        standard '…' literals (escapes resolved)
//	expr::type, CAST(expr AS type) __pgcast_<type>(expr[, typmods]): the
//	                               PostgreSQL type survives by name
//	interval '1 day'               __pginterval('1 day')
//	PostgreSQL type names in DDL   MySQL spellings, by one table (types.go)
//	UPSERT INTO                    INSERT INTO, Result.Upsert
//	ON CONFLICT (k) DO UPDATE SET  ON DUPLICATE KEY UPDATE, with
//	                               EXCLUDED.c as VALUES(c)
//	ON CONFLICT … DO NOTHING       INSERT IGNORE
//	RETURNING list                 removed; Result.Returning holds the list,
//	                               rewritten the same way
//	END                            COMMIT
//
// Every output byte range remembers where it came from, so a TiDB syntax
// error points at the client's own text (Result.InputPosition).
package pglex
