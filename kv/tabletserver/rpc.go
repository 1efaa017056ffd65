package tabletserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/commitlog"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// scanBatchBytes bounds one ScanResponse message.
const scanBatchBytes = 1 << 20

// A scan whose filter drops rows stops early, with resume_after, after
// dropping scanMaxDropped rows or after scanBudget, so that a selective
// filter over a large tablet cannot make one call run unbounded.
var (
	scanMaxDropped = 100_000
	scanBudget     = 2 * time.Second
)

func notServing(format string, args ...any) error {
	return status.Error(codes.FailedPrecondition, "not serving: "+fmt.Sprintf(format, args...))
}

// toStatus classifies a store error as a gRPC status.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, model.ErrNotServing):
		return status.Error(codes.FailedPrecondition, "not serving: "+err.Error())
	}
	return status.Error(client.Code(err), err.Error())
}

func invalid(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, fmt.Sprintf(format, args...))
}

func checkRow(table string, row []byte) error {
	if table == "" {
		return invalid("no table name")
	}
	if len(row) > model.MaxRowKeyLen {
		return invalid("row key of %d bytes exceeds the limit of %d", len(row), model.MaxRowKeyLen)
	}
	return nil
}

// filter is a compiled pb.Filter.
type filter struct {
	read      tablet.ReadOptions
	qualifier *regexp.Regexp
	value     *regexp.Regexp
	conds     *model.Conditions // nil: none
	// asked, if set, is the families the filter asked for, when the read
	// takes more (for the conditions): their cells are dropped after.
	asked map[string]bool
	// wantStats asks for the read's statistics in the response.
	wantStats bool
	// row is the request's Bigtable row filter, compiled once (nil:
	// none); it runs on the cells that the steps above pass, through an
	// evaluator per request (evaluator).
	row *model.CompiledRowFilter
	// blocked: the row filter outputs nothing for any row, so the request
	// reads nothing.
	blocked bool
	// readableOnly and require: see pb.Filter (acl.go).
	readableOnly bool
	require      []string
}

// withStats returns the read options of a read that counts into st if the
// filter wants statistics, else f's as they are.
func (f filter) withStats(st *tablet.ReadStats) tablet.ReadOptions {
	opts := f.read
	if f.wantStats {
		opts.Stats = st
	}
	return opts
}

// statsProto is the response's stats: st if the filter wants them, else
// nil.
func (f filter) statsProto(st *tablet.ReadStats) *pb.ReadStats {
	if !f.wantStats {
		return nil
	}
	return &pb.ReadStats{Rows: st.Rows, Cells: st.Cells, Blocks: st.Blocks, CacheHits: st.CacheHits,
		BloomChecks: st.BloomChecks, BloomUseful: st.BloomUseful}
}

func compileFilter(f *pb.Filter) (filter, error) {
	var out filter
	if f == nil {
		return out, nil
	}
	if len(f.Families) > 0 {
		out.read.Families = f.Families
	}
	if tr := f.TimeRange; tr != nil {
		out.read.TimeRange = model.TimeRange{Start: tr.Start, End: tr.End}
		if err := out.read.TimeRange.Validate(); err != nil {
			return out, invalid("filter: %v", err)
		}
	}
	if f.MaxVersions < 0 {
		return out, invalid("filter: max_versions %d is negative", f.MaxVersions)
	}
	out.read.MaxVersions = int(f.MaxVersions)
	out.wantStats = f.WantStats
	out.readableOnly, out.require = f.ReadableOnly, f.RequireFamilies
	var err error
	if f.QualifierRegex != "" {
		if out.qualifier, err = regexp.Compile(`^(?:` + f.QualifierRegex + `)$`); err != nil {
			return out, invalid("filter: qualifier_regex: %v", err)
		}
	}
	if f.ValueRegex != "" {
		if out.value, err = regexp.Compile(`^(?:` + f.ValueRegex + `)$`); err != nil {
			return out, invalid("filter: value_regex: %v", err)
		}
	}
	if len(f.Conditions) > 0 {
		cs := make([]model.Condition, len(f.Conditions))
		for i, c := range f.Conditions {
			if c.Type < 0 || c.Type > 255 {
				return out, invalid("filter: condition %d: unknown type %d", i, c.Type)
			}
			if c.Op < 0 || c.Op > 255 {
				return out, invalid("filter: condition %d: unknown op %d", i, c.Op)
			}
			cs[i] = model.Condition{Family: c.Family, Qualifier: c.Qualifier, Type: model.ValueType(c.Type), Op: model.CondOp(c.Op), Operand: c.Operand}
		}
		if out.conds, err = model.CompileConditions(cs); err != nil {
			return out, invalid("filter: %v", err)
		}
		out.readAlso(out.conds.Families())
	}
	if f.RowFilter != nil {
		tree, err := rowFilterFromProto(f.RowFilter)
		if err == nil {
			out.row, err = model.CompileRowFilter(&tree)
		}
		if err != nil {
			return out, toStatus(fmt.Errorf("filter: %w", err))
		}
		out.blocked = out.row.BlocksAll()
	}
	return out, nil
}

