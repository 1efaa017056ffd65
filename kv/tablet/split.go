package tablet

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/cellardb/cellar/kv/model"
)

// Split divides tablet id at row key into [start, key) and [key, end). The
// children share the parent's SSTables (each reads only its own rows), so
// no file is rewritten; their compactions later write files of their own.
// Writes continue during the split except for the final flush of whatever
// reached the memtable while the first flush ran.
func (s *Store) Split(ctx context.Context, id uint64, key []byte) ([2]*Tablet, error) {
	t, err := s.Tablet(id)
	if err != nil {
		return [2]*Tablet{}, err
	}
	return t.split(ctx, key)
}

func (t *Tablet) split(ctx context.Context, key []byte) ([2]*Tablet, error) {
	s := t.s
	t.maint.Lock()
	defer t.maint.Unlock()
	if t.retired.Load() {
		return [2]*Tablet{}, t.notServing()
	}
	if !t.rng.Contains(key) || bytes.Equal(key, t.rng.Start) {
		return [2]*Tablet{}, fmt.Errorf("%w: split row %q is not inside tablet %d %v", model.ErrInvalidArgument, key, t.id, t.rng)
	}
	if err := t.Flush(ctx); err != nil {
		return [2]*Tablet{}, err
	}
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	if err := t.flushAllLocked(ctx); err != nil {
		return [2]*Tablet{}, err
	}
	si := t.schema.Load()
	v := t.acquire()
	defer v.unref()

	var kids [2]tabletState
	if s.shared() {
		t.editMu.Lock()
		defer t.editMu.Unlock()
	}
	s.stateMu.Lock()
	next := *s.state
	next.Tablets = nil
	for _, ts := range s.state.Tablets {
		if ts.ID != t.id {
			next.Tablets = append(next.Tablets, ts)
			continue
		}
		for i := range kids {
			k := cloneTabletState(&ts)
			k.ID = next.NextTablet
			next.NextTablet++
			k.RedoLSN, k.FlushedSeq, k.MaxTS = s.log.NextLSN(), t.nextSeq-1, t.maxTS
			if i == 0 {
				k.End = key
			} else {
				k.Start = key
			}
			kids[i] = k
		}
		next.Tablets = append(next.Tablets, kids[0], kids[1])
	}
	var err error
	if s.shared() {
		// Record the lower child first: it is a new row, while the upper
		// child's row replaces the parent's (both end where it ended).
		s.reserveIDs(next.NextTablet)
		s.stateMu.Unlock()
		err = s.recordOrAbandon(ctx, fmt.Sprintf("split from %v at %q", t.rng, key), kids[:], nil, t)
		s.stateMu.Lock()
		if err == nil {
			s.replaceStates([]uint64{t.id}, kids[:])
		}
	} else {
		err = s.saveLocked(&next)
	}
	s.stateMu.Unlock()
	if err != nil {
		return [2]*Tablet{}, err
	}
	var out [2]*Tablet
	for i := range kids {
		out[i] = s.newServingTablet(&kids[i], si, v.groups)
	}
	t.retired.Store(true)
	s.replaceTablets([]*Tablet{t}, out[:])
	s.retire(t)
	if fn := s.opts.Events.Split; fn != nil {
		fn(t.id, [2]uint64{out[0].id, out[1].id}, key)
	}
	for _, c := range out {
		s.scheduleCompaction(c)
	}
	return out, nil
}

