// Package pgeval evaluates PostgreSQL SELECT statements and expressions
// over relations, with PostgreSQL's semantics: its types, implicit casts,
// NULL handling, error codes and result column names.
//
// The input is pg_query's AST. Evaluation happens in three stages:
//
//  1. Compile. Prepare walks the AST once. It resolves relation names
//     through Env.Catalog and column names through scopes (one per FROM
//     list, chained to the enclosing query's scope so that correlated
//     subqueries resolve outer columns), types every expression, infers
//     parameter types from their context, and reports PostgreSQL's errors
//     (42P01, 42703, 42883, ...) with their positions. The result is a
//     typed IR: every expression becomes an *Expr, a closure with its
//     result type; every FROM item, join, filter, aggregation, sort,
//     DISTINCT, set operation and LIMIT becomes a plan node.
//  2. Plan nodes open into an iterator pipeline (Rows). Scans, filters,
//     projections and limits stream; a join holds its inner side (hashed
//     on the ON clause's equalities when there are any, else scanned as a
//     nested loop); sorts, grouping, DISTINCT, window functions and set
//     operations materialize. What a node holds is charged to a budget
//     (Env.SortBudget), and beyond it the statement fails with 53200.
//     WHERE conjuncts over one relation, the columns used and, when
//     nothing in between needs every row, the LIMIT are handed to the
//     relation's scan (ScanRequest).
//  3. Expressions evaluate against the current row; the rows of the
//     enclosing queries travel in the evaluation context so that a
//     correlated subquery sees them. Uncorrelated subqueries run once per
//     statement execution and keep their result.
//
// Values are the Go values listed in package pgtypes, plus the types this
// package adds: Array (any array type, int2vector, oidvector), Reg (oid
// aliases such as regclass, which print as names) and Record (composite
// results such as _pg_expandarray's). FormatText writes any of them in
// PostgreSQL's text output form.
//
// cellar has no privileges yet, so has_*_privilege functions answer true.
//
// Nothing here reads the wall clock for results: now() and friends are
// Env.Now. Only EXPLAIN ANALYZE timings and pg_sleep use real time.
package pgeval
