// Package query is cellar's SQL layer: it turns the statements a client
// sends into results.
//
// Today it carries what the wire protocol needs to be tested end to end
// with real clients, and nothing that touches tables yet (that is issue
// 6, the cellar dialect over family:qualifier columns):
//
//   - session statements: SET / SET ... TO / RESET / SHOW (one setting or
//     ALL), with the settings drivers read (see settings.go);
//   - transaction statements: BEGIN / START TRANSACTION / COMMIT / END /
//     ROLLBACK / ABORT, with PostgreSQL's rules: after an error in a
//     transaction block every statement fails with 25P02 until ROLLBACK,
//     and COMMIT of a failed transaction rolls back and says ROLLBACK;
//   - DISCARD ALL and DEALLOCATE (the prepared statements themselves live
//     in the wire layer);
//   - SELECT of expressions without FROM: literals, parameters, casts,
//     arithmetic and comparisons on numbers, string concatenation, and the
//     functions clients call on connect (version(), current_setting(),
//     current_database(), current_user, pg_backend_pid()).
//
// Statements are parsed by PostgreSQL's own grammar (pg_query), so
// positions in syntax errors are PostgreSQL's. Anything else gets SQLSTATE
// 0A000 with a message that names the statement.
//
// Errors carry a SQLSTATE (errors.go). Values are Go values typed by a
// PostgreSQL type OID (types.go); the wire layer encodes them.
package query