// Merge joins two adjacent tablets of one table into one. The merged
// tablet references the SSTables of both.
func (s *Store) Merge(ctx context.Context, a, b uint64) (*Tablet, error) {
	ta, err := s.Tablet(a)
	if err != nil {
		return nil, err
	}
	tb, err := s.Tablet(b)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(tb.rng.End, ta.rng.Start) && len(tb.rng.End) > 0 {
		ta, tb = tb, ta
	}
	if ta.table != tb.table || len(ta.rng.End) == 0 || !bytes.Equal(ta.rng.End, tb.rng.Start) {
		return nil, fmt.Errorf("%w: tablets %d %v and %d %v are not adjacent tablets of one table", model.ErrInvalidArgument, ta.id, ta.rng, tb.id, tb.rng)
	}
	for _, t := range []*Tablet{ta, tb} {
		t.maint.Lock()
		defer t.maint.Unlock()
		if t.retired.Load() {
			return nil, t.notServing()
		}
		if err := t.Flush(ctx); err != nil {
			return nil, err
		}
		if err := t.clipSharedFiles(ctx); err != nil {
			return nil, err
		}
	}
	for _, t := range []*Tablet{ta, tb} {
		t.commitMu.Lock()
		defer t.commitMu.Unlock()
		if err := t.flushAllLocked(ctx); err != nil {
			return nil, err
		}
	}
	if s.shared() {
		for _, t := range []*Tablet{ta, tb} {
			t.editMu.Lock()
			defer t.editMu.Unlock()
		}
	}
	si := ta.schema.Load()
	va, vb := ta.acquire(), tb.acquire()
	defer va.unref()
	defer vb.unref()

	s.stateMu.Lock()
	next := *s.state
	next.Tablets = nil
	var sa, sb tabletState
	for _, ts := range s.state.Tablets {
		switch ts.ID {
		case ta.id:
			sa = ts
		case tb.id:
			sb = ts
		default:
			next.Tablets = append(next.Tablets, ts)
		}
	}
	merged := cloneTabletState(&sa)
	merged.ID = next.NextTablet
	next.NextTablet++
	merged.End = sb.End
	merged.RedoLSN = s.log.NextLSN()
	merged.FlushedSeq = max(ta.nextSeq, tb.nextSeq) - 1
	merged.MaxTS = max(ta.maxTS, tb.maxTS)
	merged.LastMajor = min(sa.LastMajor, sb.LastMajor)
	for name, files := range sb.Groups {
		merged.Groups[name] = unionFiles(merged.Groups[name], files, func(f fileMeta) fileMeta { return f })
	}
	next.Tablets = append(next.Tablets, merged)
	if s.shared() {
		// The merged row replaces the upper tablet's (same end); the
		// lower one's row goes after it.
		s.reserveIDs(next.NextTablet)
		s.stateMu.Unlock()
		err = s.recordOrAbandon(ctx, fmt.Sprintf("merged from %v and %v", ta.rng, tb.rng), []tabletState{merged}, []tabletState{sa}, ta, tb)
		s.stateMu.Lock()
		if err == nil {
			s.replaceStates([]uint64{ta.id, tb.id}, []tabletState{merged})
		}
	} else {
		err = s.saveLocked(&next)
	}
	s.stateMu.Unlock()
	if err != nil {
		return nil, err
	}
	groups := make([][]*table, len(si.groups))
	for g := range groups {
		var x, y []*table
		if g < len(va.groups) {
			x = va.groups[g]
		}
		if g < len(vb.groups) {
			y = vb.groups[g]
		}
		groups[g] = unionFiles(x, y, func(t *table) fileMeta { return t.meta })
	}
	m := s.newServingTablet(&merged, si, groups)
	ta.retired.Store(true)
	tb.retired.Store(true)
	s.replaceTablets([]*Tablet{ta, tb}, []*Tablet{m})
	s.retire(ta)
	s.retire(tb)
	if fn := s.opts.Events.Merge; fn != nil {
		fn([2]uint64{ta.id, tb.id}, m.id)
	}
	s.scheduleCompaction(m)
	return m, nil
}

// flushAllLocked waits for every write that has a sequence number to be
// applied, then flushes everything, so that the tablet's SSTables hold all
// of its data. commitMu must be held, which keeps new writes out.
func (t *Tablet) flushAllLocked(ctx context.Context) error {
	t.waitVisible(t.nextSeq - 1)
	t.freezeLocked(true)
	return t.flushFrozen(ctx)
}