// narrow lets the row filter narrow the families read to those whose
// cells can change its output (model.CompiledRowFilter.Families), given
// the table's families (those of the tablet of row here), when the
// request names no families itself. The conditions' families are still
// read, for the conditions only. If no family can produce output, the
// request reads nothing. A table without a tablet of row here is left as
// it is: the read fails or finds nothing by itself.
func (s *Server) narrow(f *filter, table string, row []byte) {
	if f.row == nil || f.blocked || f.read.Families != nil {
		return // no schema lookup on the common path
	}
	t, err := s.opts.Store.Locate(table, row)
	if err != nil {
		return
	}
	schema := t.Schema()
	families := make([]string, len(schema.Families))
	for i, fam := range schema.Families {
		families[i] = fam.Name
	}
	need := f.row.Families(families)
	switch {
	case len(need) == 0:
		f.blocked = true
	case len(need) < len(families):
		f.read.Families = need
		f.readAlso(f.conds.Families())
	}
}

// evaluator returns an evaluator of the row filter for one request (an
// evaluator keeps scratch buffers and is not safe for concurrent use), or
// nil if there is no row filter. Row samples draw from rnd.
func (f *filter) evaluator(rnd func() float64) *model.RowFilterEvaluator {
	if f.row == nil {
		return nil
	}
	return f.row.NewEvaluator(rnd)
}

// readAlso makes the read take families too, if it names its families,
// and drop their cells after unless the filter asked for them.
func (f *filter) readAlso(families []string) {
	if f.read.Families == nil {
		return // every family is read
	}
	for _, fam := range families {
		if slices.Contains(f.read.Families, fam) {
			continue
		}
		if f.asked == nil {
			f.asked = make(map[string]bool, len(f.read.Families))
			for _, a := range f.read.Families {
				f.asked[a] = true
			}
		}
		f.read.Families = append(slices.Clip(f.read.Families), fam)
	}
}

// dropsRows reports whether the filter may drop rows the store reads, so
// that the store cannot count rows toward a limit.
func (f filter) dropsRows() bool {
	return f.qualifier != nil || f.value != nil || f.conds != nil || f.asked != nil || f.row != nil
}

// cells returns the cells of a row the filter passes: none if the
// conditions fail, else the cells of the families asked for that pass the
// regular expressions. A row with no cells left is not returned.
func (f filter) cells(in []model.Cell) []model.Cell {
	if !f.conds.Holds(in) {
		return nil
	}
	if f.qualifier == nil && f.value == nil && f.asked == nil {
		return in
	}
	out := in[:0:0]
	for _, c := range in {
		if (f.asked == nil || f.asked[c.Family]) && (f.qualifier == nil || f.qualifier.Match(c.Qualifier)) && (f.value == nil || f.value.Match(c.Value)) {
			out = append(out, c)
		}
	}
	return out
}

// matches reports whether any cell of the row passes the filter, the row
// filter included (ev, nil if there is none): CheckAndMutate's predicate.
func (f filter) matches(ev *model.RowFilterEvaluator, key []byte, in []model.Cell) bool {
	if f.blocked {
		return false
	}
	cells := f.cells(in)
	if len(cells) == 0 {
		return false
	}
	return ev == nil || len(ev.Eval(key, cells)) > 0
}

// passed returns the row as the filter passes it (no cells if none
// passes): the cells of the steps above, then what the row filter (ev,
// nil if there is none) outputs, with labels and stripped values. The
// evaluator lends its result until its next Eval, so its cells' headers
// are copied (their bytes belong to the read, and the labels to the
// compiled filter, which outlive the answer).
func (f filter) passed(ev *model.RowFilterEvaluator, row model.Row) model.Row {
	out := model.Row{Key: row.Key, Cells: f.cells(row.Cells)}
	if ev == nil || len(out.Cells) == 0 {
		return out
	}
	lc := ev.Eval(row.Key, out.Cells)
	out.Cells = make([]model.Cell, len(lc))
	for i := range lc {
		out.Cells[i] = lc[i].Cell
		if lc[i].Labels != nil {
			if out.Labels == nil {
				out.Labels = make([][]string, len(lc))
			}
			out.Labels[i] = lc[i].Labels
		}
	}
	return out
}

