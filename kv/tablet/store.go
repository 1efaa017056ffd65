package tablet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellardb/cellar/kv/commitlog"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/sstable"
)

// Store holds the tablets of one tablet server: one commit log that all of
// them share, their SSTables, their durable state, the caches, and the
// background work (flushes, compactions, splits). Its directory layout:
//
//	LOCK                 held while the store is open
//	STATE-<generation>   the tablets and their files (see state.go)
//	log/                 the commit log (package commitlog)
//	sst/<number>.sst     SSTables, shared by tablets after a split
type Store struct {
	fs   dfs.FS
	dir  string
	opts Options

	lock io.Closer
	log  *commitlog.Writer

	blockCache *lru[blockKey, []byte]
	scanCache  *lru[scanKey, []kv]
	// pointReads pools the scratch memory of point reads (pointRead).
	pointReads sync.Pool
	cacheIDs   atomic.Uint64
	filesets   atomic.Uint64
	nextFile   atomic.Uint64

	stateMu sync.Mutex
	state   *storeState
	gen     uint64
	// live holds the file numbers the durable state names, rebuilt on
	// every save, so that releasing a table needs no lock.
	live atomic.Pointer[map[uint64]bool]

	mu      sync.RWMutex
	tablets map[uint64]*Tablet
	byTable map[string][]*Tablet // sorted by start row

	tablesMu sync.Mutex
	tables   map[uint64]*table
	byPath   map[string]*table

	// pending holds the numbers of SSTables being written and not yet
	// recorded or abandoned (see LowWater).
	pendingMu sync.Mutex
	pending   map[uint64]struct{}

	// bloomChecks and bloomUseful count the bloom filter probes of point
	// reads, and those that spared a file read (Stats.Bloom).
	bloomChecks, bloomUseful atomic.Int64

	memBytes   atomic.Int64
	memMu      sync.Mutex
	memChanged chan struct{}

	flushCh   chan *Tablet
	compactCh chan *Tablet
	stop      chan struct{}
	bg        sync.WaitGroup
	closed    atomic.Bool
	opened    bool
	// recovering holds the *recovery of every replay Load runs now.
	recovering sync.Map
}

// New returns a store over dir in fs. It does no I/O; Open does.
func New(fs dfs.FS, dir string, opts Options) *Store {
	s := &Store{fs: fs, dir: dir, opts: opts.Defaults()}
	s.pointReads.New = newPointRead
	return s
}

func (s *Store) sstDir() string {
	if s.shared() {
		return dfs.Join(s.dir, "sst", s.opts.Shared.Name)
	}
	return dfs.Join(s.dir, "sst")
}

func (s *Store) tableName(n uint64) string { return dfs.Join(s.sstDir(), fmt.Sprintf("%016x.sst", n)) }
func (s *Store) nowMicros() int64          { return s.opts.Clock().UnixMicro() }

// Open locks the directory, loads the tablets, replays the commit log and
// starts the background work.
func (s *Store) Open(ctx context.Context) error {
	if err := s.opts.Validate(); err != nil {
		return err
	}
	for _, d := range []string{s.dir, s.sstDir(), dfs.Join(s.dir, "logs")} {
		if err := s.fs.MkdirAll(d); err != nil {
			return model.IOError("create "+d, err)
		}
	}
	lock, err := s.fs.Lock(s.lockName())
	if err != nil {
		return fmt.Errorf("store %s is in use: %w", s.dir, err)
	}
	s.lock = lock
	if err := s.open(ctx); err != nil {
		if s.log != nil {
			s.log.Close(ctx)
		}
		s.closeTables()
		lock.Close()
		return err
	}
	s.opened = true
	return nil
}

func (s *Store) open(ctx context.Context) error {
	s.blockCache = newLRU[blockKey, []byte](s.opts.BlockCacheSize, 16)
	if s.opts.ScanCacheSize > 0 {
		s.scanCache = newLRU[scanKey, []kv](s.opts.ScanCacheSize, 16)
	}
	s.tablets = map[uint64]*Tablet{}
	s.byTable = map[string][]*Tablet{}
	s.tables = map[uint64]*table{}
	s.byPath = map[string]*table{}
	s.pending = map[uint64]struct{}{}
	s.memChanged = make(chan struct{})
	s.flushCh = make(chan *Tablet, 4096)
	s.compactCh = make(chan *Tablet, 4096)
	s.stop = make(chan struct{})

	var state *storeState
	if s.shared() {
		// A new incarnation: no tablets until the master assigns some.
		state = &storeState{NextTablet: 1, NextFile: 1}
		s.setState(state)
		s.nextFile.Store(1)
	} else {
		st, gen, err := loadState(s.fs, s.dir)
		if err != nil {
			return err
		}
		state = st
		s.gen = gen
		s.setState(state)
		if err := s.sweepStateFiles(); err != nil {
			return err
		}
		if err := s.sweepTables(); err != nil {
			return err
		}
	}
	for i := range state.Tablets {
		ts := &state.Tablets[i]
		si, err := compileSchema(ts.Schema)
		if err != nil {
			return fmt.Errorf("tablet %d in %s: %w", ts.ID, stateName(s.gen), err)
		}
		t := newTablet(s, ts, si)
		v := &version{active: t.activeMem, groups: make([][]*table, len(si.groups)), filesets: make([]uint64, len(si.groups))}
		v.refs.Store(1)
		for g, lg := range si.groups {
			for _, fm := range ts.Groups[lg.Name] {
				tb, err := s.openShared(fm, lg.InMemory)
				if err != nil {
					v.unref()
					return err
				}
				tb.ref()
				v.groups[g] = append(v.groups[g], tb)
			}
			v.filesets[g] = s.filesets.Add(1)
		}
		t.cur = v
		s.register(t)
	}
	if err := s.recover(ctx); err != nil {
		return err
	}
	s.memChangedReset()
	for i := 0; i < s.opts.CompactionConcurrency; i++ {
		s.bg.Add(1)
		go s.worker()
	}
	s.bg.Add(1)
	go s.ticker()
	for _, t := range s.Tablets() {
		s.scheduleCompaction(t)
	}
	return nil
}

