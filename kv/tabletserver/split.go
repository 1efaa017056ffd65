package tabletserver

import (
	"context"
	"time"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
)

// Splits (Bigtable §5.1): the store splits a tablet that has grown past
// its threshold; the server then commits the split in METADATA, in the
// order the splits happened:
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
// split for recording and never blocks. A split dropped from a full queue
// leaves the parent's row covering both halves, which still locates them.
func (s *Server) SplitHook(parent uint64, children [2]uint64, key []byte) {
	select {
	case s.splits <- children:
	default:
		s.opts.Logf("tabletserver %s: too many splits to record; the split at %q stays unrecorded", s.opts.ID, key)
	}
}

// KeepWhole tells the store which tablet never splits: the root tablet.
func KeepWhole(table string, r model.RowRange) bool {
	return table == client.MetaTable && len(r.Start) == 0
}

// recordSplits writes queued splits into METADATA until the server stops.
func (s *Server) recordSplits() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case children := <-s.splits:
			var halves [2]model.RowRange
			table := ""
			recorded := true
			for i, id := range children {
				t, ok := s.recordTablet(id)
				if !ok {
					recorded = false
					continue
				}
				halves[i], table = t.Range(), t.Table()
			}
			if recorded && s.opts.ReportSplit != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := s.opts.ReportSplit(ctx, s.opts.ID, table, halves[0], halves[1]); err != nil {
					s.opts.Logf("tabletserver %s: report a split of %q to the master (its scan will find it): %v", s.opts.ID, table, err)
				}
				cancel()
			}
		}
	}
}

// recordTablet writes a tablet's METADATA row, retrying until it succeeds
// or the server stops. It reports the tablet and whether it recorded it.
func (s *Server) recordTablet(id uint64) (*tablet.Tablet, bool) {
	t, err := s.opts.Store.Tablet(id)
	if err != nil {
		return nil, false // split or merged again since; a later event records it
	}
	r := t.Range()
	d := model.TabletDescriptor{Table: t.Table(), Start: r.Start, End: r.End, Server: s.opts.ID, Addr: s.opts.Addr}
	if d.Table == client.MetaTable {
		d.Table = "" // METADATA's own tablets are described in the root tablet
	}
	m, err := d.Mutation(model.ServerTimestamp)
	if err != nil {
		s.opts.Logf("tabletserver %s: tablet %d: %v", s.opts.ID, id, err)
		return nil, false
	}
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.opts.Meta.Apply(ctx, client.MetaTable, m)
		cancel()
		if err == nil {
			return t, true
		}
		s.opts.Logf("tabletserver %s: record tablet %d in METADATA (will retry): %v", s.opts.ID, id, err)
		select {
		case <-s.stop:
			return nil, false
		case <-time.After(backoff):
		}
	}
}
