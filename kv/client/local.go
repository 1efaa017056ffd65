package client

import (
	"context"

	"google.golang.org/grpc"

	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// A client in the same process as a tablet server (cellar demo's gateway)
// calls the server's unary methods directly instead of through gRPC over
// loopback: a point read or a row write then costs no socket round trip
// and no goroutine hand-offs. The server runs the same code either way,
// its fencing checks included; streams still go through gRPC.
// CockroachDB short-circuits its local RPCs the same way.

// localStub is a tablet server's client that calls srv directly for the
// unary data methods.
type localStub struct {
	pb.TabletServerClient // gRPC, for everything else
	srv                   pb.TabletServerServer
}

func (l localStub) ReadRow(ctx context.Context, in *pb.ReadRowRequest, _ ...grpc.CallOption) (*pb.ReadRowResponse, error) {
	return l.srv.ReadRow(ctx, in)
}

func (l localStub) MutateRow(ctx context.Context, in *pb.MutateRowRequest, _ ...grpc.CallOption) (*pb.MutateRowResponse, error) {
	return l.srv.MutateRow(ctx, in)
}

func (l localStub) MutateRows(ctx context.Context, in *pb.MutateRowsRequest, _ ...grpc.CallOption) (*pb.MutateRowsResponse, error) {
	return l.srv.MutateRows(ctx, in)
}

func (l localStub) ReadModifyWrite(ctx context.Context, in *pb.ReadModifyWriteRequest, _ ...grpc.CallOption) (*pb.ReadModifyWriteResponse, error) {
	return l.srv.ReadModifyWrite(ctx, in)
}

func (l localStub) CheckAndMutate(ctx context.Context, in *pb.CheckAndMutateRequest, _ ...grpc.CallOption) (*pb.CheckAndMutateResponse, error) {
	return l.srv.CheckAndMutate(ctx, in)
}
