package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// TestLocalStubs: a client whose tablet servers share its process calls
// them directly, and gets the same answers as over gRPC without one RPC
// for the data methods.
func TestLocalStubs(t *testing.T) {
	cl := newCluster(t)
	var rpcs atomic.Int32
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		rpcs.Add(1)
		return inv(ctx, method, req, reply, cc, opts...)
	}
	countStream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, s grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		rpcs.Add(1)
		return s(ctx, desc, cc, method, opts...)
	}
	servers := map[string]pb.TabletServerServer{cl.meta.addr: cl.meta.srv, cl.a.addr: cl.a.srv, cl.b.addr: cl.b.srv}
	local := client.New(client.Options{Root: cl.root, Prefetch: 2,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count), grpc.WithChainStreamInterceptor(countStream)},
		Local:       func(addr string) (pb.TabletServerServer, bool) { s, ok := servers[addr]; return s, ok }})
	t.Cleanup(func() { local.Close() })
	ctx := context.Background()
	for i := range 30 {
		if err := local.Apply(ctx, "t", set(fmt.Sprintf("r%02d", i), fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	row, found, err := local.ReadRow(ctx, "t", []byte("r07"), client.Filter{})
	if err != nil || !found || string(row.Cells[0].Value) != "7" {
		t.Fatalf("ReadRow: %v %v %v", row, found, err)
	}
	ok, err := local.CheckAndMutate(ctx, "t", []byte("r07"), client.Filter{}, []model.Mutation{model.DeleteRow()}, nil)
	if err != nil || !ok {
		t.Fatalf("CheckAndMutate: %v %v", ok, err)
	}
	var viaLocal, viaGRPC []string
	for _, c := range []*client.Client{local, cl.c} {
		sc := c.Scan(ctx, "t", model.RowRange{Start: []byte("r05"), End: []byte("r25")}, client.Filter{}, 0)
		var keys []string
		for sc.Next() {
			keys = append(keys, string(sc.Row().Key))
		}
		if sc.Err() != nil {
			t.Fatal(sc.Err())
		}
		if c == local {
			viaLocal = keys
		} else {
			viaGRPC = keys
		}
	}
	if strings.Join(viaLocal, ",") != strings.Join(viaGRPC, ",") || len(viaLocal) != 19 {
		t.Fatalf("scan: local %v, gRPC %v", viaLocal, viaGRPC)
	}
	// A scan stopped early by its limit ends the server's side too.
	sc := local.Scan(ctx, "t", model.RowRange{}, client.Filter{}, 3)
	n := 0
	for sc.Next() {
		n++
	}
	if n != 3 || sc.Err() != nil {
		t.Fatalf("limited scan: %d rows, %v", n, sc.Err())
	}
	if got := rpcs.Load(); got != 0 {
		t.Fatalf("the local client made %d RPCs", got)
	}
}

// TestTablets: the tablets that hold a range, in order.
func TestTablets(t *testing.T) {
	cl := newCluster(t)
	ctx := context.Background()
	for _, c := range []struct {
		start, end string
		want       string
	}{
		{"", "", `["", "g") ["g", "p") ["p", +inf)`},
		{"h", "i", `["g", "p")`},
		{"a", "h", `["", "g") ["g", "p")`},
		{"g", "p", `["g", "p")`},
	} {
		ts, err := cl.c.Tablets(ctx, "t", model.RowRange{Start: []byte(c.start), End: []byte(c.end)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tb := range ts {
			got = append(got, model.RowRange{Start: tb.Start, End: tb.End}.String())
			if tb.Addr != cl.a.addr {
				t.Fatalf("tablet %v on %s, want %s", tb, tb.Addr, cl.a.addr)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("Tablets(%q, %q) = %v, want %s", c.start, c.end, got, c.want)
		}
	}
}
