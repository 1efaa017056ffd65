package bigtableapi

import (
	"context"
	"errors"
	"strings"

	"github.com/cellardb/cellar/kv/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	return status.Error(client.Code(err), err.Error())
}

// invalidf is an InvalidArgument status.
func invalidf(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}
