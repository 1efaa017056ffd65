package master

import (
	"context"
	"encoding/json"
	"errors"

	"google.golang.org/grpc/codes"
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
