package master

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
)

// AdminServer serves the master's admin RPCs (kv/masterpb) for an active
// master.
type AdminServer struct {
	masterpb.UnimplementedMasterServer
	M *Master
}

// CreateTable implements masterpb.MasterServer.
func (a AdminServer) CreateTable(ctx context.Context, req *masterpb.CreateTableRequest) (*masterpb.CreateTableResponse, error) {
	var schema model.Schema
	if err := json.Unmarshal(req.Schema, &schema); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "schema of %q: %v", req.Table, err)
	}
	if err := a.M.CreateTable(ctx, req.Table, schema, req.Splits); err != nil {
		return nil, asStatus(err)
	}
	return &masterpb.CreateTableResponse{}, nil
}

// DeleteTable implements masterpb.MasterServer.
func (a AdminServer) DeleteTable(ctx context.Context, req *masterpb.DeleteTableRequest) (*masterpb.DeleteTableResponse, error) {
	if err := a.M.DeleteTable(ctx, req.Table); err != nil {
		return nil, asStatus(err)
	}
	return &masterpb.DeleteTableResponse{}, nil
}

// UpdateSchema implements masterpb.MasterServer.
func (a AdminServer) UpdateSchema(ctx context.Context, req *masterpb.UpdateSchemaRequest) (*masterpb.UpdateSchemaResponse, error) {
	var schema model.Schema
	if err := json.Unmarshal(req.Schema, &schema); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "schema of %q: %v", req.Table, err)
	}
	var expected *model.Schema
	if len(req.Expected) > 0 {
		expected = new(model.Schema)
		if err := json.Unmarshal(req.Expected, expected); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "expected schema of %q: %v", req.Table, err)
		}
	}
	if err := a.M.UpdateSchema(ctx, req.Table, expected, schema); err != nil {
		return nil, asStatus(err)
	}
	return &masterpb.UpdateSchemaResponse{}, nil
}

// ListTables implements masterpb.MasterServer.
func (a AdminServer) ListTables(ctx context.Context, _ *masterpb.ListTablesRequest) (*masterpb.ListTablesResponse, error) {
	files, err := a.M.opts.Coord.List(ctx, a.M.opts.Dir+"/schema")
	if err != nil {
		return nil, asStatus(err)
	}
	out := &masterpb.ListTablesResponse{}
	for _, f := range files {
		out.Tables = append(out.Tables, &masterpb.ListTablesResponse_Table{Name: f.Name, Schema: f.Contents})
	}
	return out, nil
}

// asStatus keeps a status error and classifies the rest as transient.
func asStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}

// ReportSplit implements masterpb.MasterServer: the master refreshes its
// view of the reporting server's tablets at once instead of at its next
// scan.
func (a AdminServer) ReportSplit(ctx context.Context, req *masterpb.ReportSplitRequest) (*masterpb.ReportSplitResponse, error) {
	if _, err := a.M.refresh(ctx, req.Server); err != nil {
		return nil, asStatus(err)
	}
	a.M.event(EventSplit, slog.LevelInfo, "server split a tablet", slog.String("server", req.Server), slog.String("table", req.Table), slog.String("split", fmt.Sprintf("%q", req.Split)))
	return &masterpb.ReportSplitResponse{}, nil
}

// SplitReporter returns what a tablet server calls after it recorded a
// split: it finds the active master through masterAddr and reports the
// split. A lost report is harmless; the master's scan finds the split.
// dial are added to the connections (the cluster's secret).
func SplitReporter(masterAddr func(context.Context) (string, error), dial ...grpc.DialOption) func(ctx context.Context, server, table string, lower, upper model.RowRange) error {
	var mu sync.Mutex
	conns := map[string]*grpc.ClientConn{}
	return func(ctx context.Context, server, table string, lower, upper model.RowRange) error {
		addr, err := masterAddr(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		cc := conns[addr]
		if cc == nil {
			if cc, err = grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dial...)...); err != nil {
				mu.Unlock()
				return err
			}
			conns[addr] = cc
		}
		mu.Unlock()
		_, err = masterpb.NewMasterClient(cc).ReportSplit(ctx, &masterpb.ReportSplitRequest{Server: server, Table: table,
			LowerStart: lower.Start, Split: upper.Start, UpperEnd: upper.End})
		return err
	}
}