// recover replays the commit log into the tablets' memtables and starts
// the log writer after it.
func (s *Store) recover(ctx context.Context) error {
	from, maxRedo := uint64(math.MaxUint64), uint64(0)
	for _, t := range s.tablets {
		st := s.tabletState(t.id)
		from = min(from, st.RedoLSN)
		maxRedo = max(maxRedo, st.RedoLSN)
	}
	replayed := 0
	logState, err := commitlog.Replay(ctx, s.fs, s.logDir(), from, func(rec *commitlog.Record) error {
		t := s.tablets[rec.Tablet]
		if t == nil || rec.Seq <= s.tabletState(t.id).FlushedSeq {
			return nil // dropped or split since, or already in an SSTable
		}
		n := uint64(len(rec.Mutation.Mutations))
		keys, values := entriesOf(rec.Mutation.Row, rec.Mutation.Mutations, rec.Seq)
		if err := t.activeMem.AddBatch(keys, values); err != nil {
			return fmt.Errorf("replay of LSN %d into tablet %d: %w", rec.LSN, t.id, err)
		}
		t.nextSeq = max(t.nextSeq, rec.Seq+n)
		for _, m := range rec.Mutation.Mutations {
			if m.Kind == model.KindSetCell {
				t.maxTS = max(t.maxTS, m.Timestamp)
			}
		}
		replayed++
		if t.activeMem.ApproximateBytes() >= s.opts.MemtableSize {
			// Flush now, so replay needs no more memory than serving does.
			return t.flushForReplay(ctx, rec.LSN+1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit log replay: %w", err)
	}
	if logState.Corruption != nil && s.opts.Events.LogCorruption != nil {
		s.opts.Events.LogCorruption(logState.Corruption)
	}
	for _, t := range s.tablets {
		t.visible.Store(t.nextSeq - 1)
		cur := t.activeMem.ApproximateBytes()
		t.activeMem.accounted.Store(cur)
		s.memBytes.Add(cur)
	}
	s.log = commitlog.NewWriter(s.fs, s.logDir(), commitlog.Options{SegmentSize: s.opts.LogSegmentSize,
		Events: commitlog.Events{Synced: s.opts.Events.LogSynced, WriteFailed: s.opts.Events.LogWriteFailed}})
	if err := s.log.Open(ctx, logState, maxRedo); err != nil {
		return err
	}
	if logState.Corruption != nil {
		// Replay stopped early. Flush what it found, so that the new chain
		// never needs the segments before the corruption again.
		for _, t := range s.Tablets() {
			if err := t.Flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushForReplay freezes the active memtable during replay, with redo as
// its redo point, and flushes it.
func (t *Tablet) flushForReplay(ctx context.Context, redo uint64) error {
	m := t.activeMem
	m.redoLSN, m.flushedSeq, m.maxTS = redo, t.nextSeq-1, t.maxTS
	t.activeMem = newMem()
	nv := t.cur.clone()
	nv.active = t.activeMem
	nv.frozen = append([]*mem{m}, nv.frozen...)
	t.mu.Lock()
	t.install(nv)
	t.mu.Unlock()
	return t.flushFrozen(ctx)
}

// sweepStateFiles removes temporary and superseded state files.
func (s *Store) sweepStateFiles() error {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return model.IOError("list "+s.dir, err)
	}
	for _, n := range names {
		g, ok := parseStateName(strings.TrimSuffix(n, ".tmp"))
		if !ok || (!strings.HasSuffix(n, ".tmp") && g+1 >= s.gen) {
			continue
		}
		if err := s.fs.Remove(dfs.Join(s.dir, n)); err != nil {
			return model.IOError("remove "+n, err)
		}
	}
	return nil
}

// sweepTables deletes SSTables that no tablet references: outputs of
// compactions that did not commit, and inputs whose deletion a crash
// interrupted. It also moves the file counter past every existing file.
func (s *Store) sweepTables() error {
	live := map[uint64]bool{}
	for _, ts := range s.state.Tablets {
		for _, files := range ts.Groups {
			for _, f := range files {
				live[f.Num] = true
			}
		}
	}
	names, err := s.fs.List(s.sstDir())
	if err != nil {
		return model.IOError("list "+s.sstDir(), err)
	}
	next := s.state.NextFile
	for _, n := range names {
		num, err := strconv.ParseUint(strings.TrimSuffix(n, ".sst"), 16, 64)
		if err != nil || !strings.HasSuffix(n, ".sst") {
			continue
		}
		next = max(next, num+1)
		if !live[num] {
			if err := s.fs.Remove(dfs.Join(s.sstDir(), n)); err != nil {
				return model.IOError("remove orphan "+n, err)
			}
		}
	}
	s.nextFile.Store(max(next, 1))
	return nil
}

// openTable opens a newly written SSTable.
func (s *Store) openTable(meta fileMeta, inMemory bool) (*table, error) {
	name := s.fileName(meta)
	f, err := s.fs.Open(name)
	if err != nil {
		return nil, model.IOError("open "+name, err)
	}
	r, err := sstable.Open(f, name, sstable.ReaderOptions{Cache: blockCache{s.blockCache}, CacheID: s.cacheIDs.Add(1), InMemory: inMemory})
	if err != nil {
		f.Close()
		return nil, err
	}
	t := &table{meta: meta, r: r, s: s}
	s.tablesMu.Lock()
	s.tables[meta.Num] = t
	s.byPath[name] = t
	s.tablesMu.Unlock()
	return t, nil
}

// openShared returns the open table for meta, opening it once however many
// tablets share it.
func (s *Store) openShared(meta fileMeta, inMemory bool) (*table, error) {
	s.tablesMu.Lock()
	t := s.tables[meta.Num]
	s.tablesMu.Unlock()
	if t != nil {
		return t, nil
	}
	return s.openTable(meta, inMemory)
}

// releaseTable runs when no version references t any more: close it, and
// delete the file unless the durable state still names it (it cannot be
// opened by anyone else then, but a restart would need it).
func (s *Store) releaseTable(t *table) {
	s.tablesMu.Lock()
	if s.tables[t.meta.Num] == t {
		delete(s.tables, t.meta.Num)
	}
	if name := s.fileName(t.meta); s.byPath[name] == t {
		delete(s.byPath, name)
	}
	s.tablesMu.Unlock()
	t.r.Close()
	if s.closed.Load() || s.shared() {
		return // in shared mode, the master's GC deletes files
	}
	if !(*s.live.Load())[t.meta.Num] {
		s.fs.Remove(s.tableName(t.meta.Num))
	}
}

// discardTable closes and deletes a table that never made it into the
// state. In shared mode the file stays: a catalog write that failed may
// still have landed, and the master's GC deletes it if not.
func (s *Store) discardTable(t *table) {
	s.tablesMu.Lock()
	delete(s.tables, t.meta.Num)
	delete(s.byPath, s.fileName(t.meta))
	s.tablesMu.Unlock()
	t.r.Close()
	s.donePending(t)
	if !s.shared() {
		s.fs.Remove(s.tableName(t.meta.Num))
	}
}

func (s *Store) closeTables() {
	s.tablesMu.Lock()
	defer s.tablesMu.Unlock()
	for _, t := range s.tables {
		t.r.Close()
	}
	s.tables = map[uint64]*table{}
	s.byPath = map[string]*table{}
}

// tabletState returns the durable state of a tablet. The result must not
// be modified.
func (s *Store) tabletState(id uint64) *tabletState {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	for i := range s.state.Tablets {
		if s.state.Tablets[i].ID == id {
			return &s.state.Tablets[i]
		}
	}
	return nil
}

// saveLocked writes next as the new state. stateMu must be held.
func (s *Store) saveLocked(next *storeState) error {
	next.NextFile = max(next.NextFile, s.nextFile.Load())
	if err := saveState(s.fs, s.dir, s.gen+1, next); err != nil {
		return err
	}
	s.gen++
	s.setState(next)
	return nil
}

// setState makes st the state in memory. stateMu must be held (or the store
// not yet shared).
func (s *Store) setState(st *storeState) {
	live := map[uint64]bool{}
	for _, ts := range st.Tablets {
		for _, files := range ts.Groups {
			for _, f := range files {
				live[f.Num] = true
			}
		}
	}
	s.state = st
	s.live.Store(&live)
}

func cloneTabletState(ts *tabletState) tabletState {
	c := *ts
	c.Groups = make(map[string][]fileMeta, len(ts.Groups))
	for k, v := range ts.Groups {
		c.Groups[k] = append([]fileMeta(nil), v...)
	}
	return c
}

// edit changes a tablet's durable state and then its version, as one
// step: stateEdit works on a copy that becomes the state once it is on
// disk; versionEdit (if set) works on a clone of the current version that
// is then installed.
func (s *Store) edit(ctx context.Context, t *Tablet, event string, stateEdit func(*tabletState), versionEdit func(*version)) error {
	if s.shared() {
		return s.editShared(ctx, t, event, stateEdit, versionEdit)
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	next := *s.state
	next.Tablets = slices.Clone(s.state.Tablets)
	found := false
	for i := range next.Tablets {
		if next.Tablets[i].ID == t.id {
			c := cloneTabletState(&next.Tablets[i])
			stateEdit(&c)
			next.Tablets[i] = c
			found = true
		}
	}
	if !found {
		return t.notServing()
	}
	if err := s.saveLocked(&next); err != nil {
		return err
	}
	t.editVersion(versionEdit)
	return nil
}

// editVersion applies f (if set) to a clone of the current version and
// installs it.
func (t *Tablet) editVersion(f func(*version)) {
	if f == nil {
		return
	}
	t.mu.Lock()
	nv := t.cur.clone()
	f(nv)
	t.install(nv)
	t.mu.Unlock()
}

// register adds a tablet to the routing tables.
func (s *Store) register(t *Tablet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tablets[t.id] = t
	list := append(s.byTable[t.table], t)
	sort.Slice(list, func(i, j int) bool { return bytes.Compare(list[i].rng.Start, list[j].rng.Start) < 0 })
	s.byTable[t.table] = list
}

// unregister removes tablets from the routing tables.
func (s *Store) unregister(ts ...*Tablet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts {
		delete(s.tablets, t.id)
		list := s.byTable[t.table]
		for i, x := range list {
			if x == t {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.byTable, t.table)
		} else {
			s.byTable[t.table] = list
		}
	}
}

// Tablets returns the tablets the store serves, ordered by table and row.
func (s *Store) Tablets() []*Tablet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*Tablet
	names := make([]string, 0, len(s.byTable))
	for n := range s.byTable {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, s.byTable[n]...)
	}
	return out
}

// Tablet returns a tablet by id.
func (s *Store) Tablet(id uint64) (*Tablet, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.tablets[id]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%w: tablet %d", model.ErrNotServing, id)
}

// Tables returns the names of the tables the store holds.
func (s *Store) Tables() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for n := range s.byTable {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Locate returns the tablet of table that serves row.
func (s *Store) Locate(table string, row []byte) (*Tablet, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list, ok := s.byTable[table]
	if !ok && s.shared() {
		// Tablets move between stores: a table with no tablet here may
		// well exist elsewhere.
		return nil, fmt.Errorf("%w: no tablet of %q here", model.ErrNotServing, table)
	}
	if !ok {
		return nil, fmt.Errorf("%w: table %q", model.ErrNotFound, table)
	}
	i := sort.Search(len(list), func(i int) bool { return bytes.Compare(list[i].rng.Start, row) > 0 }) - 1
	if i < 0 || !list[i].rng.Contains(row) {
		return nil, fmt.Errorf("%w: no tablet of %q serves row %q", model.ErrNotServing, table, row)
	}
	return list[i], nil
}

// locateBefore returns the tablet that serves the rows just before end
// (end empty: the table's last rows), where a reverse scan goes next.
func (s *Store) locateBefore(table string, end []byte) (*Tablet, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list, ok := s.byTable[table]
	if !ok && s.shared() {
		return nil, fmt.Errorf("%w: no tablet of %q here", model.ErrNotServing, table)
	}
	if !ok {
		return nil, fmt.Errorf("%w: table %q", model.ErrNotFound, table)
	}
	i := len(list) - 1
	if len(end) > 0 {
		i = sort.Search(len(list), func(i int) bool { return bytes.Compare(list[i].rng.Start, end) >= 0 }) - 1
	}
	if i < 0 || (len(list[i].rng.End) > 0 && (len(end) == 0 || bytes.Compare(list[i].rng.End, end) < 0)) {
		return nil, fmt.Errorf("%w: no tablet of %q serves the rows before %q", model.ErrNotServing, table, end)
	}
	return list[i], nil
}

// CreateTable creates a table whose tablets start at the given split rows.
func (s *Store) CreateTable(ctx context.Context, name string, schema model.Schema, splits [][]byte) error {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: bad table name %q", model.ErrInvalidArgument, name)
	}
	si, err := compileSchema(schema)
	if err != nil {
		return err
	}
	splits = slices.Clone(splits)
	slices.SortFunc(splits, bytes.Compare)
	splits = slices.CompactFunc(splits, bytes.Equal)
	for _, sp := range splits {
		if len(sp) == 0 {
			return fmt.Errorf("%w: empty split row", model.ErrInvalidArgument)
		}
		if err := model.ValidateRowKey(sp); err != nil {
			return err
		}
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	for _, ts := range s.state.Tablets {
		if ts.Table == name {
			return fmt.Errorf("%w: table %q already exists", model.ErrFailedPrecondition, name)
		}
	}
	next := *s.state
	next.Tablets = slices.Clone(s.state.Tablets)
	bounds := append([][]byte{nil}, splits...)
	var created []tabletState
	for i, start := range bounds {
		var end []byte
		if i+1 < len(bounds) {
			end = bounds[i+1]
		}
		ts := tabletState{ID: next.NextTablet, Table: name, Start: start, End: end, Schema: schema,
			Groups: map[string][]fileMeta{}, RedoLSN: s.log.NextLSN(), LastMajor: s.nowMicros()}
		next.NextTablet++
		created = append(created, ts)
	}
	next.Tablets = append(next.Tablets, created...)
	if s.shared() {
		return s.createShared(ctx, &next, created, si)
	}
	if err := s.saveLocked(&next); err != nil {
		return err
	}
	for i := range created {
		s.register(s.newServingTablet(&created[i], si, nil))
	}
	return ctx.Err()
}

// createShared serves the new tablets, then records them in order: they
// serve first because the catalog of METADATA's own tablets is the root
// tablet, which must answer the record of the tablet after it. stateMu is
// held; it is released for the records.
func (s *Store) createShared(ctx context.Context, next *storeState, created []tabletState, si *schemaInfo) error {
	s.setState(next)
	s.stateMu.Unlock()
	defer s.stateMu.Lock()
	var ts []*Tablet
	for i := range created {
		t := s.newServingTablet(&created[i], si, nil)
		s.register(t)
		ts = append(ts, t)
	}
	for i := range created {
		if err := s.record(ctx, "created", created[i:i+1], nil); err != nil {
			s.unregister(ts...)
			for _, t := range ts {
				t.retired.Store(true)
				s.retire(t)
			}
			s.stateMu.Lock()
			s.replaceStates(idsOf(created), nil)
			s.stateMu.Unlock()
			return err
		}
	}
	return ctx.Err()
}

func idsOf(states []tabletState) []uint64 {
	var ids []uint64
	for _, ts := range states {
		ids = append(ids, ts.ID)
	}
	return ids
}

// newServingTablet creates a tablet with an empty memtable over files,
// one list per group of si (nil for none). It takes references on them.
func (s *Store) newServingTablet(ts *tabletState, si *schemaInfo, files [][]*table) *Tablet {
	t := newTablet(s, ts, si)
	v := &version{active: t.activeMem, groups: make([][]*table, len(si.groups)), filesets: make([]uint64, len(si.groups))}
	v.refs.Store(1)
	for g := range v.groups {
		if g < len(files) {
			v.groups[g] = slices.Clone(files[g])
			for _, f := range files[g] {
				f.ref()
			}
		}
		v.filesets[g] = s.filesets.Add(1)
	}
	t.cur = v
	return t
}

// DropTable deletes a table and its data.
func (s *Store) DropTable(ctx context.Context, name string) error {
	s.mu.RLock()
	list := slices.Clone(s.byTable[name])
	s.mu.RUnlock()
	if len(list) == 0 {
		return fmt.Errorf("%w: table %q", model.ErrNotFound, name)
	}
	for _, t := range list {
		t.maint.Lock()
		defer t.maint.Unlock()
		t.commitMu.Lock()
		defer t.commitMu.Unlock()
		t.retired.Store(true)
	}
	s.stateMu.Lock()
	next := *s.state
	next.Tablets = nil
	for _, ts := range s.state.Tablets {
		if ts.Table != name {
			next.Tablets = append(next.Tablets, ts)
		}
	}
	err := s.commitStates(&next)
	s.stateMu.Unlock()
	if err != nil {
		for _, t := range list {
			t.retired.Store(false)
		}
		return err
	}
	s.unregister(list...)
	for _, t := range list {
		s.retire(t)
	}
	return ctx.Err()
}

// retire releases a tablet that no longer serves: wake its stalled
// writers, give back its memory, and drop its version.
func (s *Store) retire(t *Tablet) {
	t.mu.Lock()
	v := t.cur
	var memBytes int64
	for _, m := range v.memtables() {
		memBytes += m.accounted.Load()
	}
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
	s.memBytes.Add(-memBytes)
	v.unref()
	s.memoryChanged()
}

// UpdateSchema changes the schema of a table: families may be added,
// dropped (their data disappears) or get new GC rules, and locality group
// options may change for files written from now on. A family cannot move
// to another locality group.
func (s *Store) UpdateSchema(ctx context.Context, name string, schema model.Schema) error {
	si, err := compileSchema(schema)
	if err != nil {
		return err
	}
	s.mu.RLock()
	list := slices.Clone(s.byTable[name])
	s.mu.RUnlock()
	if len(list) == 0 {
		return fmt.Errorf("%w: table %q", model.ErrNotFound, name)
	}
	old := list[0].schema.Load()
	for _, f := range schema.Families {
		if of, ok := old.schema.Family(f.Name); ok && of.GroupOf() != f.GroupOf() {
			return fmt.Errorf("%w: family %q cannot move from locality group %q to %q", model.ErrFailedPrecondition, f.Name, of.GroupOf(), f.GroupOf())
		}
	}
	for _, t := range list {
		t.maint.Lock()
		t.flushMu.Lock()
		oldSI := t.schema.Load()
		err := s.edit(ctx, t, "schema changed", func(st *tabletState) {
			st.Schema = schema
			groups := map[string][]fileMeta{}
			for _, g := range si.groups {
				if files, ok := st.Groups[g.Name]; ok {
					groups[g.Name] = files
				}
			}
			st.Groups = groups
		}, func(v *version) {
			groups := make([][]*table, len(si.groups))
			filesets := make([]uint64, len(si.groups))
			for g, lg := range si.groups {
				filesets[g] = s.filesets.Add(1)
				for og, olg := range oldSI.groups {
					if olg.Name == lg.Name && og < len(v.groups) {
						groups[g] = v.groups[og]
						v.groups[og] = nil
					}
				}
			}
			for _, rest := range v.groups {
				for _, f := range rest {
					f.unref()
				}
			}
			v.groups, v.filesets = groups, filesets
		})
		if err == nil {
			t.schema.Store(si)
		}
		t.flushMu.Unlock()
		t.maint.Unlock()
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Apply routes a row mutation to its tablet. A tablet that split or merged
// while the call was in flight answers ErrNotServing once the new tablets
// are in place; Apply then routes again. This is the only retry on the
// in-process path; remote callers retry in kv/client.
func (s *Store) Apply(ctx context.Context, table string, m *model.RowMutation) error {
	return s.routed(ctx, table, m.Row, func(t *Tablet) error { return t.Apply(ctx, m) })
}

// ApplyBatch routes row mutations to their tablets and applies each
// tablet's share as one batch (Tablet.ApplyBatch): each row atomically,
// the batch as a whole not. It returns one error per mutation.
func (s *Store) ApplyBatch(ctx context.Context, table string, ms []*model.RowMutation) []error {
	errs := make([]error, len(ms))
	groups := map[*Tablet][]int{}
	var order []*Tablet
	for i, m := range ms {
		t, err := s.Locate(table, m.Row)
		if err != nil {
			errs[i] = err
			continue
		}
		if _, ok := groups[t]; !ok {
			order = append(order, t)
		}
		groups[t] = append(groups[t], i)
	}
	apply := func(t *Tablet) {
		idx := groups[t]
		batch := make([]*model.RowMutation, len(idx))
		for k, i := range idx {
			batch[k] = ms[i]
		}
		for k, err := range t.ApplyBatch(ctx, batch) {
			if err != nil && errors.Is(err, model.ErrNotServing) && t.retired.Load() {
				err = s.Apply(ctx, table, batch[k]) // split or merged meanwhile
			}
			errs[idx[k]] = err
		}
	}
	if len(order) == 1 {
		apply(order[0])
		return errs
	}
	// Tablets commit side by side, so their group commits overlap.
	var wg sync.WaitGroup
	for _, t := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			apply(t)
		}()
	}
	wg.Wait()
	return errs
}

// ReadRow routes a row read to its tablet.
func (s *Store) ReadRow(ctx context.Context, table string, row []byte, opts ReadOptions) (out model.Row, found bool, err error) {
	err = s.routed(ctx, table, row, func(t *Tablet) error {
		out, found, err = t.ReadRow(ctx, row, opts)
		return err
	})
	return out, found, err
}

// ReadModifyWrite routes a read-modify-write to its tablet.
func (s *Store) ReadModifyWrite(ctx context.Context, table string, row []byte, rules []ReadModifyWriteRule) (out []model.Cell, err error) {
	err = s.routed(ctx, table, row, func(t *Tablet) error {
		out, err = t.ReadModifyWrite(ctx, row, rules)
		return err
	})
	return out, err
}

// CheckAndMutate routes a check-and-mutate to its tablet.
func (s *Store) CheckAndMutate(ctx context.Context, table string, row []byte, read ReadOptions, pred func([]model.Cell) bool, ifTrue, ifFalse []model.Mutation) (matched bool, err error) {
	err = s.routed(ctx, table, row, func(t *Tablet) error {
		matched, err = t.CheckAndMutate(ctx, row, read, pred, ifTrue, ifFalse)
		return err
	})
	return matched, err
}

func (s *Store) routed(ctx context.Context, table string, row []byte, fn func(*Tablet) error) error {
	for {
		t, err := s.Locate(table, row)
		if err != nil {
			return err
		}
		err = fn(t)
		if err == nil || !errors.Is(err, model.ErrNotServing) || !t.retired.Load() || s.closed.Load() {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return err
		}
	}
}

// TableScanner scans a row range of a table across its tablets.
type TableScanner struct {
	s     *Store
	ctx   context.Context
	table string
	rng   model.RowRange
	opts  ReadOptions
	cur   *Scanner
	next  []byte // start of the rest of the range
	// A reverse scan goes down from upper (nil: the table's end).
	upper []byte
	last  bool // the current tablet holds the far end of the range
	n     int
	row   model.Row
	err   error
	done  bool
}

// Scan streams the rows of rng in table, in order.
func (s *Store) Scan(ctx context.Context, table string, rng model.RowRange, opts ReadOptions) *TableScanner {
	ts := &TableScanner{s: s, ctx: ctx, table: table, rng: rng, opts: opts, next: rng.Start}
	if len(rng.End) > 0 {
		ts.upper = rng.End
	}
	return ts
}

// Next advances to the next row.
func (ts *TableScanner) Next() bool {
	for !ts.done {
		if ts.opts.Limit > 0 && ts.n >= ts.opts.Limit {
			break
		}
		if ts.cur == nil {
			if !ts.opts.Reverse && len(ts.rng.End) > 0 && bytes.Compare(ts.next, ts.rng.End) >= 0 {
				break
			}
			t, rng, err := ts.tablet()
			if err != nil {
				ts.err = err
				break
			}
			opts := ts.opts
			if opts.Limit > 0 {
				opts.Limit -= ts.n
			}
			sc, err := t.Scan(ts.ctx, rng, opts)
			if err != nil {
				if errors.Is(err, model.ErrNotServing) && t.retired.Load() {
					continue // split or merged: locate again
				}
				ts.err = err
				break
			}
			ts.cur = sc
			ts.advance(t)
		}
		if ts.cur.Next() {
			ts.row = ts.cur.Row()
			ts.n++
			return true
		}
		err := ts.cur.Err()
		ts.cur.Close()
		ts.cur = nil
		if err != nil {
			ts.err = err
			break
		}
		if ts.last {
			break
		}
	}
	ts.done = true
	return false
}

// tablet returns the tablet the scan reads next, and the part of the
// range to read there (the tablet clips it to its own): forward from
// next, or, reversed, the rows before upper.
func (ts *TableScanner) tablet() (*Tablet, model.RowRange, error) {
	if ts.opts.Reverse {
		t, err := ts.s.locateBefore(ts.table, ts.upper)
		return t, model.RowRange{Start: ts.rng.Start, End: ts.upper}, err
	}
	t, err := ts.s.Locate(ts.table, ts.next)
	return t, model.RowRange{Start: ts.next, End: ts.rng.End}, err
}

// advance records where the scan goes once t is read, or that t holds
// the far end of the range.
func (ts *TableScanner) advance(t *Tablet) {
	if ts.opts.Reverse {
		if len(t.rng.Start) == 0 || bytes.Compare(t.rng.Start, ts.rng.Start) <= 0 {
			ts.last = true
		} else {
			ts.upper = t.rng.Start
		}
		return
	}
	if len(t.rng.End) == 0 || (len(ts.rng.End) > 0 && bytes.Compare(t.rng.End, ts.rng.End) >= 0) {
		ts.last = true
	} else {
		ts.next = t.rng.End
	}
}

// Row returns the current row.
func (ts *TableScanner) Row() model.Row { return ts.row }

// Err returns what ended the scan, if anything.
func (ts *TableScanner) Err() error { return ts.err }

// Close ends the scan.
func (ts *TableScanner) Close() error {
	ts.done = true
	if ts.cur != nil {
		err := ts.cur.Close()
		ts.cur = nil
		return err
	}
	return nil
}

// Flush freezes the tablet's memtable and writes it, and every frozen one,
// to SSTables.
func (t *Tablet) Flush(ctx context.Context) error {
	t.freeze(true)
	return t.flushFrozen(ctx)
}

// Compact runs the compactions the tablet needs now; major forces a major
// compaction of every locality group.
func (t *Tablet) Compact(ctx context.Context, major bool) error {
	return t.compact(ctx, major)
}

// FlushAll flushes every tablet.
func (s *Store) FlushAll(ctx context.Context) error {
	for _, t := range s.Tablets() {
		if err := t.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// memoryChanged wakes writers stalled on the store's memory limit.
func (s *Store) memoryChanged() {
	s.memMu.Lock()
	close(s.memChanged)
	s.memChanged = make(chan struct{})
	s.memMu.Unlock()
}

func (s *Store) memChangedReset() {
	s.memMu.Lock()
	s.memChanged = make(chan struct{})
	s.memMu.Unlock()
}

// relieveMemory freezes the largest active memtables until the frozen ones
// would bring the store under its memory limit, and returns a channel that
// closes when memory is released.
func (s *Store) relieveMemory() <-chan struct{} {
	s.memMu.Lock()
	ch := s.memChanged
	s.memMu.Unlock()
	ts := s.Tablets()
	sort.Slice(ts, func(i, j int) bool {
		return ts[i].activeBytes() > ts[j].activeBytes()
	})
	var frozen int64
	for _, t := range ts {
		if s.memBytes.Load()-frozen < s.opts.MemoryLimit*3/4 {
			break
		}
		b := t.activeBytes()
		if b == 0 {
			break
		}
		if t.freezeIfRoom() {
			s.scheduleFlush(t)
			frozen += b
		}
	}
	return ch
}

func (t *Tablet) activeBytes() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur.active.ApproximateBytes()
}

// freezeIfRoom freezes the active memtable, whatever its size, if the
// frozen list has room.
func (t *Tablet) freezeIfRoom() bool {
	t.mu.Lock()
	room := len(t.cur.frozen) < t.s.opts.MaxFrozenMemtables
	t.mu.Unlock()
	return room && t.freeze(true)
}

func (s *Store) scheduleFlush(t *Tablet) {
	if s.closed.Load() || !t.flushQueued.CompareAndSwap(false, true) {
		return
	}
	select {
	case s.flushCh <- t:
	default:
		t.flushQueued.Store(false) // the ticker will try again
	}
}

func (s *Store) scheduleCompaction(t *Tablet) {
	if s.closed.Load() || !t.compactQueued.CompareAndSwap(false, true) {
		return
	}
	select {
	case s.compactCh <- t:
	default:
		t.compactQueued.Store(false)
	}
}

// worker runs flushes, and compactions when no flush waits.
func (s *Store) worker() {
	defer s.bg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	for {
		select {
		case <-s.stop:
			return
		case t := <-s.flushCh:
			s.runFlush(ctx, t)
			continue
		default:
		}
		select {
		case <-s.stop:
			return
		case t := <-s.flushCh:
			s.runFlush(ctx, t)
		case t := <-s.compactCh:
			t.compactQueued.Store(false)
			if t.retired.Load() {
				continue
			}
			if err := t.compact(ctx, false); err != nil {
				s.backgroundError(t, err)
				continue
			}
			s.maybeSplit(ctx, t)
		}
	}
}

func (s *Store) runFlush(ctx context.Context, t *Tablet) {
	t.flushQueued.Store(false)
	if t.retired.Load() {
		return
	}
	if err := t.flushFrozen(ctx); err != nil {
		s.backgroundError(t, err)
		return
	}
	// A tablet filled in key order grows by flushes alone: its files do
	// not overlap, so no compaction (after which splits are checked) runs.
	s.maybeSplit(ctx, t)
}

func (s *Store) backgroundError(t *Tablet, err error) {
	if s.closed.Load() || errors.Is(err, context.Canceled) {
		return
	}
	if fn := s.opts.Events.BackgroundError; fn != nil {
		fn(t.id, err)
	}
}

// ticker does the periodic work: retry failed flushes, keep the commit log
// bounded, and look for compactions (a major one is due on a timer) and
// splits.
func (s *Store) ticker() {
	defer s.bg.Done()
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tk.C:
		}
		for _, t := range s.Tablets() {
			t.mu.Lock()
			frozen := len(t.cur.frozen)
			t.mu.Unlock()
			if frozen > 0 {
				s.scheduleFlush(t)
			}
			s.scheduleCompaction(t)
		}
		s.trimLog()
	}
}

// trimLog deletes log segments no tablet needs. When the log is longer
// than MaxLogSize, it moves idle tablets' redo points forward and flushes
// the tablets that pin the oldest segments.
func (s *Store) trimLog() {
	segs := s.log.Segments()
	if len(segs) == 0 {
		return
	}
	pressure := s.log.Size() > s.opts.MaxLogSize
	need := uint64(math.MaxUint64)
	for _, t := range s.Tablets() {
		redo := t.redoLSN()
		if pressure && len(segs) > 1 && redo < segs[1].FirstLSN {
			if !t.advanceIdleRedo() {
				t.freezeIfRoom()
				s.scheduleFlush(t)
			}
			redo = t.redoLSN()
		}
		need = min(need, redo)
	}
	if need == math.MaxUint64 {
		need = s.log.DurableLSN() + 1
	}
	if err := s.log.Release(need); err != nil && s.opts.Events.BackgroundError != nil {
		s.opts.Events.BackgroundError(0, err)
	}
}

// redoLSN returns the log position the tablet's unflushed data starts at.
func (t *Tablet) redoLSN() uint64 {
	if st := t.s.tabletState(t.id); st != nil {
		return st.RedoLSN
	}
	return math.MaxUint64
}

// advanceIdleRedo moves the redo point of a tablet without unflushed data
// to the end of the log, so it stops pinning old segments.
func (t *Tablet) advanceIdleRedo() bool {
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	// Writes that have a sequence number but are not applied yet would be
	// lost behind the new redo point.
	t.mu.Lock()
	idle := t.cur.active.Empty() && len(t.cur.frozen) == 0 && t.visible.Load() == t.nextSeq-1
	t.mu.Unlock()
	if !idle || t.retired.Load() {
		return false
	}
	redo, seq := t.s.log.NextLSN(), t.nextSeq-1
	ctx, cancel := t.s.backgroundCtx()
	defer cancel()
	return t.s.edit(ctx, t, "", func(st *tabletState) {
		st.RedoLSN = max(st.RedoLSN, redo)
		st.FlushedSeq = max(st.FlushedSeq, seq)
	}, nil) == nil
}

// Close stops the background work and the log, and releases the
// directory. Unflushed data stays in the log for the next Open.
func (s *Store) Close(ctx context.Context) error {
	if !s.opened || !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.stop)
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, t := range s.Tablets() {
		t.commitMu.Lock()
		t.retired.Store(true)
		t.commitMu.Unlock()
	}
	err := s.log.Close(ctx)
	for _, t := range s.Tablets() {
		t.mu.Lock()
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
	}
	s.closeTables()
	return errors.Join(err, s.lock.Close())
}

// Stats describe a store for status pages and tools.
type Stats struct {
	Tablets         []TabletStats
	MemtableBytes   int64
	LogBytes        int64
	LogSegments     int
	BlockCache      CacheStats
	ScanCache       CacheStats
	Bloom           BloomStats
	StateGeneration uint64
	// Recovering are the tablets being recovered from a dead server's
	// log; they are not in Tablets until they serve.
	Recovering []RecoveryProgress
}

// BloomStats count the bloom filter probes of point reads since the
// store opened: Checks in all, and Useful, those where the filter showed
// that a file could not hold the row, so the file was not read.
type BloomStats struct {
	Checks, Useful int64
}

// CacheStats describe one cache.
type CacheStats struct {
	Bytes, Hits, Misses int64
}

// TabletStats describe one tablet.
type TabletStats struct {
	ID              uint64
	Table           string
	Range           model.RowRange
	MemtableBytes   int64
	FrozenMemtables int
	Groups          []GroupStats
	// Compaction is the merging or major compaction running now, if any.
	Compaction *CompactionProgress
}

// GroupStats describe one locality group of a tablet.
type GroupStats struct {
	Name  string
	Files []FileStats
}

// FileStats describe one SSTable.
type FileStats struct {
	Num       uint64
	Size      uint64
	Entries   uint64
	Deletions uint64
}

// Stats returns a snapshot of the store's state.
func (s *Store) Stats() Stats {
	st := Stats{MemtableBytes: s.memBytes.Load(), Bloom: BloomStats{Checks: s.bloomChecks.Load(), Useful: s.bloomUseful.Load()}}
	if s.log != nil {
		st.LogBytes, st.LogSegments = s.log.Size(), len(s.log.Segments())
	}
	if s.blockCache != nil {
		st.BlockCache = CacheStats{Bytes: s.blockCache.bytes(), Hits: s.blockCache.hits.Load(), Misses: s.blockCache.misses.Load()}
	}
	if s.scanCache != nil {
		st.ScanCache = CacheStats{Bytes: s.scanCache.bytes(), Hits: s.scanCache.hits.Load(), Misses: s.scanCache.misses.Load()}
	}
	s.stateMu.Lock()
	st.StateGeneration = s.gen
	s.stateMu.Unlock()
	st.Recovering = s.Recoveries()
	for _, t := range s.Tablets() {
		v := t.acquire()
		ts := TabletStats{ID: t.id, Table: t.table, Range: t.rng, FrozenMemtables: len(v.frozen)}
		for _, m := range v.memtables() {
			ts.MemtableBytes += m.ApproximateBytes()
		}
		si := t.schema.Load()
		for g, files := range v.groups {
			gs := GroupStats{Name: si.groups[g].Name}
			for _, f := range files {
				gs.Files = append(gs.Files, FileStats{Num: f.meta.Num, Size: f.meta.Size, Entries: f.meta.Entries, Deletions: f.meta.Deletions})
			}
			ts.Groups = append(ts.Groups, gs)
		}
		v.unref()
		if c := t.Compaction(); c.Running {
			ts.Compaction = &c
		}
		st.Tablets = append(st.Tablets, ts)
	}
	return st
}
