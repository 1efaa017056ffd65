package tablet

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/sstable"
)

// builder writes one new SSTable.
type builder struct {
	s     *Store
	num   uint64
	name  string
	f     dfs.File
	w     *sstable.Writer
	group model.LocalityGroup
	n     int
}

func (s *Store) newBuilder(group model.LocalityGroup, expected int) (*builder, error) {
	num := s.nextFile.Add(1) - 1
	name := s.tableName(num)
	if s.shared() {
		s.addPending(num)
	}
	f, err := s.fs.Create(name)
	if err != nil {
		return nil, model.IOError("create "+name, err)
	}
	w := sstable.NewWriter(f, name, sstable.WriterOptions{
		BlockSize:         s.opts.BlockSize,
		Compression:       group.Compression,
		BloomFilter:       !group.NoBloom,
		FalsePositiveRate: s.opts.BloomFalsePositiveRate,
		ExpectedKeys:      expected,
	})
	return &builder{s: s, num: num, name: name, f: f, w: w, group: group}, nil
}

func (b *builder) add(key, value []byte) error {
	b.n++
	return b.w.Add(key, value)
}

// finish completes the file and opens it. The caller syncs the directory.
func (b *builder) finish() (*table, error) {
	props, err := b.w.Finish()
	if cerr := b.f.Close(); err == nil && cerr != nil {
		err = model.IOError("close "+b.name, cerr)
	}
	if err != nil {
		b.abort()
		return nil, err
	}
	meta := fileMeta{Num: b.num, Path: b.sharedPath(), Size: props.DataSize + props.IndexSize + props.FilterSize, Entries: props.NumEntries,
		Deletions: props.NumDeletions, MinSeq: props.MinSeq, MaxSeq: props.MaxSeq, MaxTS: props.MaxTimestamp,
		Smallest: props.SmallestKey, Largest: props.LargestKey}
	if st, err := b.s.fs.Stat(b.name); err == nil {
		meta.Size = uint64(st)
	}
	t, err := b.s.openTable(meta, b.group.InMemory)
	if err != nil {
		b.abort()
		return nil, err
	}
	return t, nil
}

func (b *builder) abort() {
	b.f.Close()
	b.s.fs.Remove(b.name)
	b.s.donePending(&table{meta: fileMeta{Num: b.num}})
}

// sharedPath is the file's path in its descriptor: set in shared mode,
// where tablets of other stores may name it.
func (b *builder) sharedPath() string {
	if b.s.shared() {
		return b.name
	}
	return ""
}

func abortAll(bs []*builder) {
	for _, b := range bs {
		if b != nil {
			b.abort()
		}
	}
}

// flushFrozen writes every frozen memtable to SSTables, oldest first: the
// minor compaction of the paper's §5.4. Reads and writes continue.
func (t *Tablet) flushFrozen(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	for {
		t.mu.Lock()
		n := len(t.cur.frozen)
		var m *mem
		if n > 0 {
			m = t.cur.frozen[n-1]
		}
		t.mu.Unlock()
		if m == nil {
			return nil
		}
		if err := t.flushOne(ctx, m); err != nil {
			t.bgErr.Store(&err)
			return err
		}
		t.bgErr.Store(nil)
	}
}

