package tablet

import (
	"sync"
	"sync/atomic"

	"github.com/cellardb/cellar/kv/memtable"
	"github.com/cellardb/cellar/kv/sstable"
)

// table is an open SSTable shared by every version (and, after a split,
// every tablet) that references it. When the last reference goes, the
// reader closes and, if the file is no longer part of any tablet's state,
// the store deletes it.
type table struct {
	meta fileMeta
	r    *sstable.Reader
	refs atomic.Int32
	s    *Store
}

func (f *table) ref() { f.refs.Add(1) }

func (f *table) unref() {
	if f.refs.Add(-1) == 0 {
		f.s.releaseTable(f)
	}
}

// mem is a memtable with the bookkeeping its flush needs.
type mem struct {
	*memtable.Memtable
	// writers counts writes that took a sequence number while this memtable
	// was active and have not inserted (or abandoned) their entries yet. A
	// flush waits for it to drain.
	writers sync.WaitGroup
	// Set when the memtable is frozen: every record of the tablet below
	// redoLSN, and every entry up to flushedSeq, is in this memtable or an
	// older one.
	redoLSN    uint64
	flushedSeq uint64
	maxTS      int64
	// accounted is how much of the memtable the store's memory total
	// counts.
	accounted atomic.Int64
}

// version is an immutable view of a tablet's data: the active memtable, the
// frozen ones waiting for their flush, and the SSTables of each locality
// group. Readers pin a version for as long as they read; the tablet installs
// a new one after every freeze, flush, compaction and schema change.
type version struct {
	refs   atomic.Int32
	active *mem
	frozen []*mem // newest first
	// groups[i] holds the SSTables of locality group i of the schema,
	// newest first.
	groups [][]*table
	// filesets[i] identifies the file list of group i for the scan cache.
	filesets []uint64
}

func (v *version) ref() { v.refs.Add(1) }

func (v *version) unref() {
	if v.refs.Add(-1) == 0 {
		for _, g := range v.groups {
			for _, f := range g {
				f.unref()
			}
		}
	}
}

// clone copies v with a fresh reference count; the caller fixes it up and
// installs it. It takes references on every table.
func (v *version) clone() *version {
	n := &version{active: v.active, frozen: append([]*mem(nil), v.frozen...),
		groups: make([][]*table, len(v.groups)), filesets: append([]uint64(nil), v.filesets...)}
	for i, g := range v.groups {
		n.groups[i] = append([]*table(nil), g...)
		for _, f := range g {
			f.ref()
		}
	}
	n.refs.Store(1)
	return n
}

// memtables returns the active memtable and the frozen ones, newest first.
func (v *version) memtables() []*mem {
	out := make([]*mem, 0, 1+len(v.frozen))
	out = append(out, v.active)
	return append(out, v.frozen...)
}
