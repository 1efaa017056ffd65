package client

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
)

// TestAuthenticate: a gRPC call proves itself with the secret in its
// metadata and names its principal there; a direct in-process call
// carries both as context values, checked the same way.
func TestAuthenticate(t *testing.T) {
	alice := model.WithPrincipal(context.Background(), model.Principal{Name: "alice"})
	for _, c := range []struct {
		name   string
		ctx    context.Context
		want   Caller
		denied bool
	}{
		{"gRPC, member", metadata.NewIncomingContext(context.Background(), authMD(context.Background(), "s")), Caller{Member: true}, false},
		{"gRPC, principal", metadata.NewIncomingContext(context.Background(), authMD(alice, "s")), Caller{Principal: model.Principal{Name: "alice"}}, false},
		{"gRPC, wrong secret", metadata.NewIncomingContext(context.Background(), authMD(alice, "x")), Caller{}, true},
		{"gRPC, no secret", context.Background(), Caller{}, true},
		{"local, member", withLocalCall(context.Background(), "s"), Caller{Member: true}, false},
		{"local, principal", withLocalCall(alice, "s"), Caller{Principal: model.Principal{Name: "alice"}}, false},
		{"local, wrong secret", withLocalCall(alice, "x"), Caller{}, true},
		// Metadata cannot stand in for the local marker's secret.
		{"local marker wins", withLocalCall(metadata.NewIncomingContext(alice, authMD(alice, "s")), "x"), Caller{}, true},
	} {
		got, err := Authenticate(c.ctx, "s")
		if c.denied {
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s: %+v, %v; want Unauthenticated", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}