func (t *Tablet) flushOne(ctx context.Context, m *mem) error {
	start := time.Now()
	m.writers.Wait()
	si := t.schema.Load()
	v := t.acquire()
	hasFiles := make([]bool, len(si.groups))
	for g := range hasFiles {
		hasFiles[g] = g < len(v.groups) && len(v.groups[g]) > 0
	}
	v.unref()

	// A row marker must reach every group that holds, or is about to hold,
	// cells it may hide; a pre-pass finds the groups with entries.
	present := append([]bool(nil), hasFiles...)
	it := m.NewIter(math.MaxUint64)
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		if fi := si.family(model.FamilyOf(key, len(model.RowPrefix(key)))); fi != nil {
			present[fi.group] = true
		}
	}
	bs := make([]*builder, len(si.groups))
	add := func(g int, key, value []byte) error {
		if bs[g] == nil {
			b, err := t.s.newBuilder(si.groups[g], m.Len())
			if err != nil {
				return err
			}
			bs[g] = b
		}
		return bs[g].add(key, value)
	}
	entries := 0
	for ok := it.First(); ok; ok = it.Next() {
		if entries%4096 == 0 {
			if err := ctx.Err(); err != nil {
				abortAll(bs)
				return err
			}
		}
		entries++
		key := it.Key()
		fam := model.FamilyOf(key, len(model.RowPrefix(key)))
		if len(fam) == 0 {
			for g := range bs {
				if present[g] {
					if err := add(g, key, it.Value()); err != nil {
						abortAll(bs)
						return err
					}
				}
			}
			continue
		}
		fi := si.family(fam)
		if fi == nil {
			continue // the family was dropped
		}
		if err := add(fi.group, key, it.Value()); err != nil {
			abortAll(bs)
			return err
		}
	}
	made := make([]*table, len(bs))
	var bytesOut int64
	files := 0
	for g, b := range bs {
		if b == nil {
			continue
		}
		tb, err := b.finish()
		bs[g] = nil
		if err != nil {
			abortAll(bs)
			for _, x := range made {
				if x != nil {
					t.s.discardTable(x)
				}
			}
			return err
		}
		made[g] = tb
		bytesOut += int64(tb.meta.Size)
		files++
	}
	if files > 0 {
		if err := t.s.fs.SyncDir(t.s.sstDir()); err != nil {
			for _, x := range made {
				if x != nil {
					t.s.discardTable(x)
				}
			}
			return model.IOError("sync "+t.s.sstDir(), err)
		}
	}
	err := t.s.edit(ctx, t, "", func(st *tabletState) {
		for g, tb := range made {
			if tb != nil {
				name := si.groups[g].Name
				st.Groups[name] = append([]fileMeta{tb.meta}, st.Groups[name]...)
			}
		}
		st.RedoLSN = max(st.RedoLSN, m.redoLSN)
		st.FlushedSeq = max(st.FlushedSeq, m.flushedSeq)
		st.MaxTS = max(st.MaxTS, m.maxTS)
	}, func(v *version) {
		for i, f := range v.frozen {
			if f == m {
				v.frozen = append(v.frozen[:i:i], v.frozen[i+1:]...)
				break
			}
		}
		for g, tb := range made {
			if tb != nil {
				tb.ref()
				v.groups[g] = append([]*table{tb}, v.groups[g]...)
				v.filesets[g] = t.s.filesets.Add(1)
			}
		}
	})
	if err != nil {
		for _, x := range made {
			if x != nil {
				t.s.discardTable(x)
			}
		}
		return err
	}
	t.s.donePending(made...)
	t.s.memBytes.Add(-m.accounted.Load())
	t.s.memoryChanged()
	if fn := t.s.opts.Events.FlushEnd; fn != nil {
		fn(FlushInfo{Tablet: t.id, Files: files, Bytes: bytesOut, Entries: m.Len(), Duration: time.Since(start)})
	}
	t.s.scheduleCompaction(t)
	return nil
}

// sortedRuns splits a group's files (newest first) into sorted runs:
// stretches of consecutive files whose key ranges do not overlap, such as
// the flushes of a sequential load. It returns the number of files in each
// run. A read meets at most one file of a run, so the policy counts runs,
// not files, and never merges files just because they are many.
func sortedRuns(files []*table) []int {
	var runs []int
	start := 0
	for i := range files {
		for j := start; j < i; j++ {
			a, b := &files[i].meta, &files[j].meta
			if bytes.Compare(a.Smallest, b.Largest) <= 0 && bytes.Compare(b.Smallest, a.Largest) <= 0 {
				runs = append(runs, i-start)
				start = i
				break
			}
		}
	}
	if len(files) > start {
		runs = append(runs, len(files)-start)
	}
	return runs
}

// pickCompaction chooses how many of a group's newest files to merge,
// whole sorted runs at a time. It takes the newest runs while the next
// older one is at most (1+SizeRatio) times their total, so runs of similar
// size merge and large old ones are rewritten rarely; it merges at least
// CompactionTrigger runs, and more when the group holds twice that many. A
// window that reaches the oldest file is a major compaction.
func pickCompaction(files []*table, o *Options) int {
	runs := sortedRuns(files)
	n := len(runs)
	if n < o.CompactionTrigger {
		return 0
	}
	size := make([]float64, n)
	f := 0
	for r, cnt := range runs {
		for _, t := range files[f : f+cnt] {
			size[r] += float64(t.meta.Size)
		}
		f += cnt
	}
	acc := size[0]
	k := 1
	for k < n && size[k] <= acc*(1+o.SizeRatio) {
		acc += size[k]
		k++
	}
	if k < o.CompactionTrigger {
		if n < 2*o.CompactionTrigger {
			return 0
		}
		k = n - o.CompactionTrigger + 1
	}
	nfiles := 0
	for _, cnt := range runs[:k] {
		nfiles += cnt
	}
	return nfiles
}

