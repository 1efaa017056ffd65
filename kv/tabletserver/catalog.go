package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
)

// The catalog of a server's store is METADATA, at three levels (Bigtable
// §5.1): a user tablet's descriptor is a row of a METADATA tablet, a
// METADATA tablet's is a row of the root tablet, and the root tablet's is
// the root file in the lock service. Each record of the store (a flush,
// compaction, split, merge or load) writes there with this server as the
// tablet's location. A server that is not serving (its lock is lost)
// records nothing, so a fenced server cannot undo the work of the server
// that took over its tablets.

// RootWriter stores the root tablet's descriptor in the lock service.
type RootWriter interface {
	WriteRoot(ctx context.Context, descriptor []byte) error
}

// Catalog is the store's tablet.Catalog; New binds it to its server. The
// store must exist before the server does, hence the indirection.
type Catalog struct {
	srv atomic.Pointer[Server]
}

// recordTimeout bounds one record, so that a METADATA tablet that does
// not answer fails the flush (which is retried) instead of blocking it.
const recordTimeout = 30 * time.Second

// Record implements tablet.Catalog.
func (c *Catalog) Record(ctx context.Context, put, drop []tablet.Descriptor) error {
	s := c.srv.Load()
	if s == nil {
		return errors.New("tabletserver: the store records before its server exists")
	}
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	for _, d := range put {
		if err := s.serving(); err != nil {
			return fmt.Errorf("%w: %v", model.ErrNotServing, err)
		}
		md := model.TabletDescriptor{Table: metaName(d.Table), Start: d.Range.Start, End: d.Range.End,
			Server: s.opts.ID, Addr: s.opts.Addr, Files: d.Files, Redo: map[string]uint64{s.opts.ID: d.RedoLSN},
			MaxTS: d.MaxTS, LogTablet: d.ID, FlushedSeq: d.FlushedSeq, Event: eventText(s.opts.ID, d.Event)}
		if d.Table == client.MetaTable && len(d.Range.Start) == 0 {
			b, err := model.RootFileContents(&md)
			if err != nil {
				return err
			}
			if err := s.opts.Root.WriteRoot(ctx, b); err != nil {
				return fmt.Errorf("write the root tablet's descriptor: %w", err)
			}
			continue
		}
		m, err := md.Mutation(model.ServerTimestamp)
		if err != nil {
			return err
		}
		if err := s.opts.Meta.Apply(ctx, client.MetaTable, m); err != nil {
			return fmt.Errorf("record tablet %v of %q in METADATA: %w", d.Range, d.Table, err)
		}
	}
	for _, d := range drop {
		if err := s.serving(); err != nil {
			return fmt.Errorf("%w: %v", model.ErrNotServing, err)
		}
		m := &model.RowMutation{Row: model.MetaKey(metaName(d.Table), d.Range.End), Mutations: []model.Mutation{model.DeleteRow()}}
		if err := s.opts.Meta.Apply(ctx, client.MetaTable, m); err != nil {
			return fmt.Errorf("drop tablet %v of %q from METADATA: %w", d.Range, d.Table, err)
		}
	}
	return nil
}

// metaName is a table's name in METADATA keys: METADATA's own tablets use
// the empty name, so the root tablet holds exactly their rows.
func metaName(table string) string {
	if table == client.MetaTable {
		return ""
	}
	return table
}

func eventText(server, event string) string {
	if event == "" {
		return ""
	}
	return event + " on " + server
}
