package dfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"sort"
	"strings"
	"sync"
)

// ErrPowerLoss is what a Faulty returns once Crash has run: the machine
// it emulates has lost power, and its process is about to end.
var ErrPowerLoss = errors.New("power loss")

// Faulty wraps any FS, Local included, and injects the disk faults a real
// process can meet: failed fsyncs and the loss of unsynced data at a power
// loss. Mem does the same for in-memory tests; Faulty exists so that a
// real cellar process over a local directory can be crashed the same way
// (cellar tabletserver -fault-injection).
//
// It remembers, for every file created through it, how many bytes were
// written and how many of those a Sync made durable, and which files were
// created since their directory's last SyncDir. Crash then undoes, in the
// underlying FS, what a power loss may undo: each file is cut to its
// synced length (optionally keeping a torn, possibly garbled, prefix of
// the unsynced tail), bytes whose fsync failed are zeroed (on Linux a
// failed fsync may drop the dirty pages while a later fsync succeeds), and
// files whose creation was never made durable are removed. Renames and
// removals count as durable at once, and so do directories.
//
// Only writes through this Faulty are tracked: other processes sharing the
// underlying directory are other machines, and keep their data.
type Faulty struct {
	fs FS

	// gate is read-locked by every operation and write-locked by Crash, so
	// that no write lands in the underlying FS after Crash undid the
	// unsynced ones.
	gate    sync.RWMutex
	crashed bool

	mu    sync.Mutex
	nodes map[string]*faultyNode // by current name; files with something to undo
	fresh map[string]bool        // names created since their directory's last SyncDir
	rule  syncRule
	stats FaultyStats
	// stall, if set, holds the syncs of files under stallPrefix until it
	// is closed, by ClearFaults or Crash.
	stall       chan struct{}
	stallPrefix string
}

// syncRule says which syncs fail.
type syncRule struct {
	n      int // syncs left to fail; -1: all
	prefix string
}

// faultyNode is a file written through a Faulty.
type faultyNode struct {
	name    string
	f       File // the underlying handle, kept open until nothing is left to undo
	open    bool // the caller has not closed its handle
	written int64
	synced  int64
	lost    [][2]int64 // byte ranges whose fsync failed
}

// pending reports whether a crash would change the file.
func (n *faultyNode) pending() bool { return n.written > n.synced || len(n.lost) > 0 }

// FaultyStats counts what a Faulty did.
type FaultyStats struct {
	// FailedSyncs is the number of syncs it failed.
	FailedSyncs int
	// Cut, Removed and TornBytes describe the last Crash: files cut back,
	// files removed, and unsynced bytes kept as torn tails.
	Cut, Removed int
	TornBytes    int64
}

// NewFaulty wraps fs. It injects nothing until told to.
func NewFaulty(fs FS) *Faulty {
	return &Faulty{fs: fs, nodes: map[string]*faultyNode{}, fresh: map[string]bool{}}
}

// FailSyncs makes the next n syncs of files whose name starts with prefix
// fail; n < 0 fails every one until ClearFaults, and n == 0 clears the rule.
// A failed sync leaves the written bytes in the file but records them as
// lost: a crash zeroes them even if a later sync of the file succeeds.
func (f *Faulty) FailSyncs(n int, prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule = syncRule{n: n, prefix: prefix}
}

// StallSyncs makes the syncs of files whose name starts with prefix wait,
// as on a disk that stopped answering, until ClearFaults or Crash; a
// stalled sync then fails if the machine crashed. Writes go on landing,
// unsynced, so that a Crash after a stall always has unsynced tails to cut.
func (f *Faulty) StallSyncs(prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stall == nil {
		f.stall = make(chan struct{})
	}
	f.stallPrefix = prefix
}

// ClearFaults stops injecting sync failures and releases stalled syncs.
func (f *Faulty) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule = syncRule{}
	f.releaseStall()
}

// releaseStall lets stalled syncs go on. mu is held.
func (f *Faulty) releaseStall() {
	if f.stall != nil {
		close(f.stall)
		f.stall = nil
	}
}

