package bigtableapi

import (
	"context"
	"errors"
	"fmt"

	adminpb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"google.golang.org/grpc"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
)

// Rows is what the data API needs of kv/client; *client.Client has it.
// Its errors are gRPC statuses or kv/model's classes, it does the
// data path's retries, and it is safe for concurrent use (a ReadRows of
// many keys reads them in parallel).
type Rows interface {
	Apply(ctx context.Context, table string, m *model.RowMutation) error
	ApplyBulk(ctx context.Context, table string, ms []*model.RowMutation) []error
	ReadRowStats(ctx context.Context, table string, row []byte, f client.Filter) (model.Row, bool, client.ReadStats, error)
	Scan(ctx context.Context, table string, rng model.RowRange, f client.Filter, limit int64) *client.Scanner
	ScanReversed(ctx context.Context, table string, rng model.RowRange, f client.Filter, limit int64) *client.Scanner
	CheckAndMutate(ctx context.Context, table string, row []byte, predicate client.Filter, ifTrue, ifFalse []model.Mutation) (bool, error)
	ReadModifyWrite(ctx context.Context, table string, row []byte, rules []client.ReadModifyWriteRule) ([]model.Cell, error)
	// SampleRowKeys returns one sample per tablet in key order, the last
	// with an empty key (the table's end), with cumulative offsets.
	SampleRowKeys(ctx context.Context, table string) ([]client.SampleRowKey, error)
}

// Admin is what the table admin API needs: the cluster's table schemas,
// which the master keeps. ops passes querykv.KV, the SQL layer's view of
// the same tables, so both front doors see one set of tables. Errors wrap
// kv/model's classes (a second create of a table is
// ErrFailedPrecondition).
type Admin interface {
	// Tables returns every table's schema.
	Tables(ctx context.Context) (map[string]model.Schema, error)
	CreateTable(ctx context.Context, name string, s model.Schema, splits [][]byte) error
	DeleteTable(ctx context.Context, name string) error
	// UpdateSchema replaces a table's schema.
	// UpdateSchema replaces a table's schema if it is still expected
	// (nil: in any case); model.ErrAborted if it is not.
	UpdateSchema(ctx context.Context, name string, expected *model.Schema, s model.Schema) error
}

// MaxRequestBytes is the largest request message the gateway should
// accept (grpc.MaxRecvMsgSize): the clients send up to 256 MiB, which a
// row mutation of cellar's largest values needs.
const MaxRequestBytes = 256 << 20

// Options configure a Server.
type Options struct {
	// Rows reads and writes rows (required).
	Rows Rows
	// Admin reads and changes schemas (required).
	Admin Admin
	// MaxResponseBytes is about how many bytes of cells a ReadRows
	// response gathers before it is sent (default 1 MiB). A response
	// holds whole rows, so a large row makes a larger one.
	MaxResponseBytes int
	// MaxChunkValue is the largest value one CellChunk carries (default
	// 1 MiB); longer values are split over several chunks.
	MaxChunkValue int
	// DropBatch is how many rows DropRowRange deletes per ApplyBulk
	// (default 500).
	DropBatch int
	// Tokens, if set, name the principals of the tokens calls carry
	// (auth.go); nil: calls with a token are Unauthenticated.
	Tokens Tokens
	// AllowAnonymous accepts calls without a token from anywhere, not
	// only from loopback.
	AllowAnonymous bool
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.Rows == nil {
		errs = append(errs, errors.New("bigtableapi: Rows is required"))
	}
	if o.Admin == nil {
		errs = append(errs, errors.New("bigtableapi: Admin is required"))
	}
	if o.MaxResponseBytes < 0 || o.MaxChunkValue < 0 || o.DropBatch < 0 {
		errs = append(errs, fmt.Errorf("bigtableapi: negative limit (MaxResponseBytes %d, MaxChunkValue %d, DropBatch %d)",
			o.MaxResponseBytes, o.MaxChunkValue, o.DropBatch))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = 1 << 20
	}
	if o.MaxChunkValue == 0 {
		o.MaxChunkValue = 1 << 20
	}
	if o.DropBatch == 0 {
		o.DropBatch = 500
	}
	return o
}

// Server serves the data and table admin services. It holds no state of
// its own and is safe for concurrent use.
type Server struct {
	data  *dataService
	admin *adminService
}

// New returns a server. It does no I/O.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	return &Server{data: &dataService{opts: opts}, admin: &adminService{opts: opts}}, nil
}

// Register adds both services to a gRPC server. Give that server
// grpc.MaxRecvMsgSize(MaxRequestBytes).
func (s *Server) Register(r grpc.ServiceRegistrar) {
	o := s.data.opts
	r.RegisterService(o.authenticated(&btpb.Bigtable_ServiceDesc), s.data)
	r.RegisterService(o.authenticated(&adminpb.BigtableTableAdmin_ServiceDesc), s.admin)
}
