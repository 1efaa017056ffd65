// Package sqlstate is the error a client sees: a SQLSTATE code with
// PostgreSQL's fields (severity, message, detail, hint, position).
package sqlstate

import (
	"errors"
	"fmt"
)

// SQLSTATE codes cellar returns, with PostgreSQL's meaning.
const (
	CodeSuccessfulCompletion   = "00000"
	CodeWarning                = "01000"
	CodeNoActiveTransaction    = "25P01"
	CodeActiveTransaction      = "25001"
	CodeInFailedTransaction    = "25P02"
	CodeSyntaxError            = "42601"
	CodeUndefinedObject        = "42704"
	CodeUndefinedFunction      = "42883"
	CodeUndefinedColumn        = "42703"
	CodeUndefinedTable         = "42P01"
	CodeDatatypeMismatch       = "42804"
	CodeCannotCoerce           = "42846"
	CodeCantChangeRuntimeParam = "55P02"
	CodeUndefinedParameter     = "42P02"
	CodeIndeterminateDatatype  = "42P18"
	CodeInvalidParameterValue  = "22023"
	CodeInvalidTextRepresent   = "22P02"
	CodeDivisionByZero         = "22012"
	CodeNumericOutOfRange      = "22003"
	CodeProtocolViolation      = "08P01"
	CodeFeatureNotSupported    = "0A000"
	CodeQueryCanceled          = "57014"
	CodeInsufficientPrivilege  = "42501"
	CodeInvalidPassword        = "28P01"
	CodeInvalidAuthorization   = "28000"
	CodeTooManyConnections     = "53300"
	CodeProgramLimitExceeded   = "54000"
	CodeInvalidSQLStatementNam = "26000"
	CodeDuplicatePreparedStmt  = "42P05"
	CodeInvalidCursorName      = "34000"
	CodeAdminShutdown          = "57P01"
	CodeIdleSessionTimeout     = "57P05"
	CodeInternal               = "XX000"
)

// Error is an error with a SQLSTATE, as a client sees it.
type Error struct {
	// Severity is ERROR unless set (WARNING, NOTICE for notices; FATAL
	// for errors that end the connection).
	Severity string
	Code     string
	Message  string
	Detail   string
	Hint     string
	// Position is the 1-based character position in the statement text
	// that the error points at, 0 for none.
	Position int
	// Where is the context: what was being done (a parameter of Bind).
	Where string
	// Schema, Table, Column and Constraint name the object an integrity
	// error concerns, as PostgreSQL's fields s, t, c and n do: drivers
	// read them (asyncpg's constraint_name, pgx's ConstraintName).
	Schema, Table, Column, Constraint string
}

func (e *Error) Error() string {
	if e.Position > 0 {
		return fmt.Sprintf("%s (SQLSTATE %s, at character %d)", e.Message, e.Code, e.Position)
	}
	return fmt.Sprintf("%s (SQLSTATE %s)", e.Message, e.Code)
}

// Errorf returns an error with a SQLSTATE.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Notice returns a notice (a warning that does not fail the statement).
func Notice(severity, code, format string, args ...any) *Error {
	return &Error{Severity: severity, Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error: a SQLSTATE error as it is, anything
// else as an internal error.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
