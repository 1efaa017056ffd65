package master

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Operator commands: list tablets, and force a split, a move, a merge or a
// major compaction. Splits, moves and merges change assignment, so they
// hold the master's upkeep token (busy) like a round does: the balancer
// never moves a tablet that an operator is splitting, moving or merging. Compactions change no
// assignment and run beside the rounds.

// acquire takes the upkeep token, waiting under ctx.
func (m *Master) acquire(ctx context.Context) error {
	select {
	case m.busy <- struct{}{}:
		return nil
	case <-ctx.Done():
		return status.Errorf(codes.DeadlineExceeded, "the master is busy with a round of assignment: %v", ctx.Err())
	}
}

func (m *Master) release() { <-m.busy }

// located is a tablet and the live server that serves it.
type located struct {
	server Server
	tablet *pb.TabletInfo
	// recovered: the records replayed so far, for a tablet being recovered.
	recovered int64
}

func (l located) proto() *masterpb.Tablet {
	t := l.tablet
	return &masterpb.Tablet{Table: t.Table, Start: t.Range.GetStart(), End: t.Range.GetEnd(), Server: l.server.ID,
		ServerAddr: l.server.Addr, Id: t.Id, SizeBytes: t.SizeBytes,
		CompactionDoneBytes: t.CompactionDoneBytes, CompactionTotalBytes: t.CompactionTotalBytes, MemtableBytes: t.MemtableBytes}
}

// liveTablets asks every live server what it serves now, rather than
// trusting the last scan, so that a listing right after a split or move
// shows it. A server that does not answer is left out.
func (m *Master) liveTablets(ctx context.Context) []located {
	out, _ := m.liveTabletsAndRecoveries(ctx)
	return out
}

// liveTabletsAndRecoveries is liveTablets, and besides the tablets each
// server is recovering from a dead server's log (with their replay's
// progress in recovered).
func (m *Master) liveTabletsAndRecoveries(ctx context.Context) (out, recovering []located) {
	for _, s := range m.Servers() {
		resp, err := m.listTablets(ctx, s.Addr)
		if err != nil {
			continue
		}
		for _, t := range resp.Tablets {
			out = append(out, located{server: s, tablet: t})
		}
		for _, r := range resp.Recovering {
			recovering = append(recovering, located{server: s, tablet: &pb.TabletInfo{Table: r.Table, Range: r.Range}, recovered: r.Records})
		}
	}
	for _, ls := range [][]located{out, recovering} {
		sort.Slice(ls, func(i, j int) bool {
			a, b := ls[i].tablet, ls[j].tablet
			if a.Table != b.Table {
				return a.Table < b.Table
			}
			return bytes.Compare(a.Range.GetStart(), b.Range.GetStart()) < 0
		})
	}
	return out, recovering
}

