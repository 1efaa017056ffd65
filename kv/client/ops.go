package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Filter selects the cells a read returns; the zero value selects all.
// The regular expressions are RE2 and must match the whole qualifier or
// value. Filters run on the tablet servers.
type Filter struct {
	Families       []string
	QualifierRegex string
	ValueRegex     string
	TimeRange      model.TimeRange
	// MaxVersions keeps the newest n versions of each column; 0 keeps all.
	MaxVersions int
	// Conditions must all hold for a row to be read (SQL's WHERE, pushed
	// down): each compares the newest version of a column, decoded as its
	// type, with an operand; a row without the column fails every op but
	// model.CondIsNull (see model.Condition). They see the cells the read
	// takes (TimeRange, MaxVersions) before the regular expressions. If
	// Families is set, the server also reads the conditions' families for
	// them and leaves their cells out of the rows unless Families names
	// them. A row that fails is not returned and does not count toward a
	// scan's limit. Invalid conditions fail the read with InvalidArgument.
	Conditions []model.Condition
	// WantStats asks the servers for their read statistics: see
	// ReadRowStats, Scanner.Stats and AggregateSpec.Stats. Without it
	// those are zero. Other operations ignore it.
	WantStats bool
	// RowFilter, if not nil, is a Cloud Bigtable row filter the tablet
	// servers apply to each row after the fields above (nil passes all).
	// A row it leaves without cells is not returned and does not count
	// toward a scan's limit; its labels come back in model.Row.Labels. As
	// a CheckAndMutate predicate, the row matches if any cell passes.
	RowFilter *model.RowFilter
	// ReadableOnly: a read that names no families reads only those its
	// principal may read (the table's ACL) instead of being denied, if
	// it may read every family of Require.
	ReadableOnly bool
	Require      []string
}

// ReadStats is the work reads did on the tablet servers, for statistics
// such as SQL's EXPLAIN ANALYZE (ask with Filter.WantStats).
type ReadStats struct {
	// Rows and Cells are the rows and cells the servers' tablet reads
	// produced, before the filter's regular expressions and conditions
	// dropped any: the rows examined, which may be more than the rows
	// returned.
	Rows, Cells int64
	// Blocks is the SSTable data blocks read from files; CacheHits the
	// data blocks served from a block cache (or an in-memory locality
	// group) instead.
	Blocks, CacheHits int64
	// BloomChecks is the bloom filter probes of point reads (ReadRow),
	// one per SSTable with a filter that could hold the row;
	// BloomUseful is how many showed the SSTable could not, so that it
	// was not read.
	BloomChecks, BloomUseful int64
}

// Add adds o's counts to s.
func (s *ReadStats) Add(o ReadStats) {
	s.Rows += o.Rows
	s.Cells += o.Cells
	s.Blocks += o.Blocks
	s.CacheHits += o.CacheHits
	s.BloomChecks += o.BloomChecks
	s.BloomUseful += o.BloomUseful
}

func statsFromProto(p *pb.ReadStats) ReadStats {
	if p == nil {
		return ReadStats{}
	}
	return ReadStats{Rows: p.Rows, Cells: p.Cells, Blocks: p.Blocks, CacheHits: p.CacheHits,
		BloomChecks: p.BloomChecks, BloomUseful: p.BloomUseful}
}

