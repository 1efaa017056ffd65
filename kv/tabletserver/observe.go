package tabletserver

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Every RPC the server answers, over gRPC or from an in-process caller
// (Local), is reported to Options.ObserveRPC once it ends, with the
// method's short name (ReadRow), how long it took and its error, so that
// ops can count and time them without this package knowing about metrics.

// observing reports whether RPCs are observed.
func (s *Server) observing() bool { return s.opts.ObserveRPC != nil }

// observeOptions are the gRPC options that observe the server's calls.
func (s *Server) observeOptions() []grpc.ServerOption {
	if !s.observing() {
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			start := time.Now()
			resp, err := h(ctx, req)
			s.opts.ObserveRPC(shortMethod(info.FullMethod), time.Since(start), err)
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			start := time.Now()
			err := h(srv, ss)
			s.opts.ObserveRPC(shortMethod(info.FullMethod), time.Since(start), err)
			return err
		}),
	}
}

// shortMethod is the method name of "/package.Service/Method".
func shortMethod(full string) string { return full[strings.LastIndexByte(full, '/')+1:] }

// Local returns the server for callers in the same process (kv/client's
// Options.Local), which bypass gRPC: the data methods they call directly
// are observed as the gRPC ones are.
func (s *Server) Local() pb.TabletServerServer {
	if !s.observing() {
		return s
	}
	return observed{s}
}

// observed is a Server whose data methods report to ObserveRPC.
type observed struct{ *Server }

func observe[Req, Resp any](ctx context.Context, s *Server, method string, f func(context.Context, Req) (Resp, error), req Req) (Resp, error) {
	start := time.Now()
	resp, err := f(ctx, req)
	s.opts.ObserveRPC(method, time.Since(start), err)
	return resp, err
}

func (o observed) ReadRow(ctx context.Context, req *pb.ReadRowRequest) (*pb.ReadRowResponse, error) {
	return observe(ctx, o.Server, "ReadRow", o.Server.ReadRow, req)
}

func (o observed) ReadRowLocal(ctx context.Context, req *pb.ReadRowRequest) (model.Row, bool, *pb.ReadStats, error) {
	start := time.Now()
	row, found, st, err := o.Server.ReadRowLocal(ctx, req)
	o.opts.ObserveRPC("ReadRow", time.Since(start), err)
	return row, found, st, err
}

func (o observed) MutateRow(ctx context.Context, req *pb.MutateRowRequest) (*pb.MutateRowResponse, error) {
	return observe(ctx, o.Server, "MutateRow", o.Server.MutateRow, req)
}

func (o observed) MutateRows(ctx context.Context, req *pb.MutateRowsRequest) (*pb.MutateRowsResponse, error) {
	return observe(ctx, o.Server, "MutateRows", o.Server.MutateRows, req)
}

func (o observed) ReadModifyWrite(ctx context.Context, req *pb.ReadModifyWriteRequest) (*pb.ReadModifyWriteResponse, error) {
	return observe(ctx, o.Server, "ReadModifyWrite", o.Server.ReadModifyWrite, req)
}

func (o observed) CheckAndMutate(ctx context.Context, req *pb.CheckAndMutateRequest) (*pb.CheckAndMutateResponse, error) {
	return observe(ctx, o.Server, "CheckAndMutate", o.Server.CheckAndMutate, req)
}

func (o observed) Aggregate(ctx context.Context, req *pb.AggregateRequest) (*pb.AggregateResponse, error) {
	return observe(ctx, o.Server, "Aggregate", o.Server.Aggregate, req)
}

func (o observed) ScanLocal(ctx context.Context, req *pb.ScanRequest) ([]model.Row, bool, []byte, *pb.ReadStats, error) {
	start := time.Now()
	rows, more, resume, st, err := o.Server.ScanLocal(ctx, req)
	o.opts.ObserveRPC("Scan", time.Since(start), err)
	return rows, more, resume, st, err
}

func (o observed) Scan(req *pb.ScanRequest, stream pb.TabletServer_ScanServer) error {
	start := time.Now()
	err := o.Server.Scan(req, stream)
	o.opts.ObserveRPC("Scan", time.Since(start), err)
	return err
}