func rowToProto(r model.Row, cells []model.Cell) *pb.Row {
	out := &pb.Row{Key: r.Key, Cells: make([]*pb.Cell, len(cells))}
	for i, c := range cells {
		out.Cells[i] = &pb.Cell{Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value}
		if r.Labels != nil {
			out.Cells[i].Labels = r.Labels[i]
		}
	}
	return out
}

func mutationsFromProto(ms []*pb.Mutation) ([]model.Mutation, error) {
	if len(ms) == 0 {
		return nil, invalid("no mutations")
	}
	out := make([]model.Mutation, 0, len(ms))
	for i, m := range ms {
		switch v := m.GetMutation().(type) {
		case *pb.Mutation_SetCell_:
			out = append(out, model.SetCell(v.SetCell.Family, v.SetCell.Qualifier, v.SetCell.Timestamp, v.SetCell.Value))
		case *pb.Mutation_DeleteColumn_:
			var tr model.TimeRange
			if r := v.DeleteColumn.TimeRange; r != nil {
				tr = model.TimeRange{Start: r.Start, End: r.End}
			}
			out = append(out, model.DeleteColumn(v.DeleteColumn.Family, v.DeleteColumn.Qualifier, tr))
		case *pb.Mutation_DeleteFamily_:
			out = append(out, model.DeleteFamily(v.DeleteFamily.Family))
		case *pb.Mutation_DeleteRow_:
			out = append(out, model.DeleteRow())
		default:
			return nil, invalid("mutation %d is empty", i)
		}
	}
	return out, nil
}

