package tabletserver

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cellardb/cellar/kv/tablet"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Operator work the master asks for on an operator's behalf: forced splits
// and major compactions. A forced split takes the same path as an
// automatic one (Store.Split records both halves in METADATA and the split
// hook reports it), so the master learns of it the same way.

// servedTablet returns tablet id of table, or a not-serving status.
func (s *Server) servedTablet(table string, id uint64) (*tablet.Tablet, error) {
	t, err := s.opts.Store.Tablet(id)
	if err != nil || t.Table() != table {
		return nil, notServing("tablet %d of %q is not served by %s", id, table, s.opts.ID)
	}
	return t, nil
}

// SplitTablet splits a tablet at a row or at its midpoint.
func (s *Server) SplitTablet(ctx context.Context, req *pb.SplitTabletRequest) (*pb.SplitTabletResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "SplitTablet"); err != nil {
		return nil, err
	}
	t, err := s.servedTablet(req.Table, req.Id)
	if err != nil {
		return nil, err
	}
	if KeepWhole(t.Table(), t.Range()) {
		return nil, invalid("the root tablet of METADATA never splits")
	}
	var halves [2]*tablet.Tablet
	if len(req.Key) == 0 {
		halves, err = s.opts.Store.SplitAtMidpoint(ctx, req.Id)
	} else {
		halves, err = s.opts.Store.Split(ctx, req.Id, req.Key)
	}
	if err != nil {
		return nil, toStatus(err)
	}
	if err := s.stillServing(); err != nil {
		return nil, err
	}
	s.opts.Logger.Info("split a tablet on request", slog.Uint64("tablet", req.Id), slog.Any("range", t.Range()), slog.String("table", t.Table()),
		slog.String("split", fmt.Sprintf("%q", halves[1].Range().Start)))
	return &pb.SplitTabletResponse{Tablets: []*pb.TabletInfo{tabletInfo(halves[0]), tabletInfo(halves[1])}}, nil
}

// CompactTablet runs a major compaction of a tablet and waits for it.
func (s *Server) CompactTablet(ctx context.Context, req *pb.CompactTabletRequest) (*pb.CompactTabletResponse, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if err := s.fenceAdmin(ctx, "CompactTablet"); err != nil {
		return nil, err
	}
	t, err := s.servedTablet(req.Table, req.Id)
	if err != nil {
		return nil, err
	}
	// The memtable first, so that the compaction covers every write
	// acknowledged before the request.
	if err := t.Flush(ctx); err != nil {
		return nil, toStatus(err)
	}
	in := int64(t.Size())
	if err := t.Compact(ctx, true); err != nil {
		return nil, toStatus(err)
	}
	if err := s.stillServing(); err != nil {
		return nil, err
	}
	s.opts.Logger.Info("major compaction on request done", slog.Uint64("tablet", t.ID()), slog.Any("range", t.Range()), slog.String("table", t.Table()))
	return &pb.CompactTabletResponse{Tablet: tabletInfo(t), InputBytes: in}, nil
}
