package tablet

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellardb/cellar/kv/model"
)

// compactionProgress is how far the tablet's running compaction is, for
// Stats: status pages and the operator's forced compactions show it.
// Bytes are of SSTable data in the tablet's range; done is estimated from
// the entries merged so far.
type compactionProgress struct {
	total   atomic.Int64
	done    atomic.Int64
	major   atomic.Bool
	running atomic.Bool
	mu      sync.Mutex
	group   string // the locality group being merged now
	started time.Time
}

func (p *compactionProgress) start(total int64, major bool, now time.Time) {
	p.done.Store(0)
	p.total.Store(total)
	p.major.Store(major)
	p.mu.Lock()
	p.group, p.started = "", now
	p.mu.Unlock()
	p.running.Store(true)
}

func (p *compactionProgress) setGroup(name string) {
	p.mu.Lock()
	p.group = name
	p.mu.Unlock()
}

func (p *compactionProgress) end() {
	p.running.Store(false)
	p.total.Store(0)
	p.done.Store(0)
}

// CompactionProgress describes a running compaction of a tablet.
type CompactionProgress struct {
	// Running is false when no compaction of the tablet runs; the other
	// fields are then zero.
	Running bool
	// Major is set for a major compaction of every locality group.
	Major bool
	// Group is the locality group being merged now.
	Group string
	// DoneBytes of TotalBytes of input are merged.
	DoneBytes  int64
	TotalBytes int64
	Started    time.Time
}

// Compaction returns the progress of the tablet's running compaction.
func (t *Tablet) Compaction() CompactionProgress {
	p := &t.progress
	if !p.running.Load() {
		return CompactionProgress{}
	}
	total, done := p.total.Load(), p.done.Load()
	c := CompactionProgress{Running: true, Major: p.major.Load(), DoneBytes: min(done, total), TotalBytes: total}
	p.mu.Lock()
	c.Group, c.Started = p.group, p.started
	p.mu.Unlock()
	return c
}

// SplitAtMidpoint splits a tablet at a row near the middle of its data,
// as an automatic split would. The memtable is flushed first, so that
// recent writes count. A tablet whose data is too small to hold two
// blocks has no midpoint: that is ErrFailedPrecondition.
func (s *Store) SplitAtMidpoint(ctx context.Context, id uint64) ([2]*Tablet, error) {
	t, err := s.Tablet(id)
	if err != nil {
		return [2]*Tablet{}, err
	}
	if err := t.Flush(ctx); err != nil {
		return [2]*Tablet{}, err
	}
	key, ok := t.midpointKey()
	if !ok {
		return [2]*Tablet{}, fmt.Errorf("%w: tablet %d %v holds too little data to find a midpoint; name a split row instead",
			model.ErrFailedPrecondition, t.id, t.rng)
	}
	return t.split(ctx, key)
}

// midpointKey picks the row at which half the tablet's SSTable data lies
// below, over the blocks of every file (an automatic split looks at the
// largest file only, which after a few flushes covers only a slice of the
// rows). The row ends a block, so it is a whole row.
func (t *Tablet) midpointKey() ([]byte, bool) {
	v := t.acquire()
	defer v.unref()
	lo := model.AppendRowPrefix(nil, t.rng.Start)
	type block struct {
		row []byte
		n   uint64
	}
	var blocks []block
	var total uint64
	for _, g := range v.groups {
		for _, f := range g {
			for _, b := range f.r.Blocks() {
				if bytes.Compare(b.LastKey, lo) < 0 {
					continue
				}
				rp := model.RowPrefix(b.LastKey)
				if rp == nil {
					continue
				}
				row := model.RowOf(rp)
				if !t.rng.Contains(row) {
					continue
				}
				blocks = append(blocks, block{bytes.Clone(row), b.Length})
				total += b.Length
			}
		}
	}
	sort.Slice(blocks, func(i, j int) bool { return bytes.Compare(blocks[i].row, blocks[j].row) < 0 })
	var acc uint64
	for _, b := range blocks {
		acc += b.n
		if 2*acc >= total && bytes.Compare(b.row, t.rng.Start) > 0 {
			return b.row, true
		}
	}
	return nil, false
}

// MemtableBytes is what the tablet holds in memtables, active and frozen:
// the writes its SSTables (Size) do not hold yet.
func (t *Tablet) MemtableBytes() int64 {
	v := t.acquire()
	defer v.unref()
	var n int64
	for _, m := range v.memtables() {
		n += m.ApproximateBytes()
	}
	return n
}
