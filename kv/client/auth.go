package client

import (
	"context"
	"crypto/subtle"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
)

// Cluster members authenticate each other on internal RPC (the tablet
// servers' and the master's) with the cluster's shared secret, sent as
// metadata on every call. A front door names the principal a call acts
// for (model.PrincipalFrom of the call's context) in metadata too; the
// servers trust it only on a call that carries the secret, or in a
// cluster that has no secret (loopback development and tests).
const (
	SecretKey    = "cellar-secret"
	PrincipalKey = "cellar-principal"
	SuperuserKey = "cellar-superuser"
)

// authMD is the metadata of a call under ctx.
func authMD(ctx context.Context, secret string) metadata.MD {
	md := metadata.MD{}
	if secret != "" {
		md.Set(SecretKey, secret)
	}
	if p, ok := model.PrincipalFrom(ctx); ok {
		md.Set(PrincipalKey, p.Name)
		if p.Superuser {
			md.Set(SuperuserKey, "1")
		}
	}
	return md
}

// withAuth adds the call's metadata to ctx's outgoing metadata.
func withAuth(ctx context.Context, secret string) context.Context {
	md := authMD(ctx, secret)
	if len(md) == 0 {
		return ctx
	}
	kv := make([]string, 0, 2*len(md))
	for k, vs := range md {
		for _, v := range vs {
			kv = append(kv, k, v)
		}
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// AuthDialOptions make every call on a connection carry the secret and
// the principal of its context: for the connections to the master, which
// kv/client does not make.
func AuthDialOptions(secret string) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(withAuth(ctx, secret), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(withAuth(ctx, secret), desc, cc, method, opts...)
		}),
	}
}

// Caller is who a call to a cluster member comes from.
type Caller struct {
	// Principal is the principal the call acts for; Member is set instead
	// when it names none, for a call from a cluster member.
	Principal model.Principal
	Member    bool
}

// localCall marks a direct in-process call (local.go): it carries the
// stub's secret and the context's principal as Go values, which no remote
// caller can set, instead of metadata that would cost a map per call to
// build and read.
type localCall struct{ secret string }

func withLocalCall(ctx context.Context, secret string) context.Context {
	return localMark(secret).in(ctx)
}

// localMarker is a localCall boxed once: a stub marks every call with
// it, and a value boxed at each call would cost an allocation.
type localMarker struct{ v any }

func localMark(secret string) localMarker { return localMarker{v: localCall{secret: secret}} }

func (m localMarker) in(ctx context.Context) context.Context {
	return context.WithValue(ctx, localCall{}, m.v)
}

// Authenticate checks a call's secret (if the server has one) and returns
// its caller; a call without the right secret is Unauthenticated.
func Authenticate(ctx context.Context, secret string) (Caller, error) {
	if l, ok := ctx.Value(localCall{}).(localCall); ok {
		if secret != "" && subtle.ConstantTimeCompare([]byte(l.secret), []byte(secret)) != 1 {
			return Caller{}, status.Error(codes.Unauthenticated, "this cluster requires its secret on internal calls")
		}
		if p, ok := model.PrincipalFrom(ctx); ok {
			return Caller{Principal: p}, nil
		}
		return Caller{Member: true}, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if secret != "" {
		got := md.Get(SecretKey)
		if len(got) != 1 || subtle.ConstantTimeCompare([]byte(got[0]), []byte(secret)) != 1 {
			return Caller{}, status.Error(codes.Unauthenticated, "this cluster requires its secret (metadata "+SecretKey+") on internal calls")
		}
	}
	names := md.Get(PrincipalKey)
	if len(names) == 0 {
		return Caller{Member: true}, nil
	}
	su := md.Get(SuperuserKey)
	return Caller{Principal: model.Principal{Name: names[0], Superuser: len(su) == 1 && su[0] == "1"}}, nil
}

// ServerOptions make a server refuse calls without the secret
// (Unauthenticated); with no secret they accept every call.
func ServerOptions(secret string) []grpc.ServerOption {
	if secret == "" {
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if _, err := Authenticate(ctx, secret); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if _, err := Authenticate(ss.Context(), secret); err != nil {
				return err
			}
			return handler(srv, ss)
		}),
	}
}