// resolveServer finds a live server by id, or by the name it was started
// with (ids are NAME-<start time>) if that names exactly one.
func (m *Master) resolveServer(name string) (Server, error) {
	servers := m.Servers()
	var ids []string
	var match []Server
	for _, s := range servers {
		ids = append(ids, s.ID)
		if s.ID == name {
			return s, nil
		}
		if strings.HasPrefix(s.ID, name+"-") {
			match = append(match, s)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return Server{}, status.Errorf(codes.InvalidArgument, "no live tablet server %q; the live ones are: %s", name, strings.Join(ids, ", "))
	}
	return Server{}, status.Errorf(codes.InvalidArgument, "server name %q is ambiguous; use one of the ids: %s", name, strings.Join(ids, ", "))
}

// checkTable returns NotFound unless table exists.
func (m *Master) checkTable(ctx context.Context, table string) error {
	if table == "" {
		return status.Error(codes.InvalidArgument, "no table named")
	}
	if table == client.MetaTable {
		return nil
	}
	_, err := m.existingTable(ctx, table)
	if s, ok := status.FromError(err); ok && s.Code() == codes.NotFound {
		return status.Errorf(codes.NotFound, "table %q does not exist; list the tables with `cellar admin table ls`", table)
	}
	return err
}

// findTablet locates the tablet ref names.
func (m *Master) findTablet(ctx context.Context, ref *masterpb.TabletRef) (located, error) {
	switch {
	case ref.GetServer() != "":
		s, err := m.resolveServer(ref.Server)
		if err != nil {
			return located{}, err
		}
		resp, err := m.listTablets(ctx, s.Addr)
		if err != nil {
			return located{}, status.Errorf(codes.Unavailable, "server %s does not answer: %v", s.ID, err)
		}
		for _, t := range resp.Tablets {
			if t.Id == ref.Id && (ref.Table == "" || t.Table == ref.Table) {
				return located{server: s, tablet: t}, nil
			}
		}
		return located{}, status.Errorf(codes.NotFound, "server %s serves no tablet %d%s; tablet ids change when tablets split or move: list them again with `cellar admin tablets`",
			s.ID, ref.Id, ofTable(ref.Table))
	case ref.GetTable() != "":
		if err := m.checkTable(ctx, ref.Table); err != nil {
			return located{}, err
		}
		for _, l := range m.liveTablets(ctx) {
			if l.tablet.Table == ref.Table && (model.RowRange{Start: l.tablet.Range.GetStart(), End: l.tablet.Range.GetEnd()}).Contains(ref.Row) {
				return l, nil
			}
		}
		return located{}, status.Errorf(codes.Unavailable, "the tablet of %q holding row %q is not served right now (it is being moved or recovered); try again in a few seconds", ref.Table, ref.Row)
	}
	return located{}, status.Error(codes.InvalidArgument, "no tablet named: give a server and tablet id, or a table and a row")
}

func ofTable(table string) string {
	if table == "" {
		return ""
	}
	return fmt.Sprintf(" of %q", table)
}

// ListTablets implements masterpb.MasterServer.
func (a AdminServer) ListTablets(ctx context.Context, req *masterpb.ListTabletsRequest) (*masterpb.ListTabletsResponse, error) {
	if req.Table != "" {
		if err := a.M.checkTable(ctx, req.Table); err != nil {
			return nil, asStatus(err)
		}
	}
	out := &masterpb.ListTabletsResponse{}
	live, recovering := a.M.liveTabletsAndRecoveries(ctx)
	for _, l := range live {
		if req.Table == "" || l.tablet.Table == req.Table {
			out.Tablets = append(out.Tablets, l.proto())
		}
	}
	for _, l := range recovering {
		if req.Table == "" || l.tablet.Table == req.Table {
			t := l.proto()
			t.Recovering, t.RecoveredRecords = true, l.recovered
			out.Recovering = append(out.Recovering, t)
		}
	}
	return out, nil
}

// SplitTablet implements masterpb.MasterServer.
func (a AdminServer) SplitTablet(ctx context.Context, req *masterpb.SplitTabletRequest) (*masterpb.SplitTabletResponse, error) {
	halves, err := a.M.SplitTablet(ctx, req.Table, req.Key, req.Tablet)
	if err != nil {
		return nil, asStatus(err)
	}
	out := &masterpb.SplitTabletResponse{}
	for _, h := range halves {
		out.Tablets = append(out.Tablets, h.proto())
	}
	return out, nil
}

// SplitTablet splits a tablet of table: the one holding key at key, or
// the one ref names (or else the table's largest) at its midpoint.
func (m *Master) SplitTablet(ctx context.Context, table string, key []byte, ref *masterpb.TabletRef) ([]located, error) {
	if table == client.MetaTable {
		return nil, status.Error(codes.InvalidArgument, "METADATA's tablets split by themselves; split a user table")
	}
	if err := m.checkTable(ctx, table); err != nil {
		return nil, err
	}
	if err := m.acquire(ctx); err != nil {
		return nil, err
	}
	defer m.release()
	var target located
	var err error
	switch {
	case len(key) > 0:
		target, err = m.findTablet(ctx, &masterpb.TabletRef{Table: table, Row: key})
		if err == nil && bytes.Equal(target.tablet.Range.GetStart(), key) {
			return nil, status.Errorf(codes.FailedPrecondition, "row %q already starts a tablet of %q; nothing to split", key, table)
		}
	case ref.GetServer() != "" || ref.GetTable() != "":
		r := &masterpb.TabletRef{Server: ref.Server, Id: ref.Id, Table: ref.Table, Row: ref.Row}
		if r.Table == "" {
			r.Table = table
		}
		target, err = m.findTablet(ctx, r)
	default:
		var best *located
		for _, l := range m.liveTablets(ctx) {
			if l.tablet.Table == table && (best == nil || l.tablet.SizeBytes > best.tablet.SizeBytes) {
				best = &l
			}
		}
		if best == nil {
			return nil, status.Errorf(codes.Unavailable, "no tablet of %q is served right now; try again in a few seconds", table)
		}
		target = *best
	}
	if err != nil {
		return nil, err
	}
	cli, err := m.stub(target.server.Addr)
	if err != nil {
		return nil, err
	}
	resp, err := cli.SplitTablet(ctx, &pb.SplitTabletRequest{Table: table, Id: target.tablet.Id, Key: key})
	if err != nil {
		return nil, fmt.Errorf("split tablet %d of %q on server %s: %w", target.tablet.Id, table, target.server.ID, statusOnly(err))
	}
	m.refresh(ctx, target.server.ID)
	m.event(EventSplit, slog.LevelInfo, "split a tablet on request", slog.String("range", fmt.Sprintf("[%q,%q)", target.tablet.Range.GetStart(), target.tablet.Range.GetEnd())),
		slog.String("table", table), slog.String("server", target.server.ID), slog.String("split", fmt.Sprintf("%q", resp.Tablets[1].Range.GetStart())))
	out := make([]located, 0, len(resp.Tablets))
	for _, t := range resp.Tablets {
		out = append(out, located{server: target.server, tablet: t})
	}
	return out, nil
}

// statusOnly keeps the code of a tablet server's status and its message,
// so that wrapping it does not lose the code.
func statusOnly(err error) error {
	if s, ok := status.FromError(err); ok {
		return wrappedStatus{s: s}
	}
	return err
}

// wrappedStatus is a status that fmt.Errorf can wrap: asStatus finds it
// with errors.As through GRPCStatus.
type wrappedStatus struct{ s *status.Status }

func (w wrappedStatus) Error() string              { return w.s.Message() }
func (w wrappedStatus) GRPCStatus() *status.Status { return w.s }

// MoveTablet implements masterpb.MasterServer.
func (a AdminServer) MoveTablet(ctx context.Context, req *masterpb.MoveTabletRequest) (*masterpb.MoveTabletResponse, error) {
	l, err := a.M.MoveTablet(ctx, req.Tablet, req.Target)
	if err != nil {
		return nil, asStatus(err)
	}
	return &masterpb.MoveTabletResponse{Tablet: l.proto()}, nil
}

// MoveTablet moves the tablet ref names to target, or to the least loaded
// other live server, and returns it at its new place.
func (m *Master) MoveTablet(ctx context.Context, ref *masterpb.TabletRef, target string) (located, error) {
	if err := m.acquire(ctx); err != nil {
		return located{}, err
	}
	defer m.release()
	from, err := m.findTablet(ctx, ref)
	if err != nil {
		return located{}, err
	}
	t := from.tablet
	if t.Table == client.MetaTable {
		return located{}, status.Error(codes.InvalidArgument, "METADATA's tablets are placed by the master; move a user table's tablet")
	}
	var to Server
	if target != "" {
		if to, err = m.resolveServer(target); err != nil {
			return located{}, err
		}
		if to.ID == from.server.ID {
			return located{}, status.Errorf(codes.FailedPrecondition, "tablet %d of %q is already on server %s", t.Id, t.Table, to.ID)
		}
	} else {
		found := false
		for _, s := range m.Servers() {
			if s.ID != from.server.ID && s.Misses == 0 && (!found || len(s.Tablets) < len(to.Tablets)) {
				to, found = s, true
			}
		}
		if !found {
			return located{}, status.Errorf(codes.FailedPrecondition, "server %s is the only live tablet server; start another one to move tablets to", from.server.ID)
		}
	}
	if to.Misses > 0 {
		return located{}, status.Errorf(codes.FailedPrecondition, "server %s does not answer the master; pick another server", to.ID)
	}
	if err := m.Move(ctx, from.server, to, t); err != nil {
		return located{}, fmt.Errorf("move tablet %d of %q from %s to %s (the master reassigns it if the move stopped half-way): %w",
			t.Id, t.Table, from.server.ID, to.ID, statusOnly(err))
	}
	resp, err := m.listTablets(ctx, to.Addr)
	if err != nil {
		return located{}, err
	}
	for _, nt := range resp.Tablets {
		if nt.Table == t.Table && bytes.Equal(nt.Range.GetStart(), t.Range.GetStart()) && bytes.Equal(nt.Range.GetEnd(), t.Range.GetEnd()) {
			return located{server: to, tablet: nt}, nil
		}
	}
	return located{}, status.Errorf(codes.Unavailable, "tablet of %q moved to %s but is not listed there yet", t.Table, to.ID)
}

// MergeTablets implements masterpb.MasterServer.
func (a AdminServer) MergeTablets(ctx context.Context, req *masterpb.MergeTabletsRequest) (*masterpb.MergeTabletsResponse, error) {
	r, err := a.M.MergeTablets(ctx, req.Table, req.Row)
	if err != nil {
		return nil, asStatus(err)
	}
	out := &masterpb.MergeTabletsResponse{Tablet: r.merged.proto()}
	if r.moved != nil {
		out.MovedFrom, out.MovedRangeStart = r.moved.server.ID, r.moved.tablet.Range.GetStart()
	}
	return out, nil
}

// merged is what a forced merge did: the merged tablet, and the tablet
// moved first (at its old server), if one was.
type merged struct {
	merged located
	moved  *located
}

// MergeTablets merges the tablet of table holding row with its right
// neighbour, the tablet that starts at its end. Two tablets on different
// servers are first brought together: the smaller one (by size; the upper
// one if equal) moves to the other's server, by the balancer's move. Then
// that server merges them and records the merged tablet in METADATA, as
// an automatic merge does (merge). Like a split or a move, it holds the
// upkeep token, and the tablet servers fence its calls by the master
// lock's sequencer.
func (m *Master) MergeTablets(ctx context.Context, table string, row []byte) (merged, error) {
	if table == client.MetaTable {
		return merged{}, status.Error(codes.InvalidArgument, "METADATA's tablets are placed by the master; merge a user table's tablets")
	}
	if err := m.checkTable(ctx, table); err != nil {
		return merged{}, err
	}
	if err := m.acquire(ctx); err != nil {
		return merged{}, err
	}
	defer m.release()
	live := m.liveTablets(ctx)
	var lo, hi *located
	for i, l := range live {
		if l.tablet.Table == table && (model.RowRange{Start: l.tablet.Range.GetStart(), End: l.tablet.Range.GetEnd()}).Contains(row) {
			lo = &live[i]
		}
	}
	if lo == nil {
		return merged{}, status.Errorf(codes.Unavailable, "the tablet of %q holding row %q is not served right now (it is being moved or recovered); try again in a few seconds", table, row)
	}
	end := lo.tablet.Range.GetEnd()
	if len(end) == 0 {
		return merged{}, status.Errorf(codes.FailedPrecondition, "the tablet [%q, end) of %q holding row %q is the table's last: it has no right neighbour to merge with", lo.tablet.Range.GetStart(), table, row)
	}
	for i, l := range live {
		if l.tablet.Table == table && bytes.Equal(l.tablet.Range.GetStart(), end) {
			hi = &live[i]
		}
	}
	if hi == nil {
		return merged{}, status.Errorf(codes.Unavailable, "the tablet of %q after %q (its right neighbour) is not served right now (it is being moved or recovered); try again in a few seconds", table, end)
	}
	var out merged
	if lo.server.ID != hi.server.ID {
		from, to := *hi, lo.server
		if lo.tablet.SizeBytes < hi.tablet.SizeBytes {
			from, to = *lo, hi.server
		}
		for _, s := range []Server{from.server, to} {
			if s.Misses > 0 {
				return merged{}, status.Errorf(codes.Unavailable, "server %s does not answer the master; try again once it does or its tablets are reassigned", s.ID)
			}
		}
		if err := m.Move(ctx, from.server, to, from.tablet); err != nil {
			return merged{}, fmt.Errorf("move tablet %d of %q from %s to %s before the merge (the master reassigns it if the move stopped half-way): %w",
				from.tablet.Id, table, from.server.ID, to.ID, statusOnly(err))
		}
		out.moved = &from
		// Ids are per server: find both tablets on the target again.
		resp, err := m.listTablets(ctx, to.Addr)
		if err != nil {
			return merged{}, status.Errorf(codes.Unavailable, "server %s does not answer after the move: %v", to.ID, err)
		}
		lo, hi = nil, nil
		for _, t := range resp.Tablets {
			if t.Table != table {
				continue
			}
			if bytes.Equal(t.Range.GetEnd(), end) {
				lo = &located{server: to, tablet: t}
			}
			if bytes.Equal(t.Range.GetStart(), end) {
				hi = &located{server: to, tablet: t}
			}
		}
		if lo == nil || hi == nil {
			return merged{}, status.Errorf(codes.Unavailable, "the tablets of %q around %q are not both on %s after the move; try again in a few seconds", table, end, to.ID)
		}
	}
	t, err := m.merge(ctx, lo.server, lo.tablet, hi.tablet, "merged tablets on request")
	if err != nil {
		return merged{}, fmt.Errorf("merge tablets %d and %d of %q on server %s: %w", lo.tablet.Id, hi.tablet.Id, table, lo.server.ID, statusOnly(err))
	}
	out.merged = located{server: lo.server, tablet: t}
	return out, nil
}

// CompactTablets implements masterpb.MasterServer: it compacts the tablets
// of a table, one at a time per server, and streams the progress.
func (a AdminServer) CompactTablets(req *masterpb.CompactTabletsRequest, stream masterpb.Master_CompactTabletsServer) error {
	ctx := stream.Context()
	m := a.M
	if err := m.checkTable(ctx, req.Table); err != nil {
		return asStatus(err)
	}
	var picked []located
	if ref := req.Tablet; ref.GetServer() != "" || ref.GetTable() != "" {
		r := &masterpb.TabletRef{Server: ref.Server, Id: ref.Id, Table: req.Table, Row: ref.Row}
		l, err := m.findTablet(ctx, r)
		if err != nil {
			return asStatus(err)
		}
		picked = append(picked, l)
	} else {
		for _, l := range m.liveTablets(ctx) {
			if l.tablet.Table == req.Table {
				picked = append(picked, l)
			}
		}
		if len(picked) == 0 {
			return status.Errorf(codes.Unavailable, "no tablet of %q is served right now; try again in a few seconds", req.Table)
		}
	}
	c := &compaction{m: m, table: req.Table, tablets: picked, running: map[int]bool{}, sizes: make([]int64, len(picked))}
	for i, l := range picked {
		c.sizes[i] = l.tablet.SizeBytes
		c.total += l.tablet.SizeBytes
	}
	res := make(chan error, 1)
	go func() { res <- c.run(ctx) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-res:
			if err != nil {
				return asStatus(err)
			}
			p := c.progress(ctx, false)
			p.Done, p.BytesDone = true, p.BytesTotal
			return stream.Send(p)
		case <-tick.C:
			if err := stream.Send(c.progress(ctx, true)); err != nil {
				return err
			}
		}
	}
}

