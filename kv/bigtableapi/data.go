package bigtableapi

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
)

// dataService implements google.bigtable.v2.Bigtable.
type dataService struct {
	btpb.UnimplementedBigtableServer
	opts Options
}

// ReadRows streams the rows of a row set; see the package comment.
func (d *dataService) ReadRows(req *btpb.ReadRowsRequest, stream btpb.Bigtable_ReadRowsServer) error {
	start := time.Now()
	ctx := stream.Context()
	name, err := dataTable(req.TableName, req.AuthorizedViewName, req.MaterializedViewName)
	if err != nil {
		return err
	}
	if req.RowsLimit < 0 {
		return invalidf("rows_limit %d must not be negative", req.RowsLimit)
	}
	spans, err := rowSpans(req.Rows)
	if err != nil {
		return err
	}
	rf, err := translateFilter(req.Filter)
	if err != nil {
		return err
	}
	wantStats := req.RequestStatsView == btpb.ReadRowsRequest_REQUEST_STATS_FULL
	f := client.Filter{RowFilter: rf, WantStats: wantStats}
	w := &rowWriter{stream: stream, maxBytes: d.opts.MaxResponseBytes, maxValue: d.opts.MaxChunkValue}
	var seen client.ReadStats
	err = d.readSpans(ctx, name.table, spans, req.Reversed, req.RowsLimit, f, w, &seen)
	// Rows gathered before an error go out first: a client resumes after
	// the last complete row it got.
	if ferr := w.flush(); ferr != nil {
		return ferr
	}
	if err != nil {
		return err
	}
	if !wantStats {
		return nil
	}
	return stream.Send(&btpb.ReadRowsResponse{RequestStats: &btpb.RequestStats{StatsView: &btpb.RequestStats_FullReadStatsView{
		FullReadStatsView: &btpb.FullReadStatsView{
			ReadIterationStats: &btpb.ReadIterationStats{RowsSeenCount: seen.Rows, RowsReturnedCount: w.rows,
				CellsSeenCount: seen.Cells, CellsReturnedCount: w.cells},
			RequestLatencyStats: &btpb.RequestLatencyStats{FrontendServerLatency: durationpb.New(time.Since(start))},
		}}}})
}

// readSpans reads the spans in order (from the last when reversed), at
// most limit rows in all (0: no limit), into w, adding the servers' read
// statistics to seen.
func (d *dataService) readSpans(ctx context.Context, table string, spans []span, reversed bool, limit int64, f client.Filter, w *rowWriter, seen *client.ReadStats) error {
	if reversed {
		spans = slices.Clone(spans)
		slices.Reverse(spans)
	}
	for i := 0; i < len(spans); i++ {
		if limit > 0 && w.rows >= limit {
			return nil
		}
		s := spans[i]
		if s.point {
			// A run of keys is read pointReadWindow at a time, in
			// parallel, and sent in order.
			n := 1
			for i+n < len(spans) && n < pointReadWindow && spans[i+n].point {
				n++
			}
			if err := d.readPoints(ctx, table, spans[i:i+n], limit, f, w, seen); err != nil {
				return err
			}
			i += n - 1
			continue
		}
		left := int64(0)
		if limit > 0 {
			left = limit - w.rows
		}
		var sc *client.Scanner
		if reversed {
			sc = d.opts.Rows.ScanReversed(ctx, table, s.rowRange(), f, left)
		} else {
			sc = d.opts.Rows.Scan(ctx, table, s.rowRange(), f, left)
		}
		for sc.Next() {
			if err := w.add(sc.Row()); err != nil {
				return err
			}
		}
		seen.Add(sc.Stats())
		if err := sc.Err(); err != nil {
			return toStatus(err)
		}
	}
	return nil
}

// pointReadWindow is how many point reads of one ReadRows run at once: a
// request naming many keys costs about one round trip per window, not per
// key.
const pointReadWindow = 16

