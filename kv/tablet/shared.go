package tablet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cellardb/cellar/kv/commitlog"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// Shared mode (Bigtable §5.2-5.3): the store is one tablet server's part of
// a cluster whose servers all mount one dfs root. Under that root,
//
//	logs/<name>/          this store's commit log
//	logs/<name>.lock      held while the store is open
//	sst/<name>/<n>.sst    the SSTables this store wrote
//
// where name is the server's incarnation, new at every start, so that a
// restarted server never writes into the log of its dead predecessor.
// There are no STATE files: every change of a tablet's files, redo point
// or range is committed by writing its descriptor into the Catalog
// (METADATA), and only then applied in memory. A store starts with no
// tablets; the master assigns them (Load) and moves them away (Unload).
//
// The store never deletes an SSTable in shared mode: files are shared by
// tablets on other servers after moves and splits, and only the master,
// which sees all of METADATA, can tell when one is garbage (mark and
// sweep). LowWater tells the master which of this store's files may still
// be committed.

// Shared configures a store for shared mode.
type Shared struct {
	// Name is the store's incarnation; it names its log and SSTable
	// directories.
	Name string
	// Catalog records the tablets' descriptors.
	Catalog Catalog
	// NoStall names tables whose writes never wait for the store's memory
	// limit: the catalog's own tables, whose writes the flushes that free
	// memory wait for.
	NoStall func(table string) bool
}

// Catalog is where a store in shared mode commits its tablets'
// descriptors.
type Catalog interface {
	// Record durably writes the descriptors of put, in order, and then
	// removes those of drop. It is the commit point of every flush,
	// compaction, split, merge and load.
	Record(ctx context.Context, put, drop []Descriptor) error
}

// Descriptor is what the catalog holds of a tablet.
type Descriptor struct {
	// ID is the tablet's id in this store, which its log records carry.
	ID    uint64
	Table string
	Range model.RowRange
	// Files maps a locality group to its SSTables, newest first.
	Files map[string][]model.TabletFile
	// RedoLSN: the tablet's records below it in this store's log are all
	// in Files.
	RedoLSN uint64
	// FlushedSeq is the newest sequence number Files hold.
	FlushedSeq uint64
	// MaxTS is the newest timestamp the tablet has held.
	MaxTS int64
	// Event says why the descriptor is written, for the tablet's event log.
	Event string
}

func (s *Store) shared() bool { return s.opts.Shared != nil }

func (s *Store) describe(ts *tabletState, event string) Descriptor {
	d := Descriptor{ID: ts.ID, Table: ts.Table, Range: ts.rowRange(), Files: map[string][]model.TabletFile{},
		RedoLSN: ts.RedoLSN, FlushedSeq: ts.FlushedSeq, MaxTS: ts.MaxTS, Event: event}
	for g, files := range ts.Groups {
		out := make([]model.TabletFile, 0, len(files))
		for _, f := range files {
			out = append(out, model.TabletFile{Path: s.fileName(f), Size: f.Size, Smallest: f.Smallest, Largest: f.Largest,
				MinSeq: f.MinSeq, MaxSeq: f.MaxSeq, Entries: f.Entries, Deletions: f.Deletions, MaxTS: f.MaxTS})
		}
		d.Files[g] = out
	}
	return d
}

// record commits descriptors of the given states in the catalog.
func (s *Store) record(ctx context.Context, event string, put []tabletState, drop []tabletState) error {
	var p, d []Descriptor
	for i := range put {
		p = append(p, s.describe(&put[i], event))
	}
	for i := range drop {
		d = append(d, s.describe(&drop[i], ""))
	}
	if err := s.opts.Shared.Catalog.Record(ctx, p, d); err != nil {
		return fmt.Errorf("record in the catalog: %w", err)
	}
	return nil
}

// recordRetries bounds how long a split or merge keeps retrying its
// records before it gives its tablets up.
const recordRetries = time.Minute