// compaction is one CompactTablets call.
type compaction struct {
	m       *Master
	table   string
	tablets []located
	total   int64

	mu      sync.Mutex
	running map[int]bool // index into tablets
	// sizes are the tablets' bytes: their size when picked, or the input
	// their server reports once it compacts (which counts the flushed
	// memtable too).
	sizes     []int64
	done      int
	doneBytes int64
}

// run compacts the tablets, the servers in parallel and each server's one
// at a time; it stops at the first error.
func (c *compaction) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	byServer := map[string][]int{}
	for i, l := range c.tablets {
		byServer[l.server.ID] = append(byServer[l.server.ID], i)
	}
	errs := make(chan error, len(byServer))
	for _, idx := range byServer {
		go func() {
			for _, i := range idx {
				if err := c.one(ctx, i); err != nil {
					cancel()
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range byServer {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (c *compaction) one(ctx context.Context, i int) error {
	l := c.tablets[i]
	cli, err := c.m.stub(l.server.Addr)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.running[i] = true
	c.mu.Unlock()
	resp, err := cli.CompactTablet(ctx, &pb.CompactTabletRequest{Table: l.tablet.Table, Id: l.tablet.Id})
	c.mu.Lock()
	delete(c.running, i)
	if err == nil {
		if resp.InputBytes > c.sizes[i] {
			c.total += resp.InputBytes - c.sizes[i]
			c.sizes[i] = resp.InputBytes
		}
		c.done++
		c.doneBytes += c.sizes[i]
	}
	c.mu.Unlock()
	if err != nil {
		if s, ok := status.FromError(err); ok && s.Code() == codes.FailedPrecondition && strings.HasPrefix(s.Message(), "not serving") {
			return status.Errorf(codes.Aborted, "tablet %d of %q on %s moved or split during the compaction (%s); run the compaction again",
				l.tablet.Id, l.tablet.Table, l.server.ID, s.Message())
		}
		return fmt.Errorf("compact tablet %d of %q on %s: %w", l.tablet.Id, l.tablet.Table, l.server.ID, statusOnly(err))
	}
	c.m.event(EventCompaction, slog.LevelInfo, "major compaction on request done", slog.String("range", fmt.Sprintf("[%q,%q)", l.tablet.Range.GetStart(), l.tablet.Range.GetEnd())),
		slog.String("table", l.tablet.Table), slog.String("server", l.server.ID))
	return nil
}

// progress adds the running tablets' progress (asked of their servers if
// poll is set) to the finished ones'.
func (c *compaction) progress(ctx context.Context, poll bool) *masterpb.CompactTabletsProgress {
	c.mu.Lock()
	running := make([]int, 0, len(c.running))
	for i := range c.running {
		running = append(running, i)
	}
	c.mu.Unlock()
	var runningDone int64
	if poll {
		for _, i := range running {
			l := c.tablets[i]
			resp, err := c.m.listTablets(ctx, l.server.Addr)
			if err != nil {
				continue
			}
			for _, t := range resp.Tablets {
				if t.Id != l.tablet.Id || t.CompactionTotalBytes <= 0 {
					continue
				}
				c.mu.Lock()
				if t.CompactionTotalBytes > c.sizes[i] {
					c.total += t.CompactionTotalBytes - c.sizes[i]
					c.sizes[i] = t.CompactionTotalBytes
				}
				runningDone += c.sizes[i] * t.CompactionDoneBytes / t.CompactionTotalBytes
				c.mu.Unlock()
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := &masterpb.CompactTabletsProgress{TabletsDone: int32(c.done), TabletsTotal: int32(len(c.tablets)),
		BytesDone: min(c.doneBytes+runningDone, c.total), BytesTotal: c.total}
	return p
}