// clipSharedFiles rewrites every file that holds rows outside the tablet
// into one that holds only the tablet's rows. A tablet owns the rows of a
// shared file that fall in its range, and nothing else: its sibling may
// have compacted the other rows away since, so once the two ranges join,
// the old rows of the other side must not come back. maint must be held.
func (t *Tablet) clipSharedFiles(ctx context.Context) error {
	si := t.schema.Load()
	v := t.acquire()
	defer v.unref()
	lo := model.AppendRowPrefix(nil, t.rng.Start)
	var hi []byte
	if len(t.rng.End) > 0 {
		hi = model.AppendRowPrefix(nil, t.rng.End)
	}
	for g, files := range v.groups {
		for _, f := range files {
			if bytes.Compare(f.meta.Smallest, lo) >= 0 && (hi == nil || bytes.Compare(f.meta.Largest, hi) < 0) {
				continue
			}
			if err := t.compactGroup(ctx, si, g, []*table{f}, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// unionFiles merges the file lists of two adjacent tablets, newest first
// by their highest sequence number. After clipSharedFiles the lists share
// no file and cover disjoint rows, so their relative order only guides the
// compaction policy.
func unionFiles[E any](a, b []E, meta func(E) fileMeta) []E {
	out := slices.Clone(a)
	for _, y := range b {
		dup := false
		for _, x := range a {
			dup = dup || meta(x).Num == meta(y).Num
		}
		if !dup {
			out = append(out, y)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return meta(out[i]).MaxSeq > meta(out[j]).MaxSeq })
	return out
}

// replaceTablets swaps tablets in the routing tables in one step, so a
// lookup never finds a gap.
func (s *Store) replaceTablets(old, new []*Tablet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range old {
		delete(s.tablets, t.id)
		list := s.byTable[t.table]
		if i := slices.Index(list, t); i >= 0 {
			s.byTable[t.table] = slices.Delete(slices.Clone(list), i, i+1)
		}
	}
	for _, t := range new {
		s.tablets[t.id] = t
		list := append(slices.Clone(s.byTable[t.table]), t)
		sort.Slice(list, func(i, j int) bool { return bytes.Compare(list[i].rng.Start, list[j].rng.Start) < 0 })
		s.byTable[t.table] = list
	}
}

// inRangeBytes estimates how many bytes of f hold rows of rng, from the
// block index.
func inRangeBytes(f *table, rng model.RowRange) uint64 {
	lo := model.AppendRowPrefix(nil, rng.Start)
	var hi []byte
	if len(rng.End) > 0 {
		hi = model.AppendRowPrefix(nil, rng.End)
	}
	if bytes.Compare(f.meta.Smallest, lo) >= 0 && (hi == nil || bytes.Compare(f.meta.Largest, hi) < 0) {
		return f.meta.Size
	}
	var n uint64
	var prev []byte
	for _, b := range f.r.Blocks() {
		// The block holds keys in (prev, b.LastKey].
		if bytes.Compare(b.LastKey, lo) >= 0 && (hi == nil || prev == nil || bytes.Compare(prev, hi) < 0) {
			n += b.Length
		}
		prev = b.LastKey
	}
	return n
}

// Size estimates the bytes of SSTable data the tablet's rows take.
func (t *Tablet) Size() uint64 {
	v := t.acquire()
	defer v.unref()
	var n uint64
	for _, g := range v.groups {
		for _, f := range g {
			n += inRangeBytes(f, t.rng)
		}
	}
	return n
}

// splitKey picks a row near the middle of the tablet's data: the row that
// ends the block at the halfway point of the largest file of the largest
// locality group.
func (t *Tablet) splitKey() ([]byte, bool) {
	v := t.acquire()
	defer v.unref()
	var best *table
	var bestN uint64
	for _, g := range v.groups {
		for _, f := range g {
			if n := inRangeBytes(f, t.rng); n > bestN {
				best, bestN = f, n
			}
		}
	}
	if best == nil {
		return nil, false
	}
	lo := model.AppendRowPrefix(nil, t.rng.Start)
	var acc uint64
	for _, b := range best.r.Blocks() {
		if bytes.Compare(b.LastKey, lo) < 0 {
			continue
		}
		acc += b.Length
		if acc < bestN/2 {
			continue
		}
		rp := model.RowPrefix(b.LastKey)
		if rp == nil {
			continue
		}
		row := model.RowOf(rp)
		if bytes.Compare(row, t.rng.Start) > 0 && t.rng.Contains(row) {
			return bytes.Clone(row), true
		}
	}
	return nil, false
}

// maybeSplit splits a tablet that has grown past SplitSize.
func (s *Store) maybeSplit(ctx context.Context, t *Tablet) {
	if s.opts.SplitSize <= 0 || t.retired.Load() || t.Size() < uint64(s.opts.SplitSize) {
		return
	}
	if s.opts.KeepWhole != nil && s.opts.KeepWhole(t.table, t.rng) {
		return
	}
	key, ok := t.splitKey()
	if !ok {
		return
	}
	if _, err := t.split(ctx, key); err != nil {
		s.backgroundError(t, err)
	}
}