// wantsMajor reports whether a group should get a major compaction now:
// on request, when the periodic interval has passed, or when deletion
// markers make up a fifth of its entries.
func (t *Tablet) wantsMajor(files []*table, force bool) bool {
	if len(files) == 0 {
		return false
	}
	if force {
		return true
	}
	if iv := t.s.opts.MajorCompactionInterval; iv > 0 && t.s.nowMicros()-t.lastMajor.Load() >= iv.Microseconds() {
		return true
	}
	var entries, dels uint64
	for _, f := range files {
		entries += f.meta.Entries
		dels += f.meta.Deletions
	}
	return dels > 0 && dels*5 >= entries && (len(files) > 1 || dels == entries || dels >= 1024)
}

// compact runs the merging or major compactions each locality group
// needs. force runs a major compaction of every group.
func (t *Tablet) compact(ctx context.Context, force bool) error {
	t.maint.Lock()
	defer t.maint.Unlock()
	if t.retired.Load() {
		return nil
	}
	si := t.schema.Load()
	v := t.acquire()
	defer v.unref()
	majorAll := force || (t.s.opts.MajorCompactionInterval > 0 &&
		t.s.nowMicros()-t.lastMajor.Load() >= t.s.opts.MajorCompactionInterval.Microseconds())
	didMajor := true
	type job struct{ g, k int }
	var jobs []job
	var total int64
	for g, files := range v.groups {
		if g >= len(si.groups) {
			break
		}
		k := pickCompaction(files, &t.s.opts)
		if t.wantsMajor(files, majorAll) {
			k = len(files)
		}
		if k == 0 {
			if len(files) > 0 {
				didMajor = false
			}
			continue
		}
		if k < len(files) {
			didMajor = false
		}
		jobs = append(jobs, job{g, k})
		for _, f := range files[:k] {
			total += int64(inRangeBytes(f, t.rng))
		}
	}
	if len(jobs) > 0 {
		t.progress.start(total, majorAll && didMajor, time.UnixMicro(t.s.nowMicros()))
		defer t.progress.end()
	}
	for _, j := range jobs {
		files := v.groups[j.g]
		if err := t.compactGroup(ctx, si, j.g, files[:j.k], j.k == len(files)); err != nil {
			return err
		}
	}
	if majorAll && didMajor {
		now := t.s.nowMicros()
		t.lastMajor.Store(now)
		if t.s.shared() {
			return nil // the time of the last major compaction is not in the catalog
		}
		return t.s.edit(ctx, t, "", func(st *tabletState) { st.LastMajor = now }, nil)
	}
	return nil
}

