package model

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// Error classes. Every error that leaves a kv package wraps one of these (or
// a context error, or a CorruptionError) with %w, so the front doors can map
// it to a gRPC status or a SQLSTATE, and kv/client can decide to retry.
var (
	// ErrInvalidArgument: the request is malformed. Not retryable.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: the table, family or tablet does not exist. Not retryable.
	ErrNotFound = errors.New("not found")
	// ErrFailedPrecondition: the request cannot apply to the current state,
	// such as an increment of a cell that is not 8 bytes. Not retryable.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrNotServing: this tablet is not served here (moved, split, merged or
	// closed). Retryable after re-locating the tablet.
	ErrNotServing = errors.New("tablet not serving")
	// ErrUnavailable: a transient failure, such as a commit log that is
	// recovering from a failed write. Retryable.
	ErrUnavailable = errors.New("unavailable")
	// ErrResourceExhausted: the disk is full or a limit was hit. Retryable
	// after the condition clears.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrCorruption: stored data failed a checksum or did not parse. Not
	// retryable. Usually carried by a *CorruptionError.
	ErrCorruption = errors.New("corruption")
	// ErrClosed: the object was closed. Not retryable on the same object.
	ErrClosed = errors.New("closed")
	// ErrAlreadyExists: what a create names exists already. Not
	// retryable.
	ErrAlreadyExists = errors.New("already exists")
	// ErrAborted: a conditional change lost to a concurrent one, such as
	// a schema change made from a schema that has changed since. The
	// caller may read again and redo its change.
	ErrAborted = errors.New("aborted")
)

// CorruptionError names the file and byte offset where stored data is bad.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// Corruptf returns a *CorruptionError.
func Corruptf(file string, offset int64, format string, args ...any) error {
	return &CorruptionError{File: file, Offset: offset, Reason: fmt.Sprintf(format, args...)}
}

// IOError classifies an error from the file system: a full disk becomes
// ErrResourceExhausted, everything else ErrUnavailable. The original error
// stays in the chain.
func IOError(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %s: %w", ErrResourceExhausted, op, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

// Retryable reports whether an operation that failed with err may succeed
// if tried again later, possibly elsewhere.
func Retryable(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrNotServing), errors.Is(err, ErrUnavailable), errors.Is(err, ErrResourceExhausted):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return false
}
