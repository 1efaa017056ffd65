package query

import (
	"context"
	"errors"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/sqlstate"
)

// KV is what the SQL layer needs from a cellar cluster: table schemas
// (through the master, in Chubby) and row operations (on the tablet
// servers). It is declared here, by its consumer; ops adapts kv/client and
// the master's admin RPCs to it. Errors wrap model's error classes; the
// implementation does its own bounded retries (kv/client's), so the SQL
// layer never retries a KV call except UPDATE's compare-and-swap loop.
type KV interface {
	// Tables returns every table's schema.
	Tables(ctx context.Context) (map[string]model.Schema, error)
	CreateTable(ctx context.Context, name string, s model.Schema, splits [][]byte) error
	DeleteTable(ctx context.Context, name string) error
	// UpdateSchema replaces a table's schema; with expected, only if the
	// schema is still expected (model.ErrAborted if not).
	UpdateSchema(ctx context.Context, name string, expected *model.Schema, s model.Schema) error

	Apply(ctx context.Context, table string, m *model.RowMutation) error
	// CompareAndMutate applies ifTrue if the row has a cell and every
	// expect holds, else ifFalse, atomically, and reports which.
	CompareAndMutate(ctx context.Context, table string, row []byte, expects []model.Expect, ifTrue, ifFalse []model.Mutation) (bool, error)
	// ReadRow reads one row; found is false if it has no cell in f.
	ReadRow(ctx context.Context, table string, row []byte, f ReadFilter) (model.Row, bool, error)
	// Tablets lists the tablets that hold rng: where each starts and
	// ends, and the server that serves it.
	Tablets(ctx context.Context, table string, rng model.RowRange) ([]Tablet, error)
	// Aggregate groups the rows of ranges (in key order, apart) that pass
	// f and aggregates them on the tablet servers (aggpush.go).
	Aggregate(ctx context.Context, table string, ranges []model.RowRange, f ReadFilter, spec AggregateSpec) ([]AggGroup, error)
	// Scan returns the rows of rng (an empty End: to the table's end),
	// at most limit of them (0: all), each with its cells in f.
	Scan(ctx context.Context, table string, rng model.RowRange, f ReadFilter, limit int64) RowIterator
	// ScanReversed is Scan in descending key order.
	ScanReversed(ctx context.Context, table string, rng model.RowRange, f ReadFilter, limit int64) RowIterator
}

// Tablet is one tablet of a table, for EXPLAIN.
type Tablet struct {
	Start, End []byte
	Server     string
}

// ReadFilter selects the cells a read returns.
type ReadFilter struct {
	Families  []string
	TimeRange model.TimeRange
	// MaxVersions keeps the newest n versions of each column; 0 keeps all.
	MaxVersions int
	// Conditions must all hold for a row to be read; they run on the
	// tablet servers (pushdown.go).
	Conditions []model.Condition
	// Stats, if set, gathers the tablet servers' read statistics
	// (EXPLAIN ANALYZE): a read adds its own when it ends.
	Stats *ReadStats
	// ReadableOnly and Require: a read of every family (Families nil)
	// reads only those the session's user may read, if the user may read
	// every family of Require (the families of the columns the statement
	// uses); else it fails with 42501.
	ReadableOnly bool
	Require      []string
}

// ReadStats are what reads cost on the tablet servers: rows and cells
// examined, SSTable blocks read from files and served from the block
// cache, and bloom filters checked and how many ruled a file out.
type ReadStats struct {
	Rows, Cells, Blocks, CacheHits, BloomChecks, BloomUseful int64
}

// Add adds o to s.
func (s *ReadStats) Add(o ReadStats) {
	s.Rows += o.Rows
	s.Cells += o.Cells
	s.Blocks += o.Blocks
	s.CacheHits += o.CacheHits
	s.BloomChecks += o.BloomChecks
	s.BloomUseful += o.BloomUseful
}

// RowIterator streams rows in key order. One its reader stops early may
// implement Close() to report its statistics.
type RowIterator interface {
	Next() bool
	Row() model.Row
	Err() error
}

// kvError gives a KV error its SQLSTATE. write says whether the call
// wrote: an unavailable write may or may not have been applied.
func kvError(err error, write bool) error {
	var se *sqlstate.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return se
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return canceled(err)
	case errors.Is(err, model.ErrNotFound):
		return sqlstate.Errorf(sqlstate.CodeUndefinedTable, "%v", err)
	case errors.Is(err, model.ErrInvalidArgument):
		return sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "%v", err)
	case errors.Is(err, model.ErrFailedPrecondition):
		return sqlstate.Errorf(sqlstate.CodeDatatypeMismatch, "%v", err)
	case errors.Is(err, model.ErrResourceExhausted):
		return sqlstate.Errorf(codeInsufficientResources, "%v", err)
	case errors.Is(err, model.ErrCorruption):
		return sqlstate.Errorf(codeDataCorrupted, "%v", err)
	case errors.Is(err, model.ErrAborted):
		return sqlstate.Errorf(codeSerializationFailure, "%v", err)
	case errors.Is(err, model.ErrPermissionDenied):
		return sqlstate.Errorf(sqlstate.CodeInsufficientPrivilege, "%v", err)
	case errors.Is(err, model.ErrAlreadyExists): // only CREATE TABLE makes things
		return sqlstate.Errorf(codeDuplicateTable, "%v", err)
	case write && model.Retryable(err):
		return &sqlstate.Error{Code: codeTransactionResolutionUnknown, Message: err.Error(),
			Detail: "The write may or may not have been applied."}
	case model.Retryable(err):
		return sqlstate.Errorf(codeCannotConnectNow, "%v", err)
	}
	return sqlstate.Errorf(sqlstate.CodeInternal, "%v", err)
}

// SQLSTATEs only the table paths use.
const (
	codeInsufficientResources        = "53000"
	codeOutOfMemory                  = "53200"
	codeDataCorrupted                = "XX001"
	codeTransactionResolutionUnknown = "08007"
	codeCannotConnectNow             = "57P03"
	codeUniqueViolation              = "23505"
	codeNotNullViolation             = "23502"
	codeDuplicateTable               = "42P07"
	codeSerializationFailure         = "40001"
)
