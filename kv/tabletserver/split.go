package tabletserver

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
)

// Splits (Bigtable §5.1): the store splits a tablet that has grown past
// its threshold and commits the split in METADATA through the server's
// Catalog (see catalog.go):
//
//  1. the lower child's row, which is new (its key is the split row);
//  2. the upper child's row, which has the parent's key, now with the
//     split row as its start.
//
// Between the two writes, the parent's row still covers the upper half
// with the old start, which is harmless: this server serves both halves.
// Then the server reports the split to the master (Options.ReportSplit).
// A lost report is harmless too: the master's next scan of the servers'
// tablets finds the split.

// splitQueueLen bounds the splits waiting to be recorded.
const splitQueueLen = 1024

// SplitHook is what the store's Events.Split should call: it queues the
// split for its report and never blocks. A report dropped from a full
// queue is found by the master's scan.
func (s *Server) SplitHook(parent uint64, children [2]uint64, key []byte) {
	select {
	case s.splits <- children:
	default:
		s.opts.Logger.Warn("too many splits to report; the master's scan will find the split", slog.String("server", s.opts.ID), slog.String("split", fmt.Sprintf("%q", key)))
	}
}

// KeepWhole tells the store which tablet never splits: the root tablet.
func KeepWhole(table string, r model.RowRange) bool {
	return table == client.MetaTable && len(r.Start) == 0
}

// reportSplits tells the master of queued splits until the server stops.
// The store has already recorded each split in METADATA.
func (s *Server) reportSplits() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case children := <-s.splits:
			var halves [2]model.RowRange
			table := ""
			for i, id := range children {
				t, err := s.opts.Store.Tablet(id)
				if err != nil {
					continue // split or merged again since; that event reports it
				}
				halves[i], table = t.Range(), t.Table()
			}
			if table == "" || s.opts.ReportSplit == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.opts.ReportSplit(ctx, s.opts.ID, table, halves[0], halves[1]); err != nil {
				s.opts.Logger.Warn("report a split to the master failed (its scan will find it)", slog.String("server", s.opts.ID), slog.String("table", table), slog.Any("err", err))
			}
			cancel()
		}
	}
}
