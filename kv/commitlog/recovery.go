package commitlog

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strconv"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// Partitioning a dead server's log (Bigtable §6, "Commit-log
// implementation"): the log interleaves the records of every tablet the
// server held, and each of those tablets may be loaded by a different
// server. Rather than have each new server read the whole log and skip
// what is not its own, the log is read once and split by tablet:
//
//	out/<tablet>/   a log chain of that tablet's records, in the order the
//	                dead server wrote them (so in sequence order)
//	out/DONE        written last; a partition without it is incomplete
//
// The paper sorts by (table, row, sequence); splitting by tablet keeps what
// a loading server needs (its tablet's records in sequence order) with one
// read and one write of the log and no sort.

// doneName marks a complete partition.
const doneName = "DONE"

// Partition reads the log in dir once and writes each tablet's records
// into out/<tablet>/, skipping records below the tablet's redo point in
// from (a tablet absent from from keeps all its records; a nil from keeps
// every tablet). A complete partition already in out is reused; an
// incomplete one is removed and redone. It returns the tablets written.
func Partition(ctx context.Context, fs dfs.FS, dir, out string, from map[uint64]uint64, opts Options) ([]uint64, error) {
	if done, err := complete(fs, out); err != nil {
		return nil, err
	} else if done {
		return partitionTablets(fs, out)
	}
	if err := clearPartition(fs, out); err != nil {
		return nil, model.IOError("remove incomplete log partition", err)
	}
	writers := map[uint64]*Writer{}
	var order []uint64
	closeAll := func() error {
		var errs []error
		for _, id := range order {
			errs = append(errs, writers[id].Close(ctx))
		}
		return errors.Join(errs...)
	}
	st, err := Replay(ctx, fs, dir, 0, func(rec *Record) error {
		if redo, ok := from[rec.Tablet]; ok && rec.LSN < redo {
			return nil
		}
		w := writers[rec.Tablet]
		if w == nil {
			w = NewWriter(fs, dfs.Join(out, strconv.FormatUint(rec.Tablet, 10)), opts)
			if err := w.Open(ctx, &State{}, 1); err != nil {
				return err
			}
			writers[rec.Tablet] = w
			order = append(order, rec.Tablet)
		}
		_, err := w.Append(ctx, rec)
		return err
	})
	if err == nil && st.Corruption != nil {
		err = st.Corruption
	}
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("partition %s: %w", dir, err)
	}
	// Close syncs every writer; only then is the partition complete.
	if err := closeAll(); err != nil {
		return nil, fmt.Errorf("partition %s: %w", dir, err)
	}
	if err := fs.MkdirAll(out); err != nil {
		return nil, model.IOError("create log partition", err)
	}
	if err := dfs.WriteFile(fs, dfs.Join(out, doneName), nil); err != nil {
		return nil, model.IOError("finish log partition", err)
	}
	return order, nil
}

// clearPartition removes the files an interrupted partition left, so that
// no stale segment joins a new chain.
func clearPartition(fs dfs.FS, out string) error {
	names, err := fs.List(out)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		sub := dfs.Join(out, n)
		files, err := fs.List(sub)
		if err != nil {
			// Not a directory: a plain file of the partition.
			if err := fs.Remove(sub); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				return err
			}
			continue
		}
		for _, f := range files {
			if err := fs.Remove(dfs.Join(sub, f)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				return err
			}
		}
	}
	return fs.SyncDir(out)
}

func complete(fs dfs.FS, out string) (bool, error) {
	_, err := fs.Stat(dfs.Join(out, doneName))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, iofs.ErrNotExist):
		return false, nil
	}
	return false, model.IOError("look for a log partition", err)
}

func partitionTablets(fs dfs.FS, out string) ([]uint64, error) {
	names, err := fs.List(out)
	if err != nil {
		return nil, model.IOError("list log partition", err)
	}
	var ids []uint64
	for _, n := range names {
		if id, err := strconv.ParseUint(n, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
