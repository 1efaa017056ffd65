// Package querykv connects the SQL layer to a cellar cluster: it adapts
// kv/client (rows, on the tablet servers) and the master's admin RPCs
// (schemas, kept in Chubby) to query.KV, and turns their gRPC statuses
// into kv/model's error classes, which the SQL layer maps to SQLSTATEs.
package querykv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query"
)

// KV is query.KV over a cluster.
type KV struct {
	Client *kvclient.Client
	// MasterAddr finds the active master (its lock file in Chubby).
	MasterAddr func(context.Context) (string, error)
	// Secret is the cluster's shared secret, sent to the master.
	Secret string
	// ACLs, if set, keep the tables' ACLs for GRANT and REVOKE.
	ACLs interface {
		UpdateACL(ctx context.Context, table string, update func(*model.ACL) (*model.ACL, error)) error
	}

	mu   sync.Mutex
	addr string
	conn *grpc.ClientConn
}

var (
	_ query.KV       = (*KV)(nil)
	_ query.ACLStore = (*KV)(nil)
)

// UpdateACL implements query.ACLStore.
func (k *KV) UpdateACL(ctx context.Context, table string, update func(*model.ACL) (*model.ACL, error)) error {
	if k.ACLs == nil {
		return fmt.Errorf("%w: this gateway keeps no ACLs", model.ErrFailedPrecondition)
	}
	if err := k.ACLs.UpdateACL(ctx, table, update); err != nil {
		return fmt.Errorf("%w: update the ACL of %q: %w", model.ErrUnavailable, table, err)
	}
	return nil
}

// Close closes the connection to the master.
func (k *KV) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn != nil {
		return k.conn.Close()
	}
	return nil
}

// master returns a client of the active master; forget drops it after an
// error that may mean the master moved.
func (k *KV) master(ctx context.Context) (masterpb.MasterClient, error) {
	addr, err := k.MasterAddr(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: find the master: %w", model.ErrUnavailable, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn == nil || k.addr != addr {
		if k.conn != nil {
			k.conn.Close()
		}
		opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, kvclient.AuthDialOptions(k.Secret)...)
		cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", model.ErrUnavailable, err)
		}
		k.conn, k.addr = cc, addr
	}
	return masterpb.NewMasterClient(k.conn), nil
}

// classify gives an RPC error its model class, keeping the message.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var class error
	switch st.Code() {
	case codes.NotFound:
		class = model.ErrNotFound
	case codes.InvalidArgument, codes.OutOfRange:
		class = model.ErrInvalidArgument
	case codes.FailedPrecondition:
		class = model.ErrFailedPrecondition
	case codes.AlreadyExists:
		class = model.ErrAlreadyExists
	case codes.ResourceExhausted:
		class = model.ErrResourceExhausted
	case codes.DataLoss:
		class = model.ErrCorruption
	case codes.Aborted:
		class = model.ErrAborted
	case codes.PermissionDenied:
		class = model.ErrPermissionDenied
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	default:
		class = model.ErrUnavailable
	}
	// The server's message usually starts with the class already.
	return fmt.Errorf("%w: %s", class, strings.TrimPrefix(st.Message(), class.Error()+": "))
}