// recordOrAbandon records the rows of a split or merge, which take more
// than one write. A failed record may have landed in part (or in full:
// its answer may be what was lost), and METADATA then no longer
// describes the tablets as they are served: writes logged under the
// parents' ids would be missed by a recovery that goes by the new rows.
// So the records are retried (they are idempotent) while writes are held;
// if they keep failing, or the server is fenced, the parents stop serving
// with everything flushed, and the master reassigns their rows, which
// then need no log. The caller holds the parents' commit mutexes; stateMu
// is not held.
func (s *Store) recordOrAbandon(ctx context.Context, event string, put, drop []tabletState, parents ...*Tablet) error {
	deadline := time.Now().Add(recordRetries)
	backoff := 10 * time.Millisecond
	for {
		err := s.record(ctx, event, put, drop)
		if err == nil {
			return nil
		}
		if errors.Is(err, model.ErrNotServing) || ctx.Err() != nil || time.Now().After(deadline) || s.closed.Load() {
			for _, p := range parents {
				p.retired.Store(true)
			}
			s.unregister(parents...)
			s.stateMu.Lock()
			var ids []uint64
			for _, p := range parents {
				ids = append(ids, p.id)
			}
			s.replaceStates(ids, nil)
			s.stateMu.Unlock()
			for _, p := range parents {
				s.retire(p)
			}
			return fmt.Errorf("%w: gave the tablets up after a failed record (%s): %v", model.ErrNotServing, event, err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, time.Second)
	}
}

// editShared is edit in shared mode: the new state is recorded in the
// catalog, outside the store's state mutex (the record may go to a
// tablet of this very store), and serialized per tablet.
func (s *Store) editShared(ctx context.Context, t *Tablet, event string, stateEdit func(*tabletState), versionEdit func(*version)) error {
	t.editMu.Lock()
	defer t.editMu.Unlock()
	cur := s.tabletState(t.id)
	if cur == nil || t.retired.Load() {
		return t.notServing()
	}
	next := cloneTabletState(cur)
	stateEdit(&next)
	if err := s.record(ctx, event, []tabletState{next}, nil); err != nil {
		return err
	}
	s.stateMu.Lock()
	s.replaceStates([]uint64{t.id}, []tabletState{next})
	s.stateMu.Unlock()
	t.editVersion(versionEdit)
	return nil
}

// replaceStates removes the states of ids and adds add, in memory only.
// stateMu must be held.
func (s *Store) replaceStates(ids []uint64, add []tabletState) {
	next := *s.state
	next.Tablets = nil
	for _, ts := range s.state.Tablets {
		if !slices.Contains(ids, ts.ID) {
			next.Tablets = append(next.Tablets, ts)
		}
	}
	next.Tablets = append(next.Tablets, add...)
	s.setState(&next)
}

// reserveIDs moves the tablet id counter to next. stateMu must be held.
func (s *Store) reserveIDs(next uint64) {
	st := *s.state
	st.NextTablet = max(st.NextTablet, next)
	s.setState(&st)
}

// commitStates makes next the store's state: in STATE mode by writing it,
// in shared mode in memory only (the caller has recorded it). stateMu
// must be held.
func (s *Store) commitStates(next *storeState) error {
	if s.shared() {
		s.setState(next)
		return nil
	}
	return s.saveLocked(next)
}

// LowWater returns the number below which every SSTable this store wrote
// is either recorded in the catalog or abandoned: the master's file GC may
// delete such a file once no descriptor names it.
func (s *Store) LowWater() uint64 {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	low := s.nextFile.Load()
	for n := range s.pending {
		low = min(low, n)
	}
	return low
}

func (s *Store) addPending(n uint64) {
	s.pendingMu.Lock()
	s.pending[n] = struct{}{}
	s.pendingMu.Unlock()
}

// donePending says the files are recorded or abandoned.
func (s *Store) donePending(ts ...*table) {
	s.pendingMu.Lock()
	for _, t := range ts {
		if t != nil {
			delete(s.pending, t.meta.Num)
		}
	}
	s.pendingMu.Unlock()
}

// FilesInUse returns the paths of the SSTables the store's tablets read or
// name in their state. A record that failed after it landed can leave
// METADATA naming other files than the store uses until its next record;
// the master's GC keeps these too.
func (s *Store) FilesInUse() []string {
	seen := map[string]bool{}
	s.tablesMu.Lock()
	for p := range s.byPath {
		seen[p] = true
	}
	s.tablesMu.Unlock()
	s.stateMu.Lock()
	for _, ts := range s.state.Tablets {
		for _, files := range ts.Groups {
			for _, f := range files {
				seen[s.fileName(f)] = true
			}
		}
	}
	s.stateMu.Unlock()
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	return out
}

// Name returns the store's incarnation in shared mode ("" otherwise).
func (s *Store) Name() string {
	if s.shared() {
		return s.opts.Shared.Name
	}
	return ""
}

// LoadSpec says what tablet to load and where its unflushed writes are.
type LoadSpec struct {
	Table  string
	Range  model.RowRange
	Schema model.Schema
	// Files maps a locality group to its SSTables, newest first.
	Files map[string][]model.TabletFile
	// FlushedSeq and MaxTS come from the tablet's descriptor.
	FlushedSeq uint64
	MaxTS      int64
	// Replay, if set, is a log chain (a piece of a dead server's log, see
	// commitlog.Partition) whose records of tablet ReplayTablet above
	// FlushedSeq are the tablet's unflushed writes.
	Replay       string
	ReplayTablet uint64
	// Event says why, for the tablet's event log.
	Event string
}

// Load starts serving a tablet (shared mode): it opens the tablet's
// SSTables, replays its unflushed writes and flushes them (so that the
// tablet needs no other server's log again), records its descriptor, with
// this store as its location, and registers it.
func (s *Store) Load(ctx context.Context, spec LoadSpec) (*Tablet, error) {
	if !s.shared() {
		return nil, fmt.Errorf("%w: Load needs a store in shared mode", model.ErrFailedPrecondition)
	}
	if spec.Table == "" || strings.ContainsAny(spec.Table, "/\x00") {
		return nil, fmt.Errorf("%w: bad table name %q", model.ErrInvalidArgument, spec.Table)
	}
	si, err := compileSchema(spec.Schema)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	for _, x := range s.byTable[spec.Table] {
		if _, ok := x.rng.Intersect(spec.Range); ok {
			s.mu.RUnlock()
			return nil, fmt.Errorf("%w: tablet %v of %q overlaps tablet %d %v, which this server serves", model.ErrFailedPrecondition, spec.Range, spec.Table, x.id, x.rng)
		}
	}
	s.mu.RUnlock()

	s.stateMu.Lock()
	id := s.state.NextTablet
	next := *s.state
	next.NextTablet++
	s.setState(&next)
	s.stateMu.Unlock()
	ts := tabletState{ID: id, Table: spec.Table, Start: spec.Range.Start, End: spec.Range.End, Schema: spec.Schema,
		Groups: map[string][]fileMeta{}, RedoLSN: s.log.NextLSN(), FlushedSeq: spec.FlushedSeq, MaxTS: spec.MaxTS, LastMajor: s.nowMicros()}
	files := make([][]*table, len(si.groups))
	release := func() {
		for _, g := range files {
			for _, f := range g {
				f.unref()
			}
		}
	}
	for g, lg := range si.groups {
		for _, tf := range spec.Files[lg.Name] {
			tb, err := s.openPath(tf, lg.InMemory)
			if err != nil {
				release()
				return nil, err
			}
			tb.ref()
			files[g] = append(files[g], tb)
			ts.Groups[lg.Name] = append(ts.Groups[lg.Name], tb.meta)
			ts.FlushedSeq = max(ts.FlushedSeq, tf.MaxSeq)
			ts.MaxTS = max(ts.MaxTS, tf.MaxTS)
		}
	}
	t := s.newServingTablet(&ts, si, files)
	release() // newServingTablet took its own references
	s.stateMu.Lock()
	s.replaceStates(nil, []tabletState{ts})
	s.stateMu.Unlock()
	fail := func(err error) (*Tablet, error) {
		s.stateMu.Lock()
		s.replaceStates([]uint64{id}, nil)
		s.stateMu.Unlock()
		t.retired.Store(true)
		s.retire(t)
		return nil, err
	}
	if spec.Replay != "" {
		prog, done := s.startRecovery(spec)
		defer done()
		if err := t.replay(ctx, spec.Replay, spec.ReplayTablet, prog); err != nil {
			return fail(err)
		}
	}
	t.visible.Store(t.nextSeq - 1)
	if !t.activeMem.Empty() {
		cur := t.activeMem.ApproximateBytes()
		t.activeMem.accounted.Store(cur)
		s.memBytes.Add(cur)
		if err := t.flushForReplay(ctx, s.log.NextLSN()); err != nil {
			return fail(fmt.Errorf("flush the replayed writes of tablet %v of %q: %w", spec.Range, spec.Table, err))
		}
	}
	st := cloneTabletState(s.tabletState(id))
	if err := s.record(ctx, spec.Event, []tabletState{st}, nil); err != nil {
		return fail(err)
	}
	s.register(t)
	s.scheduleCompaction(t)
	return t, nil
}

// replay reads a log chain's records of tablet logID into the tablet's
// memtable, flushing whenever it fills.
func (t *Tablet) replay(ctx context.Context, dir string, logID uint64, prog *recovery) error {
	flushed := t.nextSeq - 1
	st, err := commitlog.Replay(ctx, t.s.fs, dir, 0, func(rec *commitlog.Record) error {
		if rec.Tablet != logID || rec.Seq <= flushed || !t.rng.Contains(rec.Mutation.Row) {
			return nil
		}
		n := uint64(len(rec.Mutation.Mutations))
		keys, values := entriesOf(rec.Mutation.Row, rec.Mutation.Mutations, rec.Seq)
		if err := t.activeMem.AddBatch(keys, values); err != nil {
			return fmt.Errorf("replay of %s LSN %d: %w", dir, rec.LSN, err)
		}
		prog.records.Add(1)
		t.nextSeq = max(t.nextSeq, rec.Seq+n)
		for _, m := range rec.Mutation.Mutations {
			if m.Kind == model.KindSetCell {
				t.maxTS = max(t.maxTS, m.Timestamp)
			}
		}
		if t.activeMem.ApproximateBytes() >= t.s.opts.MemtableSize {
			cur := t.activeMem.ApproximateBytes()
			t.activeMem.accounted.Store(cur)
			t.s.memBytes.Add(cur)
			t.visible.Store(t.nextSeq - 1)
			return t.flushForReplay(ctx, t.s.log.NextLSN())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replay %s: %w", dir, err)
	}
	if st.Corruption != nil {
		return fmt.Errorf("replay %s: %w", dir, st.Corruption)
	}
	return nil
}

// Unload stops serving a tablet for a move, with the paper's two minor
// compactions: one while the tablet still serves, then, with writes held,
// one of what arrived meanwhile. The recorded descriptor then holds every
// write, so the next server loads the tablet without any log.
func (s *Store) Unload(ctx context.Context, id uint64) (Descriptor, error) {
	t, err := s.Tablet(id)
	if err != nil {
		return Descriptor{}, err
	}
	t.maint.Lock()
	defer t.maint.Unlock()
	if t.retired.Load() {
		return Descriptor{}, t.notServing()
	}
	if err := t.Flush(ctx); err != nil {
		return Descriptor{}, err
	}
	t.commitMu.Lock()
	if err := t.flushAllLocked(ctx); err != nil {
		t.commitMu.Unlock()
		return Descriptor{}, err
	}
	t.retired.Store(true)
	t.commitMu.Unlock()
	// A flush that the background queued may still be recording; wait
	// for it, so the descriptor below is the last one.
	t.editMu.Lock()
	st := cloneTabletState(s.tabletState(id))
	s.stateMu.Lock()
	s.replaceStates([]uint64{id}, nil)
	s.stateMu.Unlock()
	t.editMu.Unlock()
	s.unregister(t)
	s.retire(t)
	return s.describe(&st, ""), nil
}

// noStall reports whether the tablet's writes skip the memory limit.
func (t *Tablet) noStall() bool {
	sh := t.s.opts.Shared
	return sh != nil && sh.NoStall != nil && sh.NoStall(t.table)
}

// openPath opens an SSTable named by its path, once however many tablets
// share it; files of other stores get a number of this store.
func (s *Store) openPath(tf model.TabletFile, inMemory bool) (*table, error) {
	s.tablesMu.Lock()
	t := s.byPath[tf.Path]
	s.tablesMu.Unlock()
	if t != nil {
		return t, nil
	}
	meta := fileMeta{Num: s.nextFile.Add(1) - 1, Path: tf.Path, Size: tf.Size, Entries: tf.Entries, Deletions: tf.Deletions,
		MinSeq: tf.MinSeq, MaxSeq: tf.MaxSeq, MaxTS: tf.MaxTS, Smallest: tf.Smallest, Largest: tf.Largest}
	return s.openTable(meta, inMemory)
}

// fileName is the path of an SSTable.
func (s *Store) fileName(m fileMeta) string {
	if m.Path != "" {
		return m.Path
	}
	return s.tableName(m.Num)
}

// sharedPaths returns the log directory and the lock file.
func (s *Store) logDir() string {
	if s.shared() {
		return dfs.Join(s.dir, "logs", s.opts.Shared.Name)
	}
	return dfs.Join(s.dir, "log")
}

func (s *Store) lockName() string {
	if s.shared() {
		return dfs.Join(s.dir, "logs", s.opts.Shared.Name+".lock")
	}
	return dfs.Join(s.dir, "LOCK")
}

// backgroundCtx returns a context for background edits that ends when the
// store closes, bounded so that a catalog that does not answer cannot hold
// a tablet's edits forever.
func (s *Store) backgroundCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	stop := s.stop
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