// stalled returns the channel a sync of name must wait on, or nil.
func (f *Faulty) stalled(name string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stall != nil && strings.HasPrefix(name, f.stallPrefix) {
		return f.stall
	}
	return nil
}

// Stats returns the counters.
func (f *Faulty) Stats() FaultyStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// FaultyCrash says how a Crash tears files.
type FaultyCrash struct {
	// Torn keeps a random prefix of each file's unsynced tail, and garbles
	// one byte of it now and then, as a power loss mid-write may. Without
	// it every unsynced byte is lost.
	Torn bool
	// Seed drives the torn lengths and garbling; files are visited in name
	// order, so one seed gives one outcome for one history of writes.
	Seed int64
}

// Crash emulates a power loss of the machine: it undoes in the underlying
// FS what was not durable, as the type's comment says, and from then on
// every operation fails with ErrPowerLoss. The caller ends the process
// right after (cellar kills itself with SIGKILL), so nothing runs on the
// state a real machine would never have had. The first error met while
// undoing is returned; the rest is still undone.
func (f *Faulty) Crash(opts FaultyCrash) (FaultyStats, error) {
	f.gate.Lock()
	defer f.gate.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return f.stats, nil
	}
	f.crashed = true
	rnd := rand.New(rand.NewSource(opts.Seed))
	var errs []error
	names := make([]string, 0, len(f.nodes))
	for name := range f.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n := f.nodes[name]
		if f.fresh[name] {
			continue // removed below
		}
		if !n.pending() {
			continue
		}
		torn, err := undo(n, opts.Torn, rnd)
		if err != nil {
			errs = append(errs, fmt.Errorf("dfs: crash: undo unsynced writes of %s: %w", name, err))
		}
		f.stats.Cut++
		f.stats.TornBytes += torn
	}
	for _, n := range f.nodes {
		n.f.Close()
	}
	fresh := make([]string, 0, len(f.fresh))
	for name := range f.fresh {
		fresh = append(fresh, name)
	}
	sort.Strings(fresh)
	for _, name := range fresh {
		if err := f.fs.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("dfs: crash: remove %s, whose creation was not durable: %w", name, err))
		}
		f.stats.Removed++
	}
	f.nodes, f.fresh = map[string]*faultyNode{}, map[string]bool{}
	// Stalled syncs find the machine crashed once they go on.
	f.releaseStall()
	return f.stats, errors.Join(errs...)
}

// undo rewrites n's file as a power loss leaves it and returns how many
// unsynced bytes it kept.
func undo(n *faultyNode, torn bool, rnd *rand.Rand) (int64, error) {
	keep, kept := n.synced, int64(0)
	if torn && n.written > n.synced {
		kept = rnd.Int63n(n.written - n.synced + 1)
		keep += kept
	}
	// The bytes from the first one that changes to keep are read, fixed
	// and written back: File has no random writes, only Truncate and
	// appends.
	from := keep
	for _, r := range n.lost {
		if r[0] < keep {
			from = min(from, r[0])
		}
	}
	garble := kept > 0 && rnd.Intn(4) == 0
	var at int64
	if garble {
		at = n.synced + rnd.Int63n(kept)
		from = min(from, at)
	}
	buf := make([]byte, keep-from)
	if len(buf) > 0 {
		if _, err := n.f.ReadAt(buf, from); err != nil && err != io.EOF {
			return 0, err
		}
	}
	for _, r := range n.lost {
		for i := max(r[0], from); i < min(r[1], keep); i++ {
			buf[i-from] = 0
		}
	}
	if garble {
		buf[at-from] ^= byte(1 + rnd.Intn(255))
	}
	if err := n.f.Truncate(from); err != nil {
		return 0, err
	}
	if len(buf) > 0 {
		if _, err := n.f.Write(buf); err != nil {
			return 0, err
		}
	}
	return kept, n.f.Sync()
}