// ReadRow reads one row.
func (s *Server) ReadRow(ctx context.Context, req *pb.ReadRowRequest) (*pb.ReadRowResponse, error) {
	row, found, st, err := s.readRow(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &pb.ReadRowResponse{Stats: st}
	if found {
		out.Found, out.Row = true, rowToProto(row, row.Cells)
	}
	return out, nil
}

// ReadRowLocal is ReadRow for a caller in the same process (kv/client's
// direct calls): it hands over the row itself rather than a protobuf copy
// of it, which the caller would only copy back.
func (s *Server) ReadRowLocal(ctx context.Context, req *pb.ReadRowRequest) (model.Row, bool, *pb.ReadStats, error) {
	return s.readRow(ctx, req)
}

// readRow reads the row through the request's filter (see passed).
func (s *Server) readRow(ctx context.Context, req *pb.ReadRowRequest) (model.Row, bool, *pb.ReadStats, error) {
	if err := s.serving(); err != nil {
		return model.Row{}, false, nil, err
	}
	if err := checkRow(req.Table, req.Row); err != nil {
		return model.Row{}, false, nil, err
	}
	f, err := compileFilter(req.Filter)
	if err != nil {
		return model.Row{}, false, nil, err
	}
	s.narrow(&f, req.Table, req.Row)
	if err := s.authorizeRead(ctx, req.Table, req.Row, &f); err != nil {
		return model.Row{}, false, nil, err
	}
	// Statistics only when asked for: the read keeps a pointer to them.
	var st *tablet.ReadStats
	if f.wantStats {
		st = new(tablet.ReadStats)
	}
	if f.blocked {
		return model.Row{}, false, f.statsProto(st), nil
	}
	row, found, err := s.opts.Store.ReadRow(ctx, req.Table, req.Row, f.withStats(st))
	if err != nil {
		return model.Row{}, false, nil, toStatus(err)
	}
	if err := s.serving(); err != nil {
		return model.Row{}, false, nil, err // the lock went during the read: its answer may be stale
	}
	if !found {
		return model.Row{}, false, f.statsProto(st), nil
	}
	row = f.passed(f.evaluator(s.opts.Rand), row)
	if len(row.Cells) == 0 {
		return model.Row{}, false, f.statsProto(st), nil
	}
	return row, true, f.statsProto(st), nil
}

// Scan streams the rows of the ranges, which must be in order and must
// not overlap. If the filter wants statistics, the call's come on its
// last message, which it then always sends.
func (s *Server) Scan(req *pb.ScanRequest, stream pb.TabletServer_ScanServer) error {
	return s.scan(stream.Context(), req, &streamSink{stream: stream})
}

// ScanLocal is Scan for a caller in the same process (kv/client's direct
// calls): it runs on the caller's goroutine and hands over the rows
// themselves, where Scan would make protobuf copies in a goroutine of its
// own for the caller to copy back. more and resume are Scan's More and
// ResumeAfter.
func (s *Server) ScanLocal(ctx context.Context, req *pb.ScanRequest) (rows []model.Row, more bool, resume []byte, stats *pb.ReadStats, err error) {
	sink := &localSink{}
	err = s.scan(ctx, req, sink)
	return sink.rows, sink.more, sink.resume, sink.stats, err
}

// scanSink takes a scan's rows: a gRPC stream (Scan), or a slice
// (ScanLocal).
type scanSink interface {
	// add takes a row that passed the filter and returns the bytes it
	// adds to the batch.
	add(r model.Row) int
	// send ends the batch: its rows, then, on the last one, More with
	// ResumeAfter and the statistics.
	send(more bool, resume []byte, stats *pb.ReadStats) error
	// pending reports whether the batch holds rows.
	pending() bool
}

type streamSink struct {
	stream pb.TabletServer_ScanServer
	batch  []*pb.Row
}

func (k *streamSink) add(r model.Row) int {
	k.batch = append(k.batch, rowToProto(r, r.Cells))
	return rowBytes(r)
}

// rowBytes is what a row adds to a scan's batch.
func rowBytes(r model.Row) int {
	size := len(r.Key)
	for _, c := range r.Cells {
		size += len(c.Qualifier) + len(c.Value) + len(c.Family) + 16
	}
	for _, ls := range r.Labels {
		for _, l := range ls {
			size += len(l)
		}
	}
	return size
}

func (k *streamSink) send(more bool, resume []byte, stats *pb.ReadStats) error {
	batch := k.batch
	k.batch = nil
	return k.stream.Send(&pb.ScanResponse{Rows: batch, More: more, ResumeAfter: resume, Stats: stats})
}

func (k *streamSink) pending() bool { return len(k.batch) > 0 }

type localSink struct {
	rows   []model.Row
	n      int // rows of the current batch
	more   bool
	resume []byte
	stats  *pb.ReadStats
}

func (k *localSink) add(r model.Row) int {
	k.rows = append(k.rows, r)
	k.n++
	return rowBytes(r)
}

func (k *localSink) send(more bool, resume []byte, stats *pb.ReadStats) error {
	k.n = 0
	if more {
		k.more, k.resume = true, resume
	}
	if stats != nil {
		k.stats = stats
	}
	return nil
}

func (k *localSink) pending() bool { return k.n > 0 }

// scan runs a Scan request into sink.
func (s *Server) scan(ctx context.Context, req *pb.ScanRequest, sink scanSink) error {
	if err := s.serving(); err != nil {
		return err
	}
	if req.Table == "" {
		return invalid("no table name")
	}
	if req.RowLimit < 0 {
		return invalid("row_limit %d is negative", req.RowLimit)
	}
	f, err := compileFilter(req.Filter)
	if err != nil {
		return err
	}
	ranges := req.Ranges
	if len(ranges) == 0 {
		ranges = []*pb.RowRange{{}}
	}
	if err := checkRanges(ranges); err != nil {
		return err
	}
	s.narrow(&f, req.Table, ranges[0].Start)
	if err := s.authorizeRead(ctx, req.Table, ranges[0].Start, &f); err != nil {
		return err
	}
	if f.blocked {
		ranges = nil // nothing can pass: read nothing
	}
	ev := f.evaluator(s.opts.Rand)
	if req.Reversed {
		ranges = slices.Clone(ranges)
		slices.Reverse(ranges)
	}
	sent := int64(0)
	bounded := f.dropsRows()
	deadline := time.Now().Add(scanBudget)
	read, dropped := 0, 0
	var last []byte // the last row read
	stopped := false
	size := 0
	var st tablet.ReadStats
	flush := func() error {
		if !sink.pending() {
			return nil
		}
		if err := s.serving(); err != nil {
			return err
		}
		size = 0
		return sink.send(false, nil, nil)
	}
	for _, r := range ranges {
		opts := f.withStats(&st)
		opts.Reverse = req.Reversed
		if req.RowLimit > 0 && !f.dropsRows() {
			opts.Limit = int(req.RowLimit - sent)
		}
		sc := s.opts.Store.Scan(ctx, req.Table, model.RowRange{Start: r.Start, End: r.End}, opts)
		for sc.Next() {
			// A server that lost its lock mid-scan stops at once.
			if err := s.serving(); err != nil {
				sc.Close()
				return err
			}
			if bounded && read > 0 && (dropped >= scanMaxDropped || (read%256 == 0 && time.Now().After(deadline))) {
				stopped = true
				break
			}
			row := sc.Row()
			read, last = read+1, row.Key
			r := f.passed(ev, row)
			if len(r.Cells) == 0 {
				dropped++
				continue
			}
			size += sink.add(r)
			sent++
			if size >= scanBatchBytes {
				if err := flush(); err != nil {
					sc.Close()
					return err
				}
			}
			if req.RowLimit > 0 && sent >= req.RowLimit {
				break
			}
		}
		err := sc.Err()
		sc.Close()
		if err != nil {
			return toStatus(err)
		}
		if stopped || (req.RowLimit > 0 && sent >= req.RowLimit) {
			break
		}
	}
	if stopped {
		if err := s.serving(); err != nil {
			return err
		}
		return sink.send(true, bytes.Clone(last), f.statsProto(&st))
	}
	if !f.wantStats {
		return flush()
	}
	if err := s.serving(); err != nil {
		return err
	}
	return sink.send(false, nil, f.statsProto(&st))
}

// MutateRow applies mutations to one row atomically.
func (s *Server) MutateRow(ctx context.Context, req *pb.MutateRowRequest) (*pb.MutateRowResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceMeta(ctx, "MutateRow", req.Table); err != nil {
		return nil, err
	}
	if err := checkRow(req.Table, req.Row); err != nil {
		return nil, err
	}
	ms, err := mutationsFromProto(req.Mutations)
	if err != nil {
		return nil, err
	}
	var a access
	mutationAccess(&a, ms)
	if err := s.authorize(ctx, req.Table, req.Row, a); err != nil {
		return nil, err
	}
	if err := s.opts.Store.Apply(ctx, req.Table, &model.RowMutation{Row: req.Row, Mutations: ms}); err != nil {
		return nil, toStatus(err)
	}
	if err := s.stillServing(); err != nil {
		return nil, err
	}
	return &pb.MutateRowResponse{}, nil
}

// MutateRows applies each entry atomically and reports each outcome. The
// batch is not atomic; entries of the same row apply in the order given.
func (s *Server) MutateRows(ctx context.Context, req *pb.MutateRowsRequest) (*pb.MutateRowsResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if req.Table == "" {
		return nil, invalid("no table name")
	}
	if err := s.fenceMeta(ctx, "MutateRows", req.Table); err != nil {
		return nil, err
	}
	out := &pb.MutateRowsResponse{Statuses: make([]*pb.Status, len(req.Entries))}
	setStatus := func(i int, err error) {
		st, _ := status.FromError(toStatus(err))
		out.Statuses[i] = &pb.Status{Code: int32(st.Code()), Message: st.Message()}
	}
	// The valid entries go to the store as one batch per tablet, so one
	// group commit and one pass of the per-write work cover many rows.
	var batch []*model.RowMutation
	var idx []int
	for i, e := range req.Entries {
		err := checkRow(req.Table, e.Row)
		var ms []model.Mutation
		if err == nil {
			ms, err = mutationsFromProto(e.Mutations)
		}
		if err == nil {
			var a access
			mutationAccess(&a, ms)
			err = s.authorize(ctx, req.Table, e.Row, a)
		}
		if err != nil {
			setStatus(i, err)
			continue
		}
		batch = append(batch, &model.RowMutation{Row: e.Row, Mutations: ms})
		idx = append(idx, i)
	}
	if len(batch) > 0 {
		errs := s.opts.Store.ApplyBatch(ctx, req.Table, batch)
		fenced := s.stillServing()
		for k, err := range errs {
			if err == nil {
				err = fenced
			}
			setStatus(idx[k], err)
		}
	}
	return out, nil
}

// ReadModifyWrite applies append and increment rules to one row atomically.
func (s *Server) ReadModifyWrite(ctx context.Context, req *pb.ReadModifyWriteRequest) (*pb.ReadModifyWriteResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceMeta(ctx, "ReadModifyWrite", req.Table); err != nil {
		return nil, err
	}
	if err := checkRow(req.Table, req.Row); err != nil {
		return nil, err
	}
	if len(req.Rules) == 0 {
		return nil, invalid("no rules")
	}
	rules := make([]tablet.ReadModifyWriteRule, len(req.Rules))
	for i, r := range req.Rules {
		rules[i] = tablet.ReadModifyWriteRule{Family: r.Family, Qualifier: r.Qualifier}
		switch v := r.Rule.(type) {
		case *pb.ReadModifyWriteRequest_Rule_Append:
			rules[i].Append = v.Append
			if rules[i].Append == nil {
				rules[i].Append = []byte{}
			}
		case *pb.ReadModifyWriteRequest_Rule_Increment:
			rules[i].Increment = v.Increment
		default:
			return nil, invalid("rule %d is neither append nor increment", i)
		}
	}
	var a access
	for _, r := range rules {
		a.read, a.write = append(a.read, r.Family), append(a.write, r.Family)
	}
	if err := s.authorize(ctx, req.Table, req.Row, a); err != nil {
		return nil, err
	}
	cells, err := s.opts.Store.ReadModifyWrite(ctx, req.Table, req.Row, rules)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := s.stillServing(); err != nil {
		return nil, err
	}
	return &pb.ReadModifyWriteResponse{Cells: rowToProto(model.Row{}, cells).Cells}, nil
}

// CheckAndMutate applies one list of mutations or the other, depending on
// whether the predicate leaves any cell of the row, atomically.
func (s *Server) CheckAndMutate(ctx context.Context, req *pb.CheckAndMutateRequest) (*pb.CheckAndMutateResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceMeta(ctx, "CheckAndMutate", req.Table); err != nil {
		return nil, err
	}
	if err := checkRow(req.Table, req.Row); err != nil {
		return nil, err
	}
	f, err := compileFilter(req.Predicate)
	if err != nil {
		return nil, err
	}
	var ifTrue, ifFalse []model.Mutation
	if len(req.TrueMutations) > 0 {
		if ifTrue, err = mutationsFromProto(req.TrueMutations); err != nil {
			return nil, err
		}
	}
	if len(req.FalseMutations) > 0 {
		if ifFalse, err = mutationsFromProto(req.FalseMutations); err != nil {
			return nil, err
		}
	}
	var expects []model.Expect
	if len(req.Expects) > 0 {
		if len(f.read.Families) > 0 || f.read.MaxVersions > 0 || f.read.TimeRange != (model.TimeRange{}) {
			return nil, invalid("a predicate with expects may use only regular expressions and a row filter")
		}
		for _, e := range req.Expects {
			expects = append(expects, model.Expect{Family: e.Family, Qualifier: e.Qualifier, Value: e.Value, Absent: e.Absent})
		}
	} else {
		// Expects need every family's cells, so only a predicate without
		// them may read less.
		s.narrow(&f, req.Table, req.Row)
	}
	var a access
	switch plain := f.qualifier == nil && f.value == nil && f.conds == nil && f.row == nil; {
	case plain && len(expects) == 0 && f.read.Families == nil && f.read.MaxVersions == 0 && f.read.TimeRange == (model.TimeRange{}):
		// An existence test reveals only whether the row exists: it
		// needs no read right (SQL's INSERT makes one).
	case plain && len(expects) > 0:
		for _, e := range expects {
			a.read = append(a.read, e.Family)
		}
	default:
		a = readAccess(&f)
		for _, e := range expects {
			a.read = append(a.read, e.Family)
		}
	}
	mutationAccess(&a, ifTrue)
	mutationAccess(&a, ifFalse)
	if err := s.authorize(ctx, req.Table, req.Row, a); err != nil {
		return nil, err
	}
	ev := f.evaluator(s.opts.Rand)
	matched, err := s.opts.Store.CheckAndMutate(ctx, req.Table, req.Row, f.read,
		func(cells []model.Cell) bool {
			return f.matches(ev, req.Row, cells) && model.ExpectsHold(cells, expects)
		}, ifTrue, ifFalse)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := s.stillServing(); err != nil {
		return nil, err
	}
	return &pb.CheckAndMutateResponse{PredicateMatched: matched}, nil
}

// SampleRowKeys returns, for each tablet of the table served here, its
// end key with the bytes of this server's tablets of the table up to it,
// and its start key; kv/client stitches the servers' answers into the
// table's samples.
func (s *Server) SampleRowKeys(ctx context.Context, req *pb.SampleRowKeysRequest) (*pb.SampleRowKeysResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if req.Table == "" {
		return nil, invalid("no table name")
	}
	if _, err := client.Authenticate(ctx, s.opts.Secret); err != nil {
		return nil, err
	}
	out := &pb.SampleRowKeysResponse{}
	var offset int64
	for _, t := range s.opts.Store.Tablets() {
		if t.Table() != req.Table {
			continue
		}
		offset += int64(t.Size())
		r := t.Range()
		out.Samples = append(out.Samples, &pb.SampleRowKeysResponse_Sample{RowKey: r.End, OffsetBytes: offset, StartKey: r.Start})
	}
	if len(out.Samples) == 0 {
		// The store says why: a table it does not know (NotFound), or, in
		// a cluster, "not serving", since the table's tablets may have
		// moved and the client should look again.
		_, err := s.opts.Store.Locate(req.Table, nil)
		if err == nil {
			err = fmt.Errorf("%w: table %q: no tablets served here", model.ErrNotServing, req.Table)
		}
		return nil, toStatus(err)
	}
	return out, nil
}

// ListTablets lists the served tablets.
func (s *Server) ListTablets(ctx context.Context, _ *pb.ListTabletsRequest) (*pb.ListTabletsResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	out := &pb.ListTabletsResponse{Server: s.opts.ID, LowWater: s.opts.Store.LowWater()}
	for _, t := range s.opts.Store.Tablets() {
		out.Tablets = append(out.Tablets, tabletInfo(t))
	}
	for _, r := range s.opts.Store.Recoveries() {
		out.Recovering = append(out.Recovering, &pb.RecoveringTablet{Table: r.Table, Range: &pb.RowRange{Start: r.Range.Start, End: r.Range.End},
			Log: r.Log, Records: r.Records, StartedMicros: r.Started.UnixMicro()})
	}
	return out, nil
}

// CreateTable creates a table's tablets in the store, at the master's
// request, and lists them.
func (s *Server) CreateTable(ctx context.Context, req *pb.CreateTableRequest) (*pb.CreateTableResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "CreateTable"); err != nil {
		return nil, err
	}
	if req.Table == "" {
		return nil, invalid("no table name")
	}
	var schema model.Schema
	if err := json.Unmarshal(req.Schema, &schema); err != nil {
		return nil, invalid("schema of %q: %v", req.Table, err)
	}
	since := time.Now()
	if err := s.opts.Store.CreateTable(ctx, req.Table, schema, req.Splits); err != nil {
		return nil, toStatus(err)
	}
	out := &pb.CreateTableResponse{}
	for _, t := range s.opts.Store.Tablets() {
		if t.Table() == req.Table {
			r := t.Range()
			out.Tablets = append(out.Tablets, &pb.TabletInfo{Id: t.ID(), Table: t.Table(), Range: &pb.RowRange{Start: r.Start, End: r.End}})
			s.opts.Logger.Info("created tablet", slog.String("server", s.opts.ID), slog.Uint64("tablet", t.ID()), slog.Any("range", r), slog.String("table", t.Table()),
				slog.String("since", preciseTime(since)))
		}
	}
	return out, nil
}

