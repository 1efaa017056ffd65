package pgeval

import (
	"context"
	"time"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Relation is a table the engine reads: a virtual catalog table, or a
// user table whose scans go to the tablet servers. Relations are declared
// here, by the engine that consumes them.
type Relation interface {
	// Columns are the relation's columns, in order.
	Columns() []pgtypes.Column
	// Scan returns the relation's rows. The request says what the query
	// needs, so that a relation can narrow its scan (row ranges, column
	// filters, a limit); the engine still applies every filter itself.
	Scan(ctx context.Context, req ScanRequest) (Rows, error)
}

// ScanRequest is what a query needs from one relation.
type ScanRequest struct {
	// Filters are the WHERE (and JOIN ON) conjuncts that reference only
	// this relation, as compiled expressions over its columns. A relation
	// may use them to narrow what it reads (Filter.Node is the
	// PostgreSQL AST for analysis; Filter.Expr evaluates it).
	Filters []Filter
	// Needed[i] is false if column i is not used by the query; the
	// relation may return nil for it.
	Needed []bool
	// Limit, if ≥ 0, is the most rows the query can consume from this
	// scan: set only when no filter, join, grouping or sort sits between
	// the scan and the LIMIT (or every filter was marked Exact by the
	// relation, see Exacter).
	Limit int64
	// Reverse asks for the relation's natural order reversed (an ORDER BY
	// on the ordered columns, descending); only set for an Ordered
	// relation that reports it can (Reverser).
	Reverse bool
	// Args are the statement's parameters, for evaluating filters.
	Args []any
	// Env is the statement's environment, for evaluating filters.
	Env *Env
}

// Filter is one conjunct of a WHERE clause.
type Filter struct {
	Node any // *pg_query.Node
	Expr *Expr
}

// Rows iterates a relation's or a query's rows. Next returns io.EOF at
// the end.
type Rows interface {
	Next(ctx context.Context) ([]any, error)
	Close()
}

// Ordered is implemented by a relation whose scans return rows sorted by
// some of its columns (ascending, NULLs never appear in them); an ORDER BY
// on a prefix of them needs no sort.
type Ordered interface {
	Ordering() []int
}

// Explainer is implemented by a relation that can describe how it would
// scan (EXPLAIN).
type Explainer interface {
	Explain(req ScanRequest) []string
}

// StarColumner is implemented by a relation whose columns from index
// StarColumns() on are not part of its row type: * and t.*, a whole-row
// reference (row_to_json(t)), NATURAL joins and JOIN USING leave them
// out, but a query may name them (a user table's columns for
// undeclared qualifiers the statement names: SELECT *, "anchor:x"
// FROM t lists anchor:x once). Column aliases (FROM t AS x(a, b))
// rename only the columns * shows.
type StarColumner interface {
	StarColumns() int
}

// Catalog resolves relation names.
type Catalog interface {
	// Relation returns schema.name; schema "" searches the search path
	// (pg_catalog first, then the session's search_path). An unknown
	// relation is a sqlstate 42P01 error.
	Relation(ctx context.Context, schema, name string) (Relation, error)
}

// Env is what a statement runs in.
type Env struct {
	Catalog Catalog
	// Setting returns a session setting (current_setting, SHOW).
	Setting  func(name string) (string, bool)
	User     string
	Database string
	// BackendPID is what pg_backend_pid() returns.
	BackendPID uint32
	// Now is the statement's (transaction's) timestamp: now(),
	// current_timestamp.
	Now time.Time
	// SortBudget is the most bytes a sort, DISTINCT or GROUP BY may hold
	// in memory; beyond it the statement fails with 53200. 0: 64 MiB.
	SortBudget int64
	// SetSetting, if set, is what set_config(name, value, is_local)
	// calls; without it set_config only returns the value.
	SetSetting func(name, value string, local bool) error
	// Random is random()'s source, uniform in [0, 1), and SetSeed what
	// setseed(x) calls: the session owns them, so the evaluator stays
	// deterministic for a given source. Without Random, random() fails.
	Random  func() float64
	SetSeed func(seed float64)
	// Clock is clock_timestamp()'s wall clock, read at each call;
	// without it clock_timestamp() is Now.
	Clock func() time.Time
	// SignalBackend is what pg_cancel_backend (terminate false) and
	// pg_terminate_backend call. nil: no backend can be signalled.
	SignalBackend func(ctx context.Context, pid uint32, terminate bool, wait time.Duration) (SignalOutcome, error)
	// FunctionText, if set, returns what pg_get_function_result,
	// pg_get_function_arguments and pg_get_function_identity_arguments
	// print for a function of pg_proc; without it, or for an oid it does
	// not know, they are NULL.
	FunctionText func(oid uint32) (result, args, identity string, ok bool)
	// Notice, if set, receives the warnings functions raise while the
	// statement runs (PostgreSQL's ereport(WARNING)); nil drops them.
	Notice func(*sqlstate.Error)
}

// SignalOutcome is what signalling a backend did.
type SignalOutcome int

const (
	// Signalled: the backend was canceled or told to terminate (and,
	// with a wait, ended within it).
	Signalled SignalOutcome = iota
	// NoSuchBackend: no backend has the process id.
	NoSuchBackend
	// NotTerminated: a terminated backend had not ended within the wait.
	NotTerminated
)
