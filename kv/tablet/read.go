package tablet

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/sstable"
)

// ReadStats counts the work of a read (see ReadOptions.Stats): the rows
// and cells it produced, the SSTable data blocks it read from files or
// found in the block cache, and the bloom filter checks of a point read.
// Rows and Cells are counted before a tablet server's filters (regular
// expressions, conditions), so they are what the read examined. Only
// point reads (ReadRow) check bloom filters; one that the scan cache
// answers reads no block and checks no filter. Memtables count only
// their rows and cells.
type ReadStats = sstable.ReadStats

// ReadOptions select what a read returns.
type ReadOptions struct {
	// Families limits the read to these families; nil reads all. Only the
	// locality groups holding them are read.
	Families []string
	// TimeRange keeps cells whose timestamp lies in it; zero keeps all.
	TimeRange model.TimeRange
	// MaxVersions keeps the newest n versions of each column (after the
	// time range); 0 keeps all.
	MaxVersions int
	// Limit is the most rows a scan returns; 0 means no limit.
	Limit int
	// Reverse makes a scan return its rows in descending key order.
	Reverse bool
	// Transient lets a scan reuse one row's memory for the next: a row
	// (its key, its cells and their qualifiers) is then valid only until
	// the following Next. Values stay valid either way. For consumers
	// that fold each row into something of their own, as Aggregate does.
	Transient bool
	// Stats, if not nil, receives the read's counts, added to what it
	// holds: a ReadRow's when it returns, a scan's as it goes (complete
	// once Next returns false). Reads that run at the same time must not
	// share one. Nil costs the read nothing measurable.
	Stats *ReadStats
}

// iter is what the merged view needs from memtable and SSTable iterators.
type iter interface {
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
	Last() bool
	Next() bool
	Key() []byte
	Value() []byte
	Error() error
	Close() error
}

// mergeIter merges sorted iterators into one sorted stream with a binary
// heap. Keys are unique across sources: every entry has its own sequence
// number.
type mergeIter struct {
	iters []iter
	heap  []iter
	err   error
}

func (m *mergeIter) less(i, j int) bool {
	return bytes.Compare(m.heap[i].Key(), m.heap[j].Key()) < 0
}

func (m *mergeIter) down(i int) {
	n := len(m.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && m.less(r, l) {
			c = r
		}
		if !m.less(c, i) {
			return
		}
		m.heap[i], m.heap[c] = m.heap[c], m.heap[i]
		i = c
	}
}