func tabletInfo(t *tablet.Tablet) *pb.TabletInfo {
	r := t.Range()
	c := t.Compaction()
	return &pb.TabletInfo{Id: t.ID(), Table: t.Table(), Range: &pb.RowRange{Start: r.Start, End: r.End}, SizeBytes: int64(t.Size()),
		CompactionDoneBytes: c.DoneBytes, CompactionTotalBytes: c.TotalBytes, CompactionMajor: c.Major, MemtableBytes: t.MemtableBytes()}
}

// LoadTablet starts serving a tablet at the master's request.
func (s *Server) LoadTablet(ctx context.Context, req *pb.LoadTabletRequest) (*pb.LoadTabletResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "LoadTablet"); err != nil {
		return nil, err
	}
	var schema model.Schema
	if err := json.Unmarshal(req.Schema, &schema); err != nil {
		return nil, invalid("schema: %v", err)
	}
	var d model.TabletDescriptor
	if err := json.Unmarshal(req.Descriptor_, &d); err != nil {
		return nil, invalid("descriptor: %v", err)
	}
	table := d.Table
	if table == "" {
		table = client.MetaTable
	}
	spec := tablet.LoadSpec{Table: table, Range: model.RowRange{Start: d.Start, End: d.End}, Schema: schema, Files: d.Files,
		FlushedSeq: d.FlushedSeq, MaxTS: d.MaxTS, Event: req.Event}
	if req.Replay != "" {
		spec.Replay, spec.ReplayTablet = req.Replay, d.LogTablet
	}
	// since: the tablet serves here from some point of Load on, not
	// before; the line, written after, gives it for the chaos suite's
	// serving intervals (at full precision: slog's own times are in ms).
	since := time.Now()
	t, err := s.opts.Store.Load(ctx, spec)
	if err != nil {
		return nil, toStatus(err)
	}
	s.opts.Logger.Info("loaded tablet", slog.String("server", s.opts.ID), slog.Uint64("tablet", t.ID()), slog.Any("range", t.Range()), slog.String("table", t.Table()),
		slog.Any("event", req.Event), slog.String("since", preciseTime(since)))
	return &pb.LoadTabletResponse{Tablet: tabletInfo(t)}, nil
}