// compactGroup merges inputs, a run of a group's newest files, into one.
func (t *Tablet) compactGroup(ctx context.Context, si *schemaInfo, g int, inputs []*table, major bool) error {
	start := time.Now()
	var expected int
	var inBytes, rangeBytes int64
	var rangeEntries float64 // the entries estimated to lie in the tablet's range
	its := make([]iter, 0, len(inputs))
	for _, f := range inputs {
		expected += int(f.meta.Entries)
		inBytes += int64(f.meta.Size)
		rb := inRangeBytes(f, t.rng)
		rangeBytes += int64(rb)
		if f.meta.Size > 0 {
			rangeEntries += float64(f.meta.Entries) * float64(rb) / float64(f.meta.Size)
		}
		its = append(its, f.r.NewIter())
	}
	base := t.progress.done.Load()
	m := &mergeIter{iters: its}
	defer m.Close()
	t.progress.setGroup(si.groups[g].Name)
	b, err := t.s.newBuilder(si.groups[g], expected)
	if err != nil {
		return err
	}
	c := compactor{major: major, now: t.s.nowMicros(), out: b, vis: visibility{si: si}}
	var limit []byte
	if len(t.rng.End) > 0 {
		limit = model.AppendRowPrefix(nil, t.rng.End)
	}
	n := 0
	for ok := m.SeekGE(model.AppendRowPrefix(nil, t.rng.Start)); ok; ok = m.Next() {
		key := m.Key()
		if limit != nil && bytes.Compare(key, limit) >= 0 {
			break
		}
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				b.abort()
				return err
			}
			if rangeEntries > 0 {
				t.progress.done.Store(base + min(rangeBytes, int64(float64(rangeBytes)*float64(n)/rangeEntries)))
			}
		}
		if err := c.entry(key, m.Value()); err != nil {
			b.abort()
			return err
		}
	}
	if err := m.err; err != nil {
		b.abort()
		return fmt.Errorf("compaction of tablet %d: %w", t.id, err)
	}
	t.progress.done.Store(base + rangeBytes)
	var out *table
	if b.n > 0 {
		if out, err = b.finish(); err != nil {
			return err
		}
		if err := t.s.fs.SyncDir(t.s.sstDir()); err != nil {
			t.s.discardTable(out)
			return model.IOError("sync "+t.s.sstDir(), err)
		}
	} else {
		b.abort()
	}
	name := si.groups[g].Name
	gone := map[uint64]bool{}
	for _, f := range inputs {
		gone[f.meta.Num] = true
	}
	err = t.s.edit(ctx, t, "", func(st *tabletState) {
		st.Groups[name] = replaceRun(st.Groups[name], gone, out, func(m fileMeta) uint64 { return m.Num }, func(t *table) fileMeta { return t.meta })
	}, func(v *version) {
		for _, f := range v.groups[g] {
			if gone[f.meta.Num] {
				f.unref()
			}
		}
		if out != nil {
			out.ref()
		}
		v.groups[g] = replaceRun(v.groups[g], gone, out, func(f *table) uint64 { return f.meta.Num }, func(t *table) *table { return t })
		v.filesets[g] = t.s.filesets.Add(1)
	})
	if err != nil {
		if out != nil {
			t.s.discardTable(out)
		}
		return err
	}
	t.s.donePending(out)
	if fn := t.s.opts.Events.CompactionEnd; fn != nil {
		info := CompactionInfo{Tablet: t.id, Group: name, Major: major, InputFiles: len(inputs), InputBytes: inBytes,
			DroppedCells: c.droppedCells, DroppedMarker: c.droppedMarkers, Duration: time.Since(start)}
		if out != nil {
			info.OutputBytes = int64(out.meta.Size)
		}
		fn(info)
	}
	return nil
}

// replaceRun replaces the elements of list whose id is in gone with out
// (at the place of the first of them), or drops them if out is nil.
func replaceRun[E any](list []E, gone map[uint64]bool, out *table, id func(E) uint64, conv func(*table) E) []E {
	res := make([]E, 0, len(list))
	placed := false
	for _, e := range list {
		if !gone[id(e)] {
			res = append(res, e)
			continue
		}
		if !placed && out != nil {
			res = append(res, conv(out))
		}
		placed = true
	}
	return res
}

// compactor decides, entry by entry in key order, what a compaction keeps.
// It drops cells hidden by a deletion marker in its input, older writes of
// the same (column, timestamp), cells of undeclared families, and cells
// the family's GC rule collects. A major compaction sees every file of the
// group, so it also drops the markers themselves and applies GC rules that
// rank versions; a merging compaction keeps markers, because they may hide
// cells in older files it does not read.
type compactor struct {
	major bool
	now   int64
	out   *builder
	vis   visibility

	droppedCells   int64
	droppedMarkers int64
}

func (c *compactor) entry(key, value []byte) error {
	if len(c.vis.row) == 0 || !bytes.HasPrefix(key, c.vis.row) {
		rp := model.RowPrefix(key)
		if rp == nil {
			return fmt.Errorf("%w: malformed key %x in compaction input", model.ErrCorruption, key)
		}
		c.vis.startRow(rp)
	}
	ts, seq, kind := model.Trailer(key)
	live, _ := c.vis.step(key, value, ts, seq, kind)
	if kind != model.KindSetCell {
		if c.major {
			c.droppedMarkers++
			return nil
		}
		return c.out.add(key, value)
	}
	fi := c.vis.famInfo
	if !live || fi == nil {
		c.droppedCells++
		return nil
	}
	c.vis.versions++
	if (c.major || !fi.gc.UsesVersions()) && fi.gc.Collects(c.vis.versions, ts, c.now) {
		c.droppedCells++
		return nil
	}
	return c.out.add(key, value)
}