func (k *KV) Tables(ctx context.Context) (map[string]model.Schema, error) {
	m, err := k.master(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := m.ListTables(ctx, &masterpb.ListTablesRequest{})
	if err != nil {
		return nil, classify(err)
	}
	out := make(map[string]model.Schema, len(resp.Tables))
	for _, t := range resp.Tables {
		var s model.Schema
		if err := json.Unmarshal(t.Schema, &s); err != nil {
			return nil, fmt.Errorf("%w: the schema of table %q: %v", model.ErrCorruption, t.Name, err)
		}
		out[t.Name] = s
	}
	return out, nil
}

func (k *KV) CreateTable(ctx context.Context, name string, s model.Schema, splits [][]byte) error {
	m, err := k.master(ctx)
	if err != nil {
		return err
	}
	js, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = m.CreateTable(ctx, &masterpb.CreateTableRequest{Table: name, Schema: js, Splits: splits})
	if err == nil {
		k.Client.ForgetTable(name) // locations of a table of that name dropped before
	}
	return classify(err)
}

func (k *KV) DeleteTable(ctx context.Context, name string) error {
	m, err := k.master(ctx)
	if err != nil {
		return err
	}
	_, err = m.DeleteTable(ctx, &masterpb.DeleteTableRequest{Table: name})
	k.Client.ForgetTable(name)
	return classify(err)
}

func (k *KV) UpdateSchema(ctx context.Context, name string, expected *model.Schema, s model.Schema) error {
	m, err := k.master(ctx)
	if err != nil {
		return err
	}
	req := &masterpb.UpdateSchemaRequest{Table: name}
	if req.Schema, err = json.Marshal(s); err != nil {
		return err
	}
	if expected != nil {
		if req.Expected, err = json.Marshal(*expected); err != nil {
			return err
		}
	}
	_, err = m.UpdateSchema(ctx, req)
	return classify(err)
}

func (k *KV) Apply(ctx context.Context, table string, m *model.RowMutation) error {
	return classify(k.Client.Apply(ctx, table, m))
}

func (k *KV) CompareAndMutate(ctx context.Context, table string, row []byte, expects []model.Expect, ifTrue, ifFalse []model.Mutation) (bool, error) {
	ok, err := k.Client.CompareAndMutate(ctx, table, row, kvclient.Filter{}, expects, ifTrue, ifFalse)
	return ok, classify(err)
}

// filter is a kv/client filter for f.
func filter(f query.ReadFilter) kvclient.Filter {
	return kvclient.Filter{Families: f.Families, TimeRange: f.TimeRange, MaxVersions: f.MaxVersions, Conditions: f.Conditions, WantStats: f.Stats != nil,
		ReadableOnly: f.ReadableOnly, Require: f.Require}
}

func addStats(dst *query.ReadStats, s kvclient.ReadStats) {
	if dst != nil {
		dst.Add(query.ReadStats(s))
	}
}

func (k *KV) ReadRow(ctx context.Context, table string, row []byte, f query.ReadFilter) (model.Row, bool, error) {
	r, found, st, err := k.Client.ReadRowStats(ctx, table, row, filter(f))
	addStats(f.Stats, st)
	return r, found, classify(err)
}

func (k *KV) Scan(ctx context.Context, table string, rng model.RowRange, f query.ReadFilter, limit int64) query.RowIterator {
	return &scanner{Scanner: k.Client.Scan(ctx, table, rng, filter(f), limit), stats: f.Stats}
}

func (k *KV) ScanReversed(ctx context.Context, table string, rng model.RowRange, f query.ReadFilter, limit int64) query.RowIterator {
	return &scanner{Scanner: k.Client.ScanReversed(ctx, table, rng, filter(f), limit), stats: f.Stats}
}

// scanner adds its statistics to the filter's once it ends.
type scanner struct {
	*kvclient.Scanner
	stats *query.ReadStats
	ended bool
}

func (s *scanner) Next() bool {
	if s.Scanner.Next() {
		return true
	}
	if !s.ended {
		s.ended = true
		addStats(s.stats, s.Scanner.Stats())
	}
	return false
}

func (s *scanner) Err() error { return classify(s.Scanner.Err()) }

// Close ends a scan its reader stopped early (a LIMIT), adding the
// statistics of what was read so far.
func (s *scanner) Close() {
	if !s.ended {
		s.ended = true
		addStats(s.stats, s.Scanner.Stats())
	}
}

func (k *KV) Aggregate(ctx context.Context, table string, ranges []model.RowRange, f query.ReadFilter, spec query.AggregateSpec) ([]query.AggGroup, error) {
	col := func(c query.AggColumn) kvclient.ColumnRef {
		return kvclient.ColumnRef{Family: c.Family, Qualifier: c.Qualifier, Type: c.Type}
	}
	var cs kvclient.AggregateSpec
	for _, g := range spec.GroupBy {
		cs.GroupBy = append(cs.GroupBy, kvclient.GroupKey{RowKey: g.RowKey, Column: col(g)})
	}
	for _, a := range spec.Aggs {
		cs.Aggs = append(cs.Aggs, kvclient.AggSpec{Func: kvclient.AggFunc(a.Func), Column: col(a.Column)})
	}
	var st kvclient.ReadStats
	if f.Stats != nil {
		cs.Stats = &st
	}
	groups, err := k.Client.Aggregate(ctx, table, ranges, filter(f), cs)
	addStats(f.Stats, st)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]query.AggGroup, len(groups))
	for i, g := range groups {
		out[i].Key = g.Key
		for _, v := range g.Values {
			out[i].Values = append(out[i].Values, query.AggValue{Count: v.Count, Value: v.Value})
		}
	}
	return out, nil
}

func (k *KV) Tablets(ctx context.Context, table string, rng model.RowRange) ([]query.Tablet, error) {
	ts, err := k.Client.Tablets(ctx, table, rng)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]query.Tablet, len(ts))
	for i, t := range ts {
		out[i] = query.Tablet{Start: t.Start, End: t.End, Server: t.Addr}
	}
	return out, nil
}