// UnloadTablet stops serving a tablet, for a move.
func (s *Server) UnloadTablet(ctx context.Context, req *pb.UnloadTabletRequest) (*pb.UnloadTabletResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "UnloadTablet"); err != nil {
		return nil, err
	}
	t, err := s.opts.Store.Tablet(req.Id)
	if err != nil || t.Table() != req.Table {
		return nil, notServing("tablet %d of %q is not served by %s", req.Id, req.Table, s.opts.ID)
	}
	if _, err := s.opts.Store.Unload(ctx, req.Id); err != nil {
		return nil, toStatus(err)
	}
	// at: Unload has returned, so the tablet serves no more.
	s.opts.Logger.Info("unloaded tablet", slog.String("server", s.opts.ID), slog.Uint64("tablet", t.ID()), slog.Any("range", t.Range()), slog.String("table", t.Table()),
		slog.String("at", preciseTime(time.Now())))
	return &pb.UnloadTabletResponse{}, nil
}

// PartitionLog splits a dead server's log by tablet, once.
func (s *Server) PartitionLog(ctx context.Context, req *pb.PartitionLogRequest) (*pb.PartitionLogResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "PartitionLog"); err != nil {
		return nil, err
	}
	if s.opts.FS == nil {
		return nil, status.Error(codes.FailedPrecondition, "this server has no shared file system")
	}
	if req.Server == "" || strings.ContainsAny(req.Server, "/\x00") || req.Server == s.opts.ID {
		return nil, invalid("bad server to recover: %q", req.Server)
	}
	dir := dfs.Join(s.opts.DFSRoot, "logs", req.Server)
	out := dfs.Join(s.opts.DFSRoot, "recovery", req.Server)
	if err := s.opts.FS.MkdirAll(dfs.Join(s.opts.DFSRoot, "recovery")); err != nil {
		return nil, toStatus(model.IOError("create the recovery directory", err))
	}
	// One partition of a log at a time, cluster-wide: a master that lost
	// its lock may still have one running.
	lock, err := s.opts.FS.Lock(out + ".lock")
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "the log of %s is being partitioned elsewhere: %v", req.Server, err)
	}
	defer lock.Close()
	tablets, err := commitlog.Partition(ctx, s.opts.FS, dir, out, req.Redo, commitlog.Options{})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.PartitionLogResponse{Dir: out, Tablets: tablets}, nil
}