// readPoints reads the rows of point spans in parallel and adds those
// found to w in the spans' order, until w holds limit rows (0: no limit).
func (d *dataService) readPoints(ctx context.Context, table string, spans []span, limit int64, f client.Filter, w *rowWriter, seen *client.ReadStats) error {
	type result struct {
		row   model.Row
		found bool
		st    client.ReadStats
		err   error
	}
	res := make([]result, len(spans))
	if len(spans) == 1 {
		r := &res[0]
		r.row, r.found, r.st, r.err = d.opts.Rows.ReadRowStats(ctx, table, spans[0].start, f)
	} else {
		var wg sync.WaitGroup
		for i := range spans {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &res[i]
				r.row, r.found, r.st, r.err = d.opts.Rows.ReadRowStats(ctx, table, spans[i].start, f)
			}()
		}
		wg.Wait()
	}
	for _, r := range res {
		seen.Add(r.st)
		if r.err != nil {
			return toStatus(r.err)
		}
		if r.found && (limit == 0 || w.rows < limit) {
			if err := w.add(r.row); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowWriter gathers rows as chunks into responses of whole rows.
type rowWriter struct {
	stream   btpb.Bigtable_ReadRowsServer
	maxBytes int
	maxValue int

	chunks      []*btpb.ReadRowsResponse_CellChunk
	size        int
	rows, cells int64
}

func (w *rowWriter) add(row model.Row) error {
	if len(row.Cells) == 0 {
		return nil
	}
	var n int
	w.chunks, n = appendRowChunks(w.chunks, row, w.maxValue)
	w.size += n
	w.rows++
	w.cells += int64(len(row.Cells))
	if w.size >= w.maxBytes {
		return w.flush()
	}
	return nil
}

func (w *rowWriter) flush() error {
	if len(w.chunks) == 0 {
		return nil
	}
	// A sent message must not change afterwards, so the next response
	// gets a new slice.
	resp := &btpb.ReadRowsResponse{Chunks: w.chunks}
	w.chunks, w.size = nil, 0
	return w.stream.Send(resp)
}

// MutateRow applies one row's mutations atomically.
func (d *dataService) MutateRow(ctx context.Context, req *btpb.MutateRowRequest) (*btpb.MutateRowResponse, error) {
	name, err := dataTable(req.TableName, req.AuthorizedViewName, "")
	if err != nil {
		return nil, err
	}
	if err := checkRowKey(req.RowKey); err != nil {
		return nil, err
	}
	muts, err := translateMutations(req.Mutations)
	if err != nil {
		return nil, err
	}
	if err := d.opts.Rows.Apply(ctx, name.table, &model.RowMutation{Row: req.RowKey, Mutations: muts}); err != nil {
		return nil, toStatus(err)
	}
	return &btpb.MutateRowResponse{}, nil
}

// MutateRows applies each entry atomically and answers one status per
// entry. An entry that is malformed fails alone, without a round trip.
func (d *dataService) MutateRows(req *btpb.MutateRowsRequest, stream btpb.Bigtable_MutateRowsServer) error {
	name, err := dataTable(req.TableName, req.AuthorizedViewName, "")
	if err != nil {
		return err
	}
	if len(req.Entries) == 0 {
		return invalidf("no entries provided")
	}
	total := 0
	for _, e := range req.Entries {
		total += len(e.Mutations)
	}
	if total > MaxMutations {
		return invalidf("too many mutations: %d over %d entries, the limit is %d", total, len(req.Entries), MaxMutations)
	}
	errs := make([]error, len(req.Entries))
	var valid []*model.RowMutation
	var index []int // of valid in req.Entries
	for i, e := range req.Entries {
		if errs[i] = checkRowKey(e.RowKey); errs[i] != nil {
			continue
		}
		muts, err := translateMutations(e.Mutations)
		if err != nil {
			errs[i] = err
			continue
		}
		valid = append(valid, &model.RowMutation{Row: e.RowKey, Mutations: muts})
		index = append(index, i)
	}
	if len(valid) > 0 {
		notFound := false
		for k, err := range d.opts.Rows.ApplyBulk(stream.Context(), name.table, valid) {
			errs[index[k]] = toStatus(err)
			notFound = notFound || status.Code(errs[index[k]]) == codes.NotFound
		}
		// The service fails the whole call for a missing table (a
		// missing family fails only its entries); the schemas say which
		// it was, asked only on this error path.
		if notFound {
			all, err := d.opts.Admin.Tables(stream.Context())
			if err != nil {
				return toStatus(err)
			}
			if _, ok := all[name.table]; !ok {
				return status.Errorf(codes.NotFound, "table %q not found", name.table)
			}
		}
	}
	resp := &btpb.MutateRowsResponse{Entries: make([]*btpb.MutateRowsResponse_Entry, len(errs))}
	for i, err := range errs {
		// Every entry gets an explicit status, OK included.
		st := status.New(codes.OK, "")
		if err != nil {
			st = status.Convert(err)
		}
		resp.Entries[i] = &btpb.MutateRowsResponse_Entry{Index: int64(i), Status: st.Proto()}
	}
	return stream.Send(resp)
}

// CheckAndMutateRow applies the true or the false mutations atomically,
// as the predicate filter leaves any cell of the row or not.
func (d *dataService) CheckAndMutateRow(ctx context.Context, req *btpb.CheckAndMutateRowRequest) (*btpb.CheckAndMutateRowResponse, error) {
	name, err := dataTable(req.TableName, req.AuthorizedViewName, "")
	if err != nil {
		return nil, err
	}
	if err := checkRowKey(req.RowKey); err != nil {
		return nil, err
	}
	if n := len(req.TrueMutations) + len(req.FalseMutations); n > MaxMutations {
		return nil, invalidf("too many mutations: %d, the limit is %d", n, MaxMutations)
	}
	pred, err := translateFilter(req.PredicateFilter)
	if err != nil {
		return nil, err
	}
	ifTrue, err := translateBranch(req.TrueMutations)
	if err != nil {
		return nil, err
	}
	ifFalse, err := translateBranch(req.FalseMutations)
	if err != nil {
		return nil, err
	}
	// No predicate: the row matches if it has any cell, which is what an
	// empty filter tests.
	matched, err := d.opts.Rows.CheckAndMutate(ctx, name.table, req.RowKey, client.Filter{RowFilter: pred}, ifTrue, ifFalse)
	if err != nil {
		return nil, toStatus(err)
	}
	return &btpb.CheckAndMutateRowResponse{PredicateMatched: matched}, nil
}

// ReadModifyWriteRow appends to or increments cells atomically and
// answers the new cells.
func (d *dataService) ReadModifyWriteRow(ctx context.Context, req *btpb.ReadModifyWriteRowRequest) (*btpb.ReadModifyWriteRowResponse, error) {
	name, err := dataTable(req.TableName, req.AuthorizedViewName, "")
	if err != nil {
		return nil, err
	}
	if err := checkRowKey(req.RowKey); err != nil {
		return nil, err
	}
	if len(req.Rules) == 0 {
		return nil, invalidf("no rules provided")
	}
	if len(req.Rules) > MaxMutations {
		return nil, invalidf("too many rules: %d, the limit is %d", len(req.Rules), MaxMutations)
	}
	rules := make([]client.ReadModifyWriteRule, len(req.Rules))
	for i, r := range req.Rules {
		rules[i] = client.ReadModifyWriteRule{Family: r.FamilyName, Qualifier: r.ColumnQualifier}
		switch v := r.Rule.(type) {
		case *btpb.ReadModifyWriteRule_AppendValue:
			// Non-nil even when empty: a nil Append means increment.
			rules[i].Append = append([]byte{}, v.AppendValue...)
		case *btpb.ReadModifyWriteRule_IncrementAmount:
			rules[i].Increment = v.IncrementAmount
		default:
			return nil, invalidf("rule %d sets neither append_value nor increment_amount", i)
		}
	}
	cells, err := d.opts.Rows.ReadModifyWrite(ctx, name.table, req.RowKey, rules)
	if err != nil {
		return nil, toStatus(err)
	}
	return &btpb.ReadModifyWriteRowResponse{Row: rowProto(req.RowKey, cells)}, nil
}

// rowProto groups cells into a Row of families and columns, keeping the
// order in which each family and column first appears.
func rowProto(key []byte, cells []model.Cell) *btpb.Row {
	out := &btpb.Row{Key: key}
	fams := map[string]*btpb.Family{}
	cols := map[string]*btpb.Column{} // by family and qualifier
	for _, c := range cells {
		f := fams[c.Family]
		if f == nil {
			f = &btpb.Family{Name: c.Family}
			fams[c.Family] = f
			out.Families = append(out.Families, f)
		}
		id := c.Family + ":" + string(c.Qualifier)
		col := cols[id]
		if col == nil {
			col = &btpb.Column{Qualifier: c.Qualifier}
			cols[id] = col
			f.Columns = append(f.Columns, col)
		}
		col.Cells = append(col.Cells, &btpb.Cell{TimestampMicros: c.Timestamp, Value: c.Value})
	}
	// data.proto: a family's columns in increasing qualifier order, a
	// column's cells newest first (the cells may come in rule order).
	slices.SortFunc(out.Families, func(a, b *btpb.Family) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range out.Families {
		slices.SortFunc(f.Columns, func(a, b *btpb.Column) int { return bytes.Compare(a.Qualifier, b.Qualifier) })
		for _, col := range f.Columns {
			slices.SortStableFunc(col.Cells, func(a, b *btpb.Cell) int { return cmp.Compare(b.TimestampMicros, a.TimestampMicros) })
		}
	}
	return out
}

// PingAndWarm answers once the instance name is well formed: the gateway
// keeps no per-instance state to warm.
func (d *dataService) PingAndWarm(ctx context.Context, req *btpb.PingAndWarmRequest) (*btpb.PingAndWarmResponse, error) {
	if _, err := parseInstance(req.Name); err != nil {
		return nil, err
	}
	return &btpb.PingAndWarmResponse{}, nil
}

func (d *dataService) GenerateInitialChangeStreamPartitions(*btpb.GenerateInitialChangeStreamPartitionsRequest, btpb.Bigtable_GenerateInitialChangeStreamPartitionsServer) error {
	return status.Error(codes.Unimplemented, "change streams are not supported by cellar")
}

func (d *dataService) ReadChangeStream(*btpb.ReadChangeStreamRequest, btpb.Bigtable_ReadChangeStreamServer) error {
	return status.Error(codes.Unimplemented, "change streams are not supported by cellar")
}

func (d *dataService) PrepareQuery(context.Context, *btpb.PrepareQueryRequest) (*btpb.PrepareQueryResponse, error) {
	return nil, status.Error(codes.Unimplemented, "Bigtable SQL (PrepareQuery) is not supported by cellar; use its PostgreSQL gateway")
}

func (d *dataService) ExecuteQuery(*btpb.ExecuteQueryRequest, btpb.Bigtable_ExecuteQueryServer) error {
	return status.Error(codes.Unimplemented, "Bigtable SQL (ExecuteQuery) is not supported by cellar; use its PostgreSQL gateway")
}

func (d *dataService) GetClientConfiguration(context.Context, *btpb.GetClientConfigurationRequest) (*btpb.ClientConfiguration, error) {
	return nil, status.Error(codes.Unimplemented, "the session protocol (GetClientConfiguration) is not supported by cellar")
}

func (d *dataService) OpenTable(btpb.Bigtable_OpenTableServer) error {
	return status.Error(codes.Unimplemented, "the session protocol (OpenTable) is not supported by cellar")
}

func (d *dataService) OpenAuthorizedView(btpb.Bigtable_OpenAuthorizedViewServer) error {
	return status.Error(codes.Unimplemented, "the session protocol (OpenAuthorizedView) is not supported by cellar")
}

func (d *dataService) OpenMaterializedView(btpb.Bigtable_OpenMaterializedViewServer) error {
	return status.Error(codes.Unimplemented, "the session protocol (OpenMaterializedView) is not supported by cellar")
}
