package bigtableapi

import (
	"context"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
)

// Every call names the principal it acts for: the one its token names
// ("authorization: Bearer <token>" metadata, as Google's clients send it),
// or Anonymous for a call without a token from loopback (or from
// anywhere, with Options.AllowAnonymous). A wrong token, or no token from
// elsewhere, is Unauthenticated. The principal goes with the call's rows
// to the tablet servers, which check it against the tables' ACLs.

// Anonymous is the principal of calls without a token.
const Anonymous = "anonymous"

// Tokens names the principal of a token.
type Tokens interface {
	// TokenPrincipal returns the principal token names, and whether it
	// names one.
	TokenPrincipal(ctx context.Context, token string) (string, bool, error)
}

// authenticate returns ctx carrying the call's principal.
func (o Options) authenticate(ctx context.Context) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	auth := md.Get("authorization")
	if len(auth) == 0 {
		if !o.AllowAnonymous && !loopback(ctx) {
			return nil, status.Error(codes.Unauthenticated, "a call from outside loopback needs a token (authorization: Bearer <token>)")
		}
		return model.WithPrincipal(ctx, model.Principal{Name: Anonymous}), nil
	}
	token, ok := strings.CutPrefix(auth[0], "Bearer ")
	if !ok || len(auth) > 1 {
		return nil, status.Error(codes.Unauthenticated, "authorization metadata must be one \"Bearer <token>\"")
	}
	if o.Tokens == nil {
		return nil, status.Error(codes.Unauthenticated, "this server accepts no tokens")
	}
	name, ok, err := o.Tokens.TokenPrincipal(ctx, token)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "look the token up: %v", err)
	}
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "unknown token")
	}
	return model.WithPrincipal(ctx, model.Principal{Name: name}), nil
}

func loopback(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return false
	}
	if a, ok := p.Addr.(*net.TCPAddr); ok {
		return a.IP.IsLoopback()
	}
	return p.Addr != nil && p.Addr.Network() == "unix"
}

// authenticated returns a copy of desc whose every method authenticates
// its call first, so that no way of registering the services skips it.
func (o Options) authenticated(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	out := *desc
	out.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		h := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			ctx, err := o.authenticate(ctx)
			if err != nil {
				return nil, err
			}
			return h(srv, ctx, dec, ic)
		}
		out.Methods[i] = m
	}
	out.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, sd := range desc.Streams {
		h := sd.Handler
		sd.Handler = func(srv any, stream grpc.ServerStream) error {
			ctx, err := o.authenticate(stream.Context())
			if err != nil {
				return err
			}
			return h(srv, ctxStream{ServerStream: stream, ctx: ctx})
		}
		out.Streams[i] = sd
	}
	return &out
}

// ctxStream is a stream with the context of its authenticated call.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }
