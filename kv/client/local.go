package client

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cellardb/cellar/kv/model"
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
	mark                  localMarker
}

// in marks a direct call with the stub's secret (auth.go's localCall), so
// that the server authenticates it and sees its principal (the context's)
// as it would a gRPC call's.
func (l localStub) in(ctx context.Context) context.Context {
	return l.mark.in(ctx)
}

func (l localStub) ReadRow(ctx context.Context, in *pb.ReadRowRequest, _ ...grpc.CallOption) (*pb.ReadRowResponse, error) {
	return l.srv.ReadRow(l.in(ctx), in)
}

// localReader is a tablet server that hands a direct caller the row it
// read rather than a protobuf copy of it (tabletserver.Server.ReadRowLocal).
type localReader interface {
	ReadRowLocal(ctx context.Context, req *pb.ReadRowRequest) (model.Row, bool, *pb.ReadStats, error)
}

// localScanner is a tablet server that runs a scan on the caller's
// goroutine and hands over the rows it read
// (tabletserver.Server.ScanLocal): no goroutine, channel or protobuf copy
// per chunk.
type localScanner interface {
	ScanLocal(ctx context.Context, req *pb.ScanRequest) (rows []model.Row, more bool, resume []byte, stats *pb.ReadStats, err error)
}

// readRow reads a row directly, without the protobuf copy if the server
// offers that.
func (l localStub) readRow(ctx context.Context, in *pb.ReadRowRequest) (model.Row, bool, *pb.ReadStats, error) {
	if r, ok := l.srv.(localReader); ok {
		return r.ReadRowLocal(l.in(ctx), in)
	}
	resp, err := l.srv.ReadRow(l.in(ctx), in)
	if err != nil || !resp.Found {
		return model.Row{}, false, resp.GetStats(), err
	}
	return rowFromProto(resp.Row), true, resp.Stats, nil
}

func (l localStub) MutateRow(ctx context.Context, in *pb.MutateRowRequest, _ ...grpc.CallOption) (*pb.MutateRowResponse, error) {
	return l.srv.MutateRow(l.in(ctx), in)
}

func (l localStub) MutateRows(ctx context.Context, in *pb.MutateRowsRequest, _ ...grpc.CallOption) (*pb.MutateRowsResponse, error) {
	return l.srv.MutateRows(l.in(ctx), in)
}

func (l localStub) ReadModifyWrite(ctx context.Context, in *pb.ReadModifyWriteRequest, _ ...grpc.CallOption) (*pb.ReadModifyWriteResponse, error) {
	return l.srv.ReadModifyWrite(l.in(ctx), in)
}

func (l localStub) CheckAndMutate(ctx context.Context, in *pb.CheckAndMutateRequest, _ ...grpc.CallOption) (*pb.CheckAndMutateResponse, error) {
	return l.srv.CheckAndMutate(l.in(ctx), in)
}

// Scan runs the server's Scan in a goroutine, handing its responses over
// a channel: no marshalling, no socket.
func (l localStub) Scan(ctx context.Context, in *pb.ScanRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[pb.ScanResponse], error) {
	ctx, cancel := context.WithCancel(l.in(ctx))
	s := &localScan{ctx: ctx, cancel: cancel, ch: make(chan *pb.ScanResponse, 4), done: make(chan struct{})}
	go func() {
		s.err = l.srv.Scan(in, &localScanServer{s: s})
		close(s.done)
	}()
	return s, nil
}

// localScan is both ends of an in-process Scan stream.
type localScan struct {
	ctx    context.Context
	cancel context.CancelFunc
	ch     chan *pb.ScanResponse
	done   chan struct{}
	err    error // the server's result, once done is closed
}

func (s *localScan) Recv() (*pb.ScanResponse, error) {
	select {
	case r := <-s.ch:
		return r, nil
	case <-s.done:
		// Responses sent before the end are still in the channel.
		select {
		case r := <-s.ch:
			return r, nil
		default:
		}
		s.cancel()
		if s.err != nil {
			return nil, s.err
		}
		return nil, io.EOF
	}
}

func (s *localScan) Header() (metadata.MD, error) { return nil, nil }
func (s *localScan) Trailer() metadata.MD         { return nil }
func (s *localScan) CloseSend() error             { return nil }
func (s *localScan) Context() context.Context     { return s.ctx }
func (s *localScan) SendMsg(any) error            { return nil }

// RecvMsg is not used: the client reads a scan with Recv.
func (s *localScan) RecvMsg(any) error {
	return errors.New("kv/client: an in-process scan stream is read with Recv")
}

// localScanServer is the server's end.
type localScanServer struct {
	s *localScan
}

func (l *localScanServer) SetHeader(metadata.MD) error  { return nil }
func (l *localScanServer) SendHeader(metadata.MD) error { return nil }
func (l *localScanServer) SetTrailer(metadata.MD)       {}
func (l *localScanServer) SendMsg(any) error            { return nil }
func (l *localScanServer) RecvMsg(any) error            { return io.EOF }

func (l *localScanServer) Send(r *pb.ScanResponse) error {
	select {
	case l.s.ch <- r:
		return nil
	case <-l.s.ctx.Done():
		return l.s.ctx.Err()
	}
}

func (l *localScanServer) Context() context.Context { return l.s.ctx }