// enter admits an operation unless the machine crashed; leave ends it.
func (f *Faulty) enter(op, name string) error {
	f.gate.RLock()
	if f.crashed {
		f.gate.RUnlock()
		return &fs.PathError{Op: op, Path: name, Err: ErrPowerLoss}
	}
	return nil
}

func (f *Faulty) leave() { f.gate.RUnlock() }

// forget drops what is known of name, whose file is gone or replaced.
// mu is held.
func (f *Faulty) forget(name string) {
	if n := f.nodes[name]; n != nil {
		delete(f.nodes, name)
		if !n.open {
			n.f.Close()
		}
		n.name = ""
	}
	delete(f.fresh, name)
}

// Create implements FS.
func (f *Faulty) Create(name string) (File, error) {
	if err := f.enter("create", name); err != nil {
		return nil, err
	}
	defer f.leave()
	_, statErr := f.fs.Stat(name)
	u, err := f.fs.Create(name)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	wasFresh := f.fresh[name]
	f.forget(name)
	n := &faultyNode{name: name, f: u, open: true}
	f.nodes[name] = n
	// Truncating an existing file changes no directory entry.
	if wasFresh || errors.Is(statErr, fs.ErrNotExist) {
		f.fresh[name] = true
	}
	return &faultyFile{fs: f, n: n, name: name}, nil
}

// Open implements FS.
func (f *Faulty) Open(name string) (File, error) {
	if err := f.enter("open", name); err != nil {
		return nil, err
	}
	defer f.leave()
	u, err := f.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultyFile{fs: f, f: u, name: name}, nil
}

// Remove implements FS.
func (f *Faulty) Remove(name string) error {
	if err := f.enter("remove", name); err != nil {
		return err
	}
	defer f.leave()
	if err := f.fs.Remove(name); err != nil {
		return err
	}
	f.mu.Lock()
	f.forget(name)
	f.mu.Unlock()
	return nil
}

// Rename implements FS. A file renamed over an existing one counts as
// durable under its new name: a crash may keep either file there, never
// neither.
func (f *Faulty) Rename(oldname, newname string) error {
	if err := f.enter("rename", oldname); err != nil {
		return err
	}
	defer f.leave()
	_, statErr := f.fs.Stat(newname)
	if err := f.fs.Rename(oldname, newname); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if oldname == newname {
		return nil
	}
	n, wasFresh := f.nodes[oldname], f.fresh[oldname]
	delete(f.nodes, oldname)
	delete(f.fresh, oldname)
	f.forget(newname)
	if n != nil {
		n.name = newname
		f.nodes[newname] = n
	}
	if wasFresh && errors.Is(statErr, fs.ErrNotExist) {
		f.fresh[newname] = true
	}
	return nil
}

// MkdirAll implements FS.
func (f *Faulty) MkdirAll(dir string) error {
	if err := f.enter("mkdir", dir); err != nil {
		return err
	}
	defer f.leave()
	return f.fs.MkdirAll(dir)
}

// List implements FS.
func (f *Faulty) List(dir string) ([]string, error) {
	if err := f.enter("list", dir); err != nil {
		return nil, err
	}
	defer f.leave()
	return f.fs.List(dir)
}

// Stat implements FS.
func (f *Faulty) Stat(name string) (int64, error) {
	if err := f.enter("stat", name); err != nil {
		return 0, err
	}
	defer f.leave()
	return f.fs.Stat(name)
}

// SyncDir implements FS: the creations in dir become durable.
func (f *Faulty) SyncDir(dir string) error {
	if err := f.enter("syncdir", dir); err != nil {
		return err
	}
	defer f.leave()
	if err := f.fs.SyncDir(dir); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.fresh {
		if Dir(name) == dir {
			delete(f.fresh, name)
		}
	}
	return nil
}

// Lock implements FS. A crash does not release locks: the process ends
// right after, and its locks with it.
func (f *Faulty) Lock(name string) (io.Closer, error) {
	if err := f.enter("lock", name); err != nil {
		return nil, err
	}
	defer f.leave()
	return f.fs.Lock(name)
}