// proto encodes the filter for the servers; only a row filter too deep
// to encode fails (InvalidArgument).
func (f Filter) proto() (*pb.Filter, error) {
	out := &pb.Filter{Families: f.Families, QualifierRegex: f.QualifierRegex, ValueRegex: f.ValueRegex,
		MaxVersions: int32(f.MaxVersions), WantStats: f.WantStats, ReadableOnly: f.ReadableOnly, RequireFamilies: f.Require}
	if f.TimeRange != (model.TimeRange{}) {
		out.TimeRange = &pb.TimeRange{Start: f.TimeRange.Start, End: f.TimeRange.End}
	}
	for _, c := range f.Conditions {
		out.Conditions = append(out.Conditions, &pb.Condition{Family: c.Family, Qualifier: c.Qualifier, Type: int32(c.Type),
			Op: pb.Condition_Op(c.Op), Operand: c.Operand})
	}
	if f.RowFilter != nil {
		var err error
		if out.RowFilter, err = rowFilterProto(f.RowFilter); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func mutationsProto(ms []model.Mutation) []*pb.Mutation {
	out := make([]*pb.Mutation, len(ms))
	for i, m := range ms {
		switch m.Kind {
		case model.KindSetCell:
			out[i] = &pb.Mutation{Mutation: &pb.Mutation_SetCell_{SetCell: &pb.Mutation_SetCell{Family: m.Family, Qualifier: m.Qualifier, Timestamp: m.Timestamp, Value: m.Value}}}
		case model.KindDeleteColumn:
			out[i] = &pb.Mutation{Mutation: &pb.Mutation_DeleteColumn_{DeleteColumn: &pb.Mutation_DeleteColumn{Family: m.Family, Qualifier: m.Qualifier,
				TimeRange: &pb.TimeRange{Start: m.Range.Start, End: m.Range.End}}}}
		case model.KindDeleteFamily:
			out[i] = &pb.Mutation{Mutation: &pb.Mutation_DeleteFamily_{DeleteFamily: &pb.Mutation_DeleteFamily{Family: m.Family}}}
		case model.KindDeleteRow:
			out[i] = &pb.Mutation{Mutation: &pb.Mutation_DeleteRow_{DeleteRow: &pb.Mutation_DeleteRow{}}}
		default:
			out[i] = &pb.Mutation{} // the server rejects it by position
		}
	}
	return out
}

// rowFromProto converts a row a server returned. Labels stay nil unless
// a cell has one (only row filters label cells).
func rowFromProto(r *pb.Row) model.Row {
	out := model.Row{Key: r.Key, Cells: make([]model.Cell, len(r.Cells))}
	for i, c := range r.Cells {
		out.Cells[i] = model.Cell{Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value}
		if len(c.Labels) > 0 {
			if out.Labels == nil {
				out.Labels = make([][]string, len(r.Cells))
			}
			out.Labels[i] = c.Labels
		}
	}
	return out
}

// Apply applies a row mutation atomically.
func (c *Client) Apply(ctx context.Context, table string, m *model.RowMutation) error {
	req := &pb.MutateRowRequest{Table: table, Row: m.Row, Mutations: mutationsProto(m.Mutations)}
	return c.do(ctx, table, m.Row, func(ctx context.Context, cli pb.TabletServerClient, _ location) error {
		_, err := cli.MutateRow(ctx, req)
		return err
	})
}

// ApplyBulk applies each mutation atomically, sending each tablet's share
// in one call; the batch as a whole is not atomic. It returns one error
// per mutation (nil for success).
func (c *Client) ApplyBulk(ctx context.Context, table string, ms []*model.RowMutation) []error {
	errs := make([]error, len(ms))
	pending := make([]int, len(ms))
	for i := range ms {
		pending[i] = i
	}
	backoff := c.opts.MinBackoff
	for len(pending) > 0 {
		// Group what is left by tablet.
		type group struct {
			loc location
			idx []int
		}
		var groups []*group
		var retry []int
		for _, i := range pending {
			loc, err := c.locate(ctx, table, ms[i].Row)
			if err != nil {
				errs[i] = err
				if retryable(err) {
					retry = append(retry, i)
				}
				continue
			}
			var g *group
			for _, x := range groups {
				if bytes.Equal(x.loc.start, loc.start) && x.loc.addr == loc.addr {
					g = x
				}
			}
			if g == nil {
				g = &group{loc: loc}
				groups = append(groups, g)
			}
			g.idx = append(g.idx, i)
		}
		for _, g := range groups {
			req := &pb.MutateRowsRequest{Table: table}
			for _, i := range g.idx {
				req.Entries = append(req.Entries, &pb.MutateRowsRequest_Entry{Row: ms[i].Row, Mutations: mutationsProto(ms[i].Mutations)})
			}
			cli, err := c.stub(g.loc.addr)
			var resp *pb.MutateRowsResponse
			if err == nil {
				resp, err = cli.MutateRows(ctx, req)
			}
			for k, i := range g.idx {
				e := err
				if e == nil {
					if st := resp.Statuses[k]; st.Code != 0 {
						e = status.Error(codes.Code(st.Code), st.Message)
					}
				}
				errs[i] = e
				if e != nil && ctx.Err() != nil {
					// Silent until the caller's deadline: forget the
					// server, as do does.
					c.forget(table, g.loc)
				}
				if retryable(e) {
					c.forget(table, g.loc)
					retry = append(retry, i)
				}
			}
		}
		if len(retry) == 0 {
			break
		}
		if ctx.Err() != nil {
			for _, i := range retry {
				errs[i] = errors.Join(ctx.Err(), errs[i])
			}
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, c.opts.MaxBackoff)
		pending = retry
	}
	return errs
}

// ReadRow reads one row through a filter. It reports whether the row has
// any cell that passes.
func (c *Client) ReadRow(ctx context.Context, table string, row []byte, f Filter) (model.Row, bool, error) {
	out, found, _, err := c.ReadRowStats(ctx, table, row, f)
	return out, found, err
}

// ReadRowStats is ReadRow that also returns the server's read statistics,
// if f.WantStats is set (else they are zero), whether the row was found
// or not. A retried read returns the statistics of the call that
// answered.
func (c *Client) ReadRowStats(ctx context.Context, table string, row []byte, f Filter) (model.Row, bool, ReadStats, error) {
	pf, err := f.proto()
	if err != nil {
		return model.Row{}, false, ReadStats{}, err
	}
	req := &pb.ReadRowRequest{Table: table, Row: row, Filter: pf}
	var (
		out   model.Row
		found bool
		pst   *pb.ReadStats
	)
	err = c.do(ctx, table, row, func(ctx context.Context, cli pb.TabletServerClient, _ location) error {
		if l, ok := cli.(localStub); ok {
			var err error
			out, found, pst, err = l.readRow(ctx, req)
			return err
		}
		resp, err := cli.ReadRow(ctx, req)
		if err != nil {
			return err
		}
		out, found, pst = model.Row{}, resp.Found, resp.Stats
		if found {
			out = rowFromProto(resp.Row)
		}
		return nil
	})
	if err != nil {
		return model.Row{}, false, ReadStats{}, err
	}
	return out, found, statsFromProto(pst), nil
}

// ReadModifyWriteRule appends to or increments one cell.
type ReadModifyWriteRule struct {
	Family    string
	Qualifier []byte
	// Append, if non-nil, is appended; otherwise Increment is added to
	// the cell read as an 8-byte big-endian integer.
	Append    []byte
	Increment int64
}

// ReadModifyWrite applies the rules to one row atomically and returns the
// new cells.
func (c *Client) ReadModifyWrite(ctx context.Context, table string, row []byte, rules []ReadModifyWriteRule) ([]model.Cell, error) {
	req := &pb.ReadModifyWriteRequest{Table: table, Row: row}
	for _, r := range rules {
		pr := &pb.ReadModifyWriteRequest_Rule{Family: r.Family, Qualifier: r.Qualifier}
		if r.Append != nil {
			pr.Rule = &pb.ReadModifyWriteRequest_Rule_Append{Append: r.Append}
		} else {
			pr.Rule = &pb.ReadModifyWriteRequest_Rule_Increment{Increment: r.Increment}
		}
		req.Rules = append(req.Rules, pr)
	}
	var resp *pb.ReadModifyWriteResponse
	err := c.doOnce(ctx, table, row, func(ctx context.Context, cli pb.TabletServerClient, _ location) error {
		var err error
		resp, err = cli.ReadModifyWrite(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rowFromProto(&pb.Row{Cells: resp.Cells}).Cells, nil
}

// CheckAndMutate applies ifTrue if the predicate leaves any cell of the
// row, else ifFalse, atomically, and reports which.
func (c *Client) CheckAndMutate(ctx context.Context, table string, row []byte, predicate Filter, ifTrue, ifFalse []model.Mutation) (bool, error) {
	return c.CompareAndMutate(ctx, table, row, predicate, nil, ifTrue, ifFalse)
}

// CompareAndMutate is CheckAndMutate whose predicate also needs every
// expect to hold: a compare-and-swap on several columns. With expects,
// the predicate may use only its regular expressions.
func (c *Client) CompareAndMutate(ctx context.Context, table string, row []byte, predicate Filter, expects []model.Expect, ifTrue, ifFalse []model.Mutation) (bool, error) {
	pf, err := predicate.proto()
	if err != nil {
		return false, err
	}
	req := &pb.CheckAndMutateRequest{Table: table, Row: row, Predicate: pf}
	for _, e := range expects {
		req.Expects = append(req.Expects, &pb.Expect{Family: e.Family, Qualifier: e.Qualifier, Value: e.Value, Absent: e.Absent})
	}
	if len(ifTrue) > 0 {
		req.TrueMutations = mutationsProto(ifTrue)
	}
	if len(ifFalse) > 0 {
		req.FalseMutations = mutationsProto(ifFalse)
	}
	var resp *pb.CheckAndMutateResponse
	err = c.doOnce(ctx, table, row, func(ctx context.Context, cli pb.TabletServerClient, _ location) error {
		var err error
		resp, err = cli.CheckAndMutate(ctx, req)
		return err
	})
	if err != nil {
		return false, err
	}
	return resp.PredicateMatched, nil
}

// scanChunk is the most rows one call of a scan returns; a scan resumes
// after the last row it got, so a retry never repeats or skips a row.
const scanChunk = 1000

// Scanner streams the rows of a range, tablet by tablet, in key order.
type Scanner struct {
	c      *Client
	ctx    context.Context
	table  string
	rng    model.RowRange
	filter *pb.Filter // encoded once, sent with every call
	limit  int64

	next []byte // where the next call starts
	// A reversed scan reads down from upper (nil: the table's end).
	reversed bool
	upper    []byte
	buf      []model.Row
	sent     int64
	row      model.Row
	err      error
	done     bool
	stats    ReadStats
}

// Scan returns a scanner over rng (an empty End: to the table's end) with
// at most limit rows (0: no limit).
func (c *Client) Scan(ctx context.Context, table string, rng model.RowRange, f Filter, limit int64) *Scanner {
	s := &Scanner{c: c, ctx: ctx, table: table, rng: rng, limit: limit, next: rng.Start}
	s.filter, s.err = f.proto()
	return s
}

// ScanReversed is Scan with the rows in descending key order.
func (c *Client) ScanReversed(ctx context.Context, table string, rng model.RowRange, f Filter, limit int64) *Scanner {
	s := &Scanner{c: c, ctx: ctx, table: table, rng: rng, limit: limit, reversed: true}
	s.filter, s.err = f.proto()
	if len(rng.End) > 0 {
		s.upper = rng.End
	}
	return s
}

// Next advances to the next row.
func (s *Scanner) Next() bool {
	for len(s.buf) == 0 {
		if s.done || s.err != nil || (s.limit > 0 && s.sent >= s.limit) {
			return false
		}
		if s.reversed {
			s.fillReversed()
		} else {
			s.fill()
		}
	}
	s.row, s.buf = s.buf[0], s.buf[1:]
	s.sent++
	return true
}

// fill reads the next chunk of the current tablet's share of the range.
func (s *Scanner) fill() {
	if len(s.rng.End) > 0 && bytes.Compare(s.next, s.rng.End) >= 0 {
		s.done = true // resumed just after the range's last row
		return
	}
	var ch chunk
	var end []byte
	err := s.c.do(s.ctx, s.table, s.next, func(ctx context.Context, cli pb.TabletServerClient, loc location) error {
		end = loc.end
		scanEnd := s.rng.End
		if len(loc.end) > 0 && (len(scanEnd) == 0 || bytes.Compare(loc.end, scanEnd) < 0) {
			scanEnd = loc.end
		}
		var err error
		ch, err = s.call(ctx, cli, &pb.RowRange{Start: s.next, End: scanEnd}, false)
		return err
	})
	if err != nil {
		s.err = err
		return
	}
	s.stats.Add(ch.stats)
	rows := ch.rows
	s.buf = rows
	if ch.more {
		// The server stopped early (its filter dropped many rows): resume
		// just after the last row it read.
		s.next = append(bytes.Clone(ch.resume), 0)
		return
	}
	if len(rows) == scanChunk {
		// More of this tablet: resume just after the last row.
		s.next = append(append([]byte(nil), rows[len(rows)-1].Key...), 0)
		return
	}
	if len(end) == 0 || (len(s.rng.End) > 0 && bytes.Compare(end, s.rng.End) >= 0) {
		s.done = true
	} else {
		s.next = end
	}
}

// chunk is what one Scan call of a scanner answered.
type chunk struct {
	rows   []model.Row
	more   bool   // the server stopped early (a selective filter) ...
	resume []byte // ... after reading this row
	stats  ReadStats
}

// call runs one Scan call of at most scanChunk rows over rng and gathers
// its answer.
func (s *Scanner) call(ctx context.Context, cli pb.TabletServerClient, rng *pb.RowRange, reversed bool) (chunk, error) {
	n := int64(scanChunk)
	if s.limit > 0 {
		n = min(n, s.limit-s.sent)
	}
	req := &pb.ScanRequest{Table: s.table, Ranges: []*pb.RowRange{rng}, Filter: s.filter, RowLimit: n, Reversed: reversed}
	if l, ok := cli.(localStub); ok {
		if sc, ok := l.srv.(localScanner); ok {
			rows, more, resume, st, err := sc.ScanLocal(l.in(ctx), req)
			if err != nil {
				return chunk{}, err
			}
			return chunk{rows: rows, more: more, resume: resume, stats: statsFromProto(st)}, nil
		}
	}
	stream, err := cli.Scan(ctx, req)
	if err != nil {
		return chunk{}, err
	}
	var ch chunk
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return ch, nil
		}
		if err != nil {
			return chunk{}, err
		}
		for _, r := range resp.Rows {
			ch.rows = append(ch.rows, rowFromProto(r))
		}
		if resp.More {
			ch.resume, ch.more = resp.ResumeAfter, true
		}
		ch.stats.Add(statsFromProto(resp.Stats))
	}
}

// errFurther tells fillReversed that the tablet it reached ends before
// the rows it wants.
var errFurther = errors.New("the rows wanted lie in a later tablet")

// fillReversed reads the next chunk of a reversed scan: the rows just
// below upper, from the tablet that holds them. That tablet is found by
// walking forward from a row known to lie below upper (the location
// cache usually names it at once), since lookups go by the row a tablet
// contains.
func (s *Scanner) fillReversed() {
	if s.upper != nil && bytes.Compare(s.upper, s.rng.Start) <= 0 {
		s.done = true
		return
	}
	key := s.rng.Start
	if l, ok := s.c.cachedBefore(s.table, s.upper); ok && bytes.Compare(l.start, key) > 0 {
		key = l.start
	}
	var ch chunk
	var start []byte
	for {
		err := s.c.do(s.ctx, s.table, key, func(ctx context.Context, cli pb.TabletServerClient, loc location) error {
			start = loc.start
			if len(loc.end) > 0 && (s.upper == nil || bytes.Compare(loc.end, s.upper) < 0) {
				key = loc.end
				return errFurther
			}
			scanStart := s.rng.Start
			if bytes.Compare(loc.start, scanStart) > 0 {
				scanStart = loc.start
			}
			var err error
			ch, err = s.call(ctx, cli, &pb.RowRange{Start: scanStart, End: s.upper}, true)
			return err
		})
		if errors.Is(err, errFurther) {
			continue
		}
		if err != nil {
			s.err = err
			return
		}
		break
	}
	s.stats.Add(ch.stats)
	rows := ch.rows
	s.buf = rows
	switch {
	case ch.more:
		s.upper = bytes.Clone(ch.resume)
	case len(rows) == scanChunk:
		s.upper = bytes.Clone(rows[len(rows)-1].Key)
	case len(start) == 0 || bytes.Compare(start, s.rng.Start) <= 0:
		s.done = true
	default:
		s.upper = start
	}
}

// Row returns the current row.
func (s *Scanner) Row() model.Row { return s.row }

// Err returns the error that ended the scan, if any.
func (s *Scanner) Err() error { return s.err }

// Stats returns the servers' read statistics summed over the scan's calls
// so far, across its tablets, if its filter has WantStats (else zero). A
// call is counted once it has answered whole (a retried call once), so
// the sum is complete once Next returns false; the scanner reads ahead
// of Next by up to one call (1,000 rows).
func (s *Scanner) Stats() ReadStats { return s.stats }

// TabletInfo is a tablet as the client's location lookup sees it.
type TabletInfo struct {
	Start, End []byte // End empty: to the table's end
	Addr       string // the server that serves it
}

// Tablets returns the tablets that hold rng, in order (EXPLAIN lists
// them). It looks them up as a read would, through the location cache.
func (c *Client) Tablets(ctx context.Context, table string, rng model.RowRange) ([]TabletInfo, error) {
	var out []TabletInfo
	row := rng.Start
	for {
		var loc location
		err := c.do(ctx, table, row, func(_ context.Context, _ pb.TabletServerClient, l location) error {
			loc = l
			return nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, TabletInfo{Start: loc.start, End: loc.end, Addr: loc.addr})
		if len(loc.end) == 0 || (len(rng.End) > 0 && bytes.Compare(loc.end, rng.End) >= 0) {
			return out, nil
		}
		row = loc.end
	}
}
