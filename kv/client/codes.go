package client

import (
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/cellardb/cellar/kv/model"
)

// Code is the gRPC code of a kv/model error class, the one mapping the
// servers that answer kv errors over gRPC share (the tablet servers, the
// Bigtable API). An error of no class is Internal. Callers handle what
// they answer differently first: context ends, and a tablet not served
// here (the tablet servers say "not serving", the Bigtable API
// Unavailable).
func Code(err error) codes.Code {
	switch {
	case errors.Is(err, model.ErrInvalidArgument):
		return codes.InvalidArgument
	case errors.Is(err, model.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, model.ErrFailedPrecondition):
		return codes.FailedPrecondition
	case errors.Is(err, model.ErrNotServing), errors.Is(err, model.ErrUnavailable), errors.Is(err, model.ErrClosed):
		return codes.Unavailable
	case errors.Is(err, model.ErrAborted):
		return codes.Aborted
	case errors.Is(err, model.ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, model.ErrResourceExhausted):
		return codes.ResourceExhausted
	case errors.Is(err, model.ErrCorruption):
		return codes.DataLoss
	case errors.Is(err, model.ErrPermissionDenied):
		return codes.PermissionDenied
	}
	return codes.Internal
}
