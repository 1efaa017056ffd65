package bigtableapi

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
)

// toStatus gives an error of kv/client or the Admin the status code the
// service would answer. A gRPC status from a tablet server keeps its code
// and message; kv/model's classes map to theirs; the end of the caller's
// context maps to Canceled or DeadlineExceeded, whatever the last attempt
// saw (kv/client wraps that in). What is left is Internal: an error no
// layer classified is a bug, not a transient failure to retry.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	// Context ends first: kv/client reports a retry loop cut short as
	// "context canceled (last: <status>)", and the status inside is not
	// the answer.
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	if st, ok := status.FromError(err); ok {
		if st.Code() == codes.FailedPrecondition && strings.HasPrefix(st.Message(), "not serving") {
			// A tablet in motion: transient, as the clients must see it.
			return status.Error(codes.Unavailable, st.Message())
		}
		return st.Err()
	}
	code := codes.Internal
	switch {
	case errors.Is(err, model.ErrInvalidArgument):
		code = codes.InvalidArgument
	case errors.Is(err, model.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, model.ErrFailedPrecondition):
		code = codes.FailedPrecondition
	case errors.Is(err, model.ErrNotServing), errors.Is(err, model.ErrUnavailable), errors.Is(err, model.ErrClosed):
		code = codes.Unavailable
	case errors.Is(err, model.ErrAborted):
		code = codes.Aborted
	case errors.Is(err, model.ErrAlreadyExists):
		code = codes.AlreadyExists
	case errors.Is(err, model.ErrResourceExhausted):
		code = codes.ResourceExhausted
	case errors.Is(err, model.ErrCorruption):
		code = codes.DataLoss
	}
	return status.Error(code, err.Error())
}

// invalidf is an InvalidArgument status.
func invalidf(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}