// MergeTablets joins two adjacent tablets.
func (s *Server) MergeTablets(ctx context.Context, req *pb.MergeTabletsRequest) (*pb.MergeTabletsResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "MergeTablets"); err != nil {
		return nil, err
	}
	for _, id := range []uint64{req.A, req.B} {
		if t, err := s.opts.Store.Tablet(id); err != nil || t.Table() != req.Table {
			return nil, notServing("tablet %d of %q is not served by %s", id, req.Table, s.opts.ID)
		}
	}
	t, err := s.opts.Store.Merge(ctx, req.A, req.B)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.MergeTabletsResponse{Tablet: tabletInfo(t)}, nil
}

// DropTable stops serving a deleted table; the master removes its rows
// from METADATA and its files go to the file GC.
func (s *Server) DropTable(ctx context.Context, req *pb.DropTableRequest) (*pb.DropTableResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "DropTable"); err != nil {
		return nil, err
	}
	if err := s.opts.Store.DropTable(ctx, req.Table); err != nil && !errors.Is(err, model.ErrNotFound) {
		return nil, toStatus(err)
	}
	s.opts.Logger.Info("dropped table", slog.String("server", s.opts.ID), slog.String("table", req.Table), slog.String("at", preciseTime(time.Now())))
	return &pb.DropTableResponse{}, nil
}

