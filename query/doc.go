// Package query is cellar's SQL layer: it turns the statements a client
// sends into results, over a cellar cluster that it reaches through the
// KV interface it declares (kv.go; ops/querykv adapts kv/client and the
// master to it).
//
// A statement's path (route.go):
//
//	query string ──split (PostgreSQL's lexer)──► statements
//	  DDL: CREATE/ALTER/DROP TABLE, SHOW TABLES,
//	  SHOW CREATE TABLE, DESCRIBE ──► pglex ──► TiDB grammar ──► ddl.go
//	  everything else ──► pg_query (PostgreSQL's grammar)
//	      SELECT ──► pgeval (one evaluator; relations: the emulated
//	                 catalogs of pgcatalog, the user tables of tablerel.go,
//	                 the cells view of cells.go)
//	      INSERT, UPSERT, UPDATE, DELETE, COPY ──► dml.go, update.go,
//	                 copyin.go (expressions compiled by pgeval)
//	      session statements ──► session.go, settings.go, cursor.go
//
// A user table is a relation (tablerel.go) whose scans go to the tablet
// servers: key predicates become row ranges (keyrange.go), value
// predicates become kv conditions run on the servers (pushdown.go), a
// LIMIT goes to the scan, aggregates can run on the servers (aggpush.go),
// and a transaction's buffered writes (txbuf.go) are merged into what it
// reads. Rows map onto Bigtable rows as rowcodec.go says (DESIGN.md
// sections 4 and 5).
//
// Writes are atomic per row and never across rows: INSERT is a
// check-and-mutate, UPDATE and DELETE compare-and-swap each row on the
// values they read and retry a row another writer changed (the layer's
// one retry loop, dml.go), UPSERT writes blindly. Inside BEGIN … COMMIT
// writes are buffered and applied row by row at COMMIT.
//
// Errors carry a SQLSTATE (query/sqlstate); values are Go values typed by
// a PostgreSQL type OID (query/pgtypes). docs/sql.md is the user's guide
// to the dialect.
package query