// failSync decides whether a sync of name fails, counting it. mu is held.
func (f *Faulty) failSync(name string) bool {
	r := &f.rule
	if r.n == 0 || !strings.HasPrefix(name, r.prefix) {
		return false
	}
	if r.n > 0 {
		r.n--
	}
	f.stats.FailedSyncs++
	return true
}

// faultyFile is a handle from a Faulty: n is set for a file being written,
// f for one opened to read.
type faultyFile struct {
	fs     *Faulty
	n      *faultyNode
	f      File
	name   string
	closed bool
}

func (h *faultyFile) under() File {
	if h.n != nil {
		return h.n.f
	}
	return h.f
}

func (h *faultyFile) Write(b []byte) (int, error) {
	if err := h.fs.enter("write", h.name); err != nil {
		return 0, err
	}
	defer h.fs.leave()
	n, err := h.under().Write(b)
	if h.n != nil {
		h.fs.mu.Lock()
		h.n.written += int64(n)
		h.fs.mu.Unlock()
	}
	return n, err
}

func (h *faultyFile) ReadAt(b []byte, off int64) (int, error) {
	if err := h.fs.enter("read", h.name); err != nil {
		return 0, err
	}
	defer h.fs.leave()
	return h.under().ReadAt(b, off)
}

func (h *faultyFile) Sync() error {
	// Stalled outside the gate, so that a Crash is not held up by it.
	if c := h.fs.stalled(h.name); c != nil {
		<-c
	}
	if err := h.fs.enter("sync", h.name); err != nil {
		return err
	}
	defer h.fs.leave()
	if h.n == nil {
		return h.f.Sync()
	}
	h.fs.mu.Lock()
	name := h.n.name
	if name == "" {
		name = h.name
	}
	if h.fs.failSync(name) {
		if h.n.written > h.n.synced {
			h.n.lost = append(h.n.lost, [2]int64{h.n.synced, h.n.written})
		}
		// Like Linux after a failed writeback: the pages are clean now,
		// so the next sync has nothing to redo and may well succeed.
		h.n.synced = h.n.written
		h.fs.mu.Unlock()
		return &fs.PathError{Op: "sync", Path: h.name, Err: ErrInjected}
	}
	h.fs.mu.Unlock()
	if err := h.n.f.Sync(); err != nil {
		return err
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	h.n.synced = h.n.written
	h.release()
	return nil
}

// release stops tracking a closed file once a crash would not change it.
// mu is held.
func (h *faultyFile) release() {
	n := h.n
	if n.open || n.pending() || n.name == "" {
		return
	}
	delete(h.fs.nodes, n.name)
	n.f.Close()
}

func (h *faultyFile) Size() (int64, error) {
	if err := h.fs.enter("stat", h.name); err != nil {
		return 0, err
	}
	defer h.fs.leave()
	return h.under().Size()
}

func (h *faultyFile) Truncate(size int64) error {
	if err := h.fs.enter("truncate", h.name); err != nil {
		return err
	}
	defer h.fs.leave()
	if err := h.under().Truncate(size); err != nil {
		return err
	}
	if h.n != nil {
		h.fs.mu.Lock()
		h.n.written = size
		h.n.synced = min(h.n.synced, size)
		lost := h.n.lost[:0]
		for _, r := range h.n.lost {
			if r[1] = min(r[1], size); r[0] < r[1] {
				lost = append(lost, r)
			}
		}
		h.n.lost = lost
		h.fs.mu.Unlock()
	}
	return nil
}

// Close closes the handle. The underlying file of a written one stays
// open while a crash could still change it, so that Crash can cut it.
func (h *faultyFile) Close() error {
	if h.closed {
		return &fs.PathError{Op: "close", Path: h.name, Err: fs.ErrClosed}
	}
	h.closed = true
	if h.n == nil {
		return h.f.Close()
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	h.n.open = false
	if h.n.name == "" {
		return h.n.f.Close() // removed or replaced: nothing to undo
	}
	if h.fs.crashed {
		return nil
	}
	if !h.n.pending() {
		delete(h.fs.nodes, h.n.name)
		return h.n.f.Close()
	}
	return nil
}