// UpdateSchema applies a table's new schema to the tablets served here.
func (s *Server) UpdateSchema(ctx context.Context, req *pb.UpdateSchemaRequest) (*pb.UpdateSchemaResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "UpdateSchema"); err != nil {
		return nil, err
	}
	var schema model.Schema
	if err := json.Unmarshal(req.Schema, &schema); err != nil {
		return nil, invalid("schema of %q: %v", req.Table, err)
	}
	if err := s.opts.Store.UpdateSchema(ctx, req.Table, schema); err != nil && !errors.Is(err, model.ErrNotFound) {
		return nil, toStatus(err)
	}
	return &pb.UpdateSchemaResponse{}, nil
}

// preciseTime formats t for the log lines that bound a tablet's serving
// interval on this server (loaded, unloaded, created, dropped, lock lost
// and retaken): RFC 3339 with all nine digits of nanoseconds (so that the
// strings sort as the times do, in the zone slog writes), where slog's
// text handler truncates times to milliseconds, which could end an
// interval up to a millisecond before the server stopped serving.
func preciseTime(t time.Time) string { return t.Format(preciseLayout) }

// preciseLayout is the layout of preciseTime.
const preciseLayout = "2006-01-02T15:04:05.000000000Z07:00"

// stillServing is the fencing check after a request's work: a write made
// durable after the server lost its lock may be missing from the log
// piece a new server replays, and a read may miss writes the new server
// took, so neither is acknowledged. The write's outcome is unknown to the
// client, as with any failure after sending.
func (s *Server) stillServing() error {
	if err := s.serving(); err != nil {
		return status.Errorf(codes.Unavailable, "outcome unknown: the server stopped serving during the request (%s)", status.Convert(err).Message())
	}
	return nil
}

// ListFiles lists the SSTables the server uses, for the master's GC. It
// is fenced like the admin calls although it reads only: the master
// deletes files on its answer, and a master that lost its lock must not.
func (s *Server) ListFiles(ctx context.Context, _ *pb.ListFilesRequest) (*pb.ListFilesResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "ListFiles"); err != nil {
		return nil, err
	}
	return &pb.ListFilesResponse{Paths: s.opts.Store.FilesInUse()}, nil
}
