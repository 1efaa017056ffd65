package bigtableapi

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
)

type tokenMap map[string]string

func (m tokenMap) TokenPrincipal(_ context.Context, token string) (string, bool, error) {
	p, ok := m[token]
	return p, ok, nil
}

func TestAuthenticate(t *testing.T) {
	from := func(ip string, md ...string) context.Context {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 1234}})
		return metadata.NewIncomingContext(ctx, metadata.Pairs(md...))
	}
	o := Options{Tokens: tokenMap{"tok-a": "alice"}}
	cases := []struct {
		name string
		ctx  context.Context
		opts Options
		want string // principal, or "" for Unauthenticated
	}{
		{"loopback without a token", from("127.0.0.1"), o, Anonymous},
		{"IPv6 loopback", from("::1"), o, Anonymous},
		{"remote without a token", from("10.1.2.3"), o, ""},
		{"remote, anonymous allowed", from("10.1.2.3"), Options{AllowAnonymous: true}, Anonymous},
		{"a known token", from("10.1.2.3", "authorization", "Bearer tok-a"), o, "alice"},
		{"an unknown token", from("127.0.0.1", "authorization", "Bearer nope"), o, ""},
		{"not a bearer token", from("127.0.0.1", "authorization", "Basic abc"), o, ""},
		{"a token and no token store", from("127.0.0.1", "authorization", "Bearer tok-a"), Options{}, ""},
	}
	for _, c := range cases {
		ctx, err := c.opts.authenticate(c.ctx)
		if c.want == "" {
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s: %v, want Unauthenticated", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if p, ok := model.PrincipalFrom(ctx); !ok || p.Name != c.want || p.Superuser {
			t.Errorf("%s: principal %+v, want %q", c.name, p, c.want)
		}
	}
}