// SeekGE positions every source at the first key >= key.
func (m *mergeIter) SeekGE(key []byte) bool {
	m.heap = m.heap[:0]
	for _, it := range m.iters {
		if it.SeekGE(key) {
			m.heap = append(m.heap, it)
		} else if err := it.Error(); err != nil {
			m.err = err
			m.heap = m.heap[:0]
			return false
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return len(m.heap) > 0
}

// Next advances past the current key.
func (m *mergeIter) Next() bool {
	if len(m.heap) == 0 {
		return false
	}
	if m.heap[0].Next() {
		m.down(0)
		return true
	}
	if err := m.heap[0].Error(); err != nil {
		m.err = err
		m.heap = m.heap[:0]
		return false
	}
	last := len(m.heap) - 1
	m.heap[0] = m.heap[last]
	m.heap = m.heap[:last]
	m.down(0)
	return len(m.heap) > 0
}

// lastKeyBefore returns the last key < hi (hi nil: the last key),
// copied into buf. It leaves the sources unordered: the caller seeks
// again. Reverse scans step back a row at a time this way, so that only
// the forward merge needs a heap.
func (m *mergeIter) lastKeyBefore(hi, buf []byte) ([]byte, bool) {
	var best []byte
	for _, it := range m.iters {
		var ok bool
		if hi == nil {
			ok = it.Last()
		} else {
			ok = it.SeekLT(hi)
		}
		if !ok {
			if err := it.Error(); err != nil {
				m.err = err
				return nil, false
			}
			continue
		}
		if k := it.Key(); best == nil || bytes.Compare(k, best) > 0 {
			best = append(buf[:0], k...)
			buf = best
		}
	}
	m.heap = m.heap[:0]
	return best, best != nil
}

func (m *mergeIter) Key() []byte   { return m.heap[0].Key() }
func (m *mergeIter) Value() []byte { return m.heap[0].Value() }
func (m *mergeIter) Error() error  { return m.err }

func (m *mergeIter) Close() error {
	first := m.closeIters()
	m.iters, m.heap = nil, nil
	return first
}

// closeIters closes the sources and forgets them, keeping the slices'
// memory for the next read (a pooled point read's).
func (m *mergeIter) closeIters() error {
	var first error
	for i, it := range m.iters {
		if err := it.Close(); err != nil && first == nil {
			first = err
		}
		m.iters[i] = nil
	}
	clear(m.heap)
	m.iters, m.heap, m.err = m.iters[:0], m.heap[:0], nil
	return first
}

// sliceIter iterates over entries held in memory, such as a scan-cache
// hit.
type sliceIter struct {
	e []kv
	i int
}

func (s *sliceIter) SeekGE(key []byte) bool {
	lo, hi := 0, len(s.e)
	for lo < hi {
		mid := (lo + hi) / 2
		if bytes.Compare(s.e[mid].key, key) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	s.i = lo
	return s.i < len(s.e)
}

func (s *sliceIter) SeekLT(key []byte) bool {
	s.SeekGE(key)
	s.i--
	return s.i >= 0
}

func (s *sliceIter) Last() bool    { s.i = len(s.e) - 1; return s.i >= 0 }
func (s *sliceIter) Next() bool    { s.i++; return s.i < len(s.e) }
func (s *sliceIter) Key() []byte   { return s.e[s.i].key }
func (s *sliceIter) Value() []byte { return s.e[s.i].value }
func (s *sliceIter) Error() error  { return nil }
func (s *sliceIter) Close() error  { return nil }

// resolver turns the merged stream of internal entries into rows of live
// cells. It applies the deletion rules (a marker hides only entries with a
// smaller sequence number), keeps only the newest write of each
// (column, timestamp), and applies the read options.
type resolver struct {
	src      *mergeIter
	valid    bool
	snapshot uint64
	limit    []byte // keys >= limit end the read; nil: no bound
	opts     *ReadOptions
	wanted   map[string]bool // nil: every family
	vis      visibility
	famOK    bool
	// famMemo remembers whether the last two families are wanted.
	famMemo [2]struct {
		fi *familyInfo
		ok bool
	}
	arena []byte
	cells []model.Cell // the current row's cells, reused
	slab  []model.Cell // scans hand out rows' cells from here
	scan  bool
	// A reverse scan reads the rows in [lower, upper) backwards (upper
	// nil: to the end), upper moving down to each row it reads.
	lower, upper    []byte
	upperBuf, spare []byte
	limitBuf        []byte
}

func newResolver(src *mergeIter, snapshot uint64, si *schemaInfo, opts *ReadOptions) *resolver {
	r := &resolver{src: src, snapshot: snapshot, opts: opts, vis: visibility{si: si}}
	if opts.Families != nil {
		r.wanted = make(map[string]bool, len(opts.Families))
		for _, f := range opts.Families {
			r.wanted[f] = true
		}
	}
	return r
}

// keep copies b into the resolver's arena. The arena is only appended to,
// so slices handed out earlier stay valid.
func (r *resolver) keep(b []byte) []byte {
	if cap(r.arena)-len(r.arena) < len(b) {
		// Start small (most reads return a few short qualifiers) and grow
		// with the read.
		r.arena = make([]byte, 0, max(min(2*cap(r.arena), 4096), 64, len(b)))
	}
	n := len(r.arena)
	r.arena = append(r.arena, b...)
	return r.arena[n:len(r.arena):len(r.arena)]
}

// handOut copies a row's cells into memory the caller may keep: exactly
// sized for a point read, carved from a slab for a scan, which spares a
// scan an allocation per row.
func (r *resolver) handOut(cells []model.Cell) []model.Cell {
	if !r.scan {
		return slices.Clone(cells)
	}
	if r.opts.Transient {
		return cells
	}
	if cap(r.slab)-len(r.slab) < len(cells) {
		r.slab = make([]model.Cell, 0, max(128, len(cells)))
	}
	n := len(r.slab)
	r.slab = append(r.slab, cells...)
	return r.slab[n:len(r.slab):len(r.slab)]
}

// next fills out with the next row that has a live cell after the read
// options. It returns false at the end or on error (see err).
func (r *resolver) next(out *model.Row) bool {
	for r.valid {
		key := r.src.Key()
		if r.limit != nil && bytes.Compare(key, r.limit) >= 0 {
			r.valid = false
			break
		}
		rp := model.RowPrefix(key)
		if rp == nil {
			r.src.err = fmt.Errorf("%w: malformed key %x in the merged view", model.ErrCorruption, key)
			r.valid = false
			break
		}
		r.vis.startRow(rp)
		r.cells = r.cells[:0]
		if r.opts.Transient {
			r.arena = r.arena[:0] // the last row is the caller's no more
		}
		for {
			r.entry(key, r.src.Value())
			if r.valid = r.src.Next(); !r.valid {
				break
			}
			key = r.src.Key()
			if !bytes.HasPrefix(key, r.vis.row) {
				break
			}
		}
		if len(r.cells) > 0 {
			out.Key = r.keep(model.RowOf(r.vis.row))
			out.Cells = r.handOut(r.cells)
			if st := r.opts.Stats; st != nil {
				st.Rows++
				st.Cells += int64(len(r.cells))
			}
			return true
		}
	}
	return false
}

// prev is next for a reverse scan: it fills out with the row before
// upper that has a live cell. Each row costs a backward seek of every
// source and a forward seek to read the row.
func (r *resolver) prev(out *model.Row) bool {
	for r.src.err == nil {
		key, ok := r.src.lastKeyBefore(r.upper, r.spare)
		if !ok {
			return false
		}
		// upper may live in upperBuf: swap only once key is found.
		r.spare, r.upperBuf = r.upperBuf, key
		rp := model.RowPrefix(key)
		if rp == nil {
			r.src.err = fmt.Errorf("%w: malformed key %x in the merged view", model.ErrCorruption, key)
			return false
		}
		if bytes.Compare(rp, r.lower) < 0 {
			return false
		}
		r.upper = rp
		r.limitBuf = model.RowLimit(append(r.limitBuf[:0], rp...))
		r.limit = r.limitBuf
		r.valid = r.src.SeekGE(rp)
		if r.next(out) {
			return true
		}
	}
	return false
}

func (r *resolver) err() error { return r.src.err }

// entry applies one internal entry of the current row.
func (r *resolver) entry(key, value []byte) {
	ts, seq, kind := model.Trailer(key)
	if seq > r.snapshot {
		return // written after the read started
	}
	live, famChanged := r.vis.step(key, value, ts, seq, kind)
	if famChanged {
		r.famOK = r.familyOK(r.vis.famInfo)
	}
	if kind != model.KindSetCell || !live || !r.famOK || !r.opts.TimeRange.Contains(ts) {
		return
	}
	r.vis.versions++
	if r.opts.MaxVersions > 0 && r.vis.versions > r.opts.MaxVersions {
		return
	}
	r.cells = append(r.cells, model.Cell{
		Family:    r.vis.famInfo.name,
		Qualifier: r.keep(model.QualifierOf(key, len(r.vis.row), len(r.vis.fam))),
		Timestamp: ts,
		Value:     value,
	})
}

// familyOK: the read wants fi's cells (nil: an undeclared family, never).
func (r *resolver) familyOK(fi *familyInfo) bool {
	if fi == nil {
		return false
	}
	if r.wanted == nil {
		return true
	}
	for _, m := range r.famMemo {
		if m.fi == fi {
			return m.ok
		}
	}
	ok := r.wanted[fi.name]
	r.famMemo[1] = r.famMemo[0]
	r.famMemo[0].fi, r.famMemo[0].ok = fi, ok
	return ok
}

// groupsFor returns the locality groups that hold the given families.
func groupsFor(si *schemaInfo, families []string) []int { return appendGroups(nil, si, families) }

// appendGroups is groupsFor appending to dst (a pooled point read's
// buffer).
func appendGroups(dst []int, si *schemaInfo, families []string) []int {
	if families == nil {
		for i := range si.groups {
			dst = append(dst, i)
		}
		return dst
	}
	seen := make([]bool, len(si.groups))
	for _, f := range families {
		if fi := si.families[f]; fi != nil && !seen[fi.group] {
			seen[fi.group] = true
			dst = append(dst, fi.group)
		}
	}
	return dst
}

// sources opens the iterators of a read of the keys in [lo, hi) (hi nil:
// unbounded): every memtable, and the SSTables of the groups asked for
// whose key range meets the read's. st, if not nil, counts the SSTable
// blocks read.
func (t *Tablet) sources(v *version, snapshot uint64, groups []int, lo, hi []byte, st *ReadStats) []iter {
	return t.appendSources(make([]iter, 0, 1+len(v.frozen)+len(groups)), v, snapshot, groups, lo, hi, nil, st)
}

// appendSources is sources appending to its. A point read (one row)
// passes its pointRead: it also consults the bloom filters (counted into
// st), the scan cache may stand in for a group's files, and the SSTable
// iterators are p's, reused.
func (t *Tablet) appendSources(its []iter, v *version, snapshot uint64, groups []int, lo, hi []byte, p *pointRead, st *ReadStats) []iter {
	point := p != nil
	for _, m := range v.memtables() {
		if !m.Empty() {
			its = append(its, m.NewIter(snapshot))
		}
	}
	for _, g := range groups {
		if g >= len(v.groups) {
			continue
		}
		files := v.groups[g]
		if point && t.s.scanCache != nil && len(files) > 0 {
			its = append(its, &sliceIter{e: t.cachedRow(v, g, lo, hi, st)})
			continue
		}
		for _, f := range files {
			if f.overlaps(lo, hi) && (!point || t.mayContainRow(f, lo, st)) {
				if point {
					its = append(its, p.sstIter(f.r, st))
				} else {
					its = append(its, f.r.NewIterStats(st))
				}
			}
		}
	}
	return its
}

// mayContainRow asks f's bloom filter about a row, counting the probe
// into st and into the store's totals.
func (t *Tablet) mayContainRow(f *table, rowKey []byte, st *ReadStats) bool {
	if !f.r.HasFilter() {
		return true
	}
	ok := f.r.MayContainRowStats(rowKey, st)
	t.s.bloomChecks.Add(1)
	if !ok {
		t.s.bloomUseful.Add(1)
	}
	return ok
}

// overlaps reports whether f may hold keys in [lo, hi) (hi nil: unbounded).
func (f *table) overlaps(lo, hi []byte) bool {
	return bytes.Compare(f.meta.Largest, lo) >= 0 && (hi == nil || bytes.Compare(f.meta.Smallest, hi) < 0)
}

// cachedRow returns the SSTable entries of one row in one group, from the
// scan cache or by reading the files. Entries of a file set never change,
// so a cached row needs no invalidation: a flush or compaction makes a new
// file set.
func (t *Tablet) cachedRow(v *version, g int, rowKey, limit []byte, st *ReadStats) []kv {
	k := scanKey{fileset: v.filesets[g], row: string(rowKey)}
	if e, ok := t.s.scanCache.get(k); ok {
		return e
	}
	var its []iter
	for _, f := range v.groups[g] {
		if f.overlaps(rowKey, limit) && t.mayContainRow(f, rowKey, st) {
			its = append(its, f.r.NewIterStats(st))
		}
	}
	m := &mergeIter{iters: its}
	var e []kv
	for ok := m.SeekGE(rowKey); ok && bytes.HasPrefix(m.Key(), rowKey); ok = m.Next() {
		e = append(e, kv{key: bytes.Clone(m.Key()), value: m.Value()})
	}
	err := m.err
	m.Close()
	if err == nil {
		t.s.scanCache.set(k, e, entriesSize(e))
	}
	return e
}

// ReadRow reads one row. It reports whether the row has any live cell that
// the options keep.
func (t *Tablet) ReadRow(ctx context.Context, row []byte, opts ReadOptions) (model.Row, bool, error) {
	if !t.rng.Contains(row) {
		return model.Row{}, false, fmt.Errorf("%w: row %q is outside tablet %d %v", model.ErrNotServing, row, t.id, t.rng)
	}
	if err := ctx.Err(); err != nil {
		return model.Row{}, false, err
	}
	// The snapshot comes before the version: everything up to it is in the
	// version's memtables or, if flushed since, in its SSTables.
	snapshot := t.visible.Load()
	v := t.acquire()
	defer v.unref()
	if t.retired.Load() {
		return model.Row{}, false, t.notServing()
	}
	si := t.schema.Load()
	p := t.s.pointReads.Get().(*pointRead)
	defer t.s.pointReads.Put(p)
	p.key = model.AppendRowPrefix(p.key[:0], row)
	p.limit = model.RowLimit(append(p.limit[:0], p.key...))
	p.groups = appendGroups(p.groups[:0], si, opts.Families)
	p.nsst = 0
	p.m.iters = t.appendSources(p.m.iters[:0], v, snapshot, p.groups, p.key, p.limit, p, opts.Stats)
	defer p.m.closeIters()
	r := p.resolver(snapshot, si, &opts)
	r.limit = p.limit
	r.valid = p.m.SeekGE(p.key)
	var out model.Row
	found := r.next(&out)
	if err := r.err(); err != nil {
		return model.Row{}, false, err
	}
	if !found {
		return model.Row{Key: row}, false, nil
	}
	return out, true, nil
}

// pointRead is the scratch memory of one ReadRow, pooled by the store: a
// point read is the hottest path of the server, and its merge iterator,
// resolver and key buffers would otherwise be garbage after every call.
// Nothing in it outlives the read: the row handed out is a copy, and its
// key and qualifiers live in an arena the resolver gives up (see
// resolver).
type pointRead struct {
	m      mergeIter
	r      resolver
	key    []byte
	limit  []byte
	groups []int
	// ssts are SSTable iterators for reuse, the first nsst in use. A read
	// closes them before it returns, and nothing it returns points into
	// them (values point into blocks, which are immutable).
	ssts []*sstable.Iter
	nsst int
}

// sstIter is an unpositioned iterator over r, reusing one of p's.
func (p *pointRead) sstIter(r *sstable.Reader, st *ReadStats) *sstable.Iter {
	if p.nsst == len(p.ssts) {
		p.ssts = append(p.ssts, new(sstable.Iter))
	}
	it := p.ssts[p.nsst]
	p.nsst++
	r.InitIter(it, st)
	return it
}

func newPointRead() any { return &pointRead{} }

// resolver resets the pooled resolver for a read of the given snapshot
// and schema, keeping its buffers but not its arena (the previous read's
// row points into that) nor anything of the previous schema.
func (p *pointRead) resolver(snapshot uint64, si *schemaInfo, opts *ReadOptions) *resolver {
	r := &p.r
	cells, wanted := r.cells[:0], r.wanted
	vis := r.vis
	*r = resolver{src: &p.m, snapshot: snapshot, opts: opts, cells: cells}
	r.vis = visibility{si: si, row: vis.row[:0], col: vis.col[:0], fam: vis.fam[:0], prevFam: vis.prevFam[:0], markers: vis.markers[:0]}
	if opts.Families != nil {
		if wanted == nil {
			wanted = make(map[string]bool, len(opts.Families))
		}
		clear(wanted)
		for _, f := range opts.Families {
			wanted[f] = true
		}
		r.wanted = wanted
	}
	return r
}

// Scanner streams the rows of a range in order. It pins the tablet's data
// as of its start until Close.
type Scanner struct {
	ctx  context.Context
	v    *version
	m    *mergeIter
	res  *resolver
	row  model.Row
	opts ReadOptions
	n    int
	err  error
	done bool
}

// Scan starts a scan of the rows of rng that the tablet serves.
func (t *Tablet) Scan(ctx context.Context, rng model.RowRange, opts ReadOptions) (*Scanner, error) {
	clip, ok := rng.Intersect(t.rng)
	snapshot := t.visible.Load()
	v := t.acquire()
	if t.retired.Load() {
		v.unref()
		return nil, t.notServing()
	}
	s := &Scanner{ctx: ctx, v: v, opts: opts}
	if !ok {
		s.m = &mergeIter{}
		s.done = true
		return s, nil
	}
	lo := model.AppendRowPrefix(nil, clip.Start)
	var hi []byte
	if len(clip.End) > 0 {
		hi = model.AppendRowPrefix(nil, clip.End)
	}
	si := t.schema.Load()
	s.m = &mergeIter{iters: t.sources(v, snapshot, groupsFor(si, opts.Families), lo, hi, opts.Stats)}
	s.res = newResolver(s.m, snapshot, si, &s.opts)
	s.res.scan = true
	if opts.Reverse {
		s.res.lower, s.res.upper = lo, hi
		return s, nil
	}
	s.res.limit = hi
	s.res.valid = s.m.SeekGE(lo)
	return s, nil
}

// Next advances to the next row.
func (s *Scanner) Next() bool {
	if s.done {
		return false
	}
	if s.opts.Limit > 0 && s.n >= s.opts.Limit {
		s.done = true
		return false
	}
	if s.n%64 == 0 {
		if err := s.ctx.Err(); err != nil {
			s.err, s.done = err, true
			return false
		}
	}
	s.row = model.Row{}
	var ok bool
	if s.opts.Reverse {
		ok = s.res.prev(&s.row)
	} else {
		ok = s.res.next(&s.row)
	}
	if !ok {
		s.err, s.done = s.res.err(), true
		return false
	}
	s.n++
	return true
}

// Row returns the current row. It stays valid after Next, unless the
// scan is Transient.
func (s *Scanner) Row() model.Row { return s.row }

// Err returns the error that ended the scan, if any.
func (s *Scanner) Err() error { return s.err }

// Close releases the scan's pinned data.
func (s *Scanner) Close() error {
	if s.v == nil {
		return nil
	}
	err := s.m.Close()
	s.v.unref()
	s.v = nil
	s.done = true
	return err
}
