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
	"syscall"
)

// Op names a file-system operation, for fault hooks.
type Op uint8

// The operations a fault hook sees.
const (
	OpCreate Op = iota
	OpOpen
	OpWrite
	OpSync
	OpRead
	OpRemove
	OpRename
	OpMkdir
	OpList
	OpSyncDir
	OpTruncate
)

func (o Op) String() string {
	return [...]string{"create", "open", "write", "sync", "read", "remove", "rename", "mkdir", "list", "syncdir", "truncate"}[o]
}

// FaultHook decides whether an operation on name fails. It returns nil to
// let the operation proceed, or the error to fail it with. It runs with the
// file system's lock held and must not call back into it.
type FaultHook func(op Op, name string) error

// ErrInjected is a ready-made error for fault hooks to return.
var ErrInjected = errors.New("injected fault")

// ErrCrashed is returned by handles opened before a Crash.
var ErrCrashed = errors.New("file handle from before a crash")

// memNode is a file. Files are append-only except for Truncate, so the
// synced content is data[:syncedLen] unless a truncate cut into it, in which
// case syncedCopy holds it.
type memNode struct {
	data       []byte
	syncedLen  int
	syncedCopy []byte
}

func (n *memNode) synced() []byte {
	if n.syncedCopy != nil {
		return n.syncedCopy
	}
	return n.data[:n.syncedLen]
}

type memDir struct {
	entries map[string]*memNode // current view
	durable map[string]*memNode // as of the last SyncDir
}

// Mem is an in-memory FS with crash and fault injection. Its zero value is
// not usable; call NewMem.
type Mem struct {
	mu       sync.Mutex
	dirs     map[string]*memDir
	epoch    uint64
	hook     FaultHook
	capacity int64 // 0: unlimited
	used     int64
	locks    map[string]*memLock
}

// NewMem returns an empty in-memory file system.
func NewMem() *Mem {
	return &Mem{dirs: map[string]*memDir{"": newMemDir()}, locks: map[string]*memLock{}}
}

func newMemDir() *memDir {
	return &memDir{entries: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// SetFaultHook installs (or, with nil, removes) a fault hook.
func (m *Mem) SetFaultHook(h FaultHook) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hook = h
}

// SetCapacity limits the bytes all files may hold together; writes past it
// fail with ENOSPC after writing what fits. Zero means unlimited.
func (m *Mem) SetCapacity(bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = bytes
}

// Used returns the bytes all files hold.
func (m *Mem) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// CrashOptions says what survives a Crash.
type CrashOptions struct {
	// Rand, if set, keeps a random prefix of each file's unsynced tail (a
	// torn write) and may garble the last bytes kept. Without it every
	// unsynced byte is lost.
	Rand *rand.Rand
}

// Crash simulates a machine crash: directory entries revert to their last
// SyncDir, file contents to their last Sync (plus, with Rand, a torn piece
// of the unsynced tail), every open handle becomes unusable, and every lock
// is released.
func (m *Mem) Crash(opts CrashOptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch++
	m.locks = map[string]*memLock{}
	seen := map[*memNode]bool{}
	m.used = 0
	for _, d := range m.dirs {
		d.entries = make(map[string]*memNode, len(d.durable))
		for name, n := range d.durable {
			d.entries[name] = n
			if seen[n] {
				continue
			}
			seen[n] = true
			kept := append([]byte(nil), n.synced()...)
			if opts.Rand != nil && n.syncedCopy == nil && len(n.data) > n.syncedLen {
				tail := n.data[n.syncedLen:]
				keep := opts.Rand.Intn(len(tail) + 1)
				piece := append([]byte(nil), tail[:keep]...)
				if keep > 0 && opts.Rand.Intn(4) == 0 {
					// A torn sector can hold garbage, not just a short prefix.
					piece[opts.Rand.Intn(keep)] ^= byte(1 + opts.Rand.Intn(255))
				}
				kept = append(kept, piece...)
			}
			n.data = kept[:len(kept):len(kept)]
			n.syncedLen, n.syncedCopy = len(kept), nil
			m.used += int64(len(kept))
		}
	}
}

func split(name string) (dir, base string) {
	d := Dir(name)
	if d == "" {
		return "", name
	}
	return d, name[len(d)+1:]
}

func (m *Mem) fault(op Op, name string) error {
	if m.hook == nil {
		return nil
	}
	if err := m.hook(op, name); err != nil {
		return &fs.PathError{Op: op.String(), Path: name, Err: err}
	}
	return nil
}

func (m *Mem) lookup(name string) (*memNode, error) {
	dir, base := split(name)
	d, ok := m.dirs[dir]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	n, ok := d.entries[base]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

// Create implements FS.
func (m *Mem) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fault(OpCreate, name); err != nil {
		return nil, err
	}
	dir, base := split(name)
	d, ok := m.dirs[dir]
	if !ok {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrNotExist}
	}
	if old, ok := d.entries[base]; ok {
		m.used -= int64(len(old.data))
	}
	n := &memNode{}
	d.entries[base] = n
	return &memFile{m: m, n: n, name: name, epoch: m.epoch, writable: true}, nil
}

// Open implements FS.
func (m *Mem) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fault(OpOpen, name); err != nil {
		return nil, err
	}
	n, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	return &memFile{m: m, n: n, name: name, epoch: m.epoch}, nil
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fault(OpRemove, name); err != nil {
		return err
	}
	if _, ok := m.dirs[name]; ok {
		for other := range m.dirs {
			if strings.HasPrefix(other, name+"/") {
				return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
			}
		}
		if len(m.dirs[name].entries) > 0 {
			return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
		}
		delete(m.dirs, name)
		return nil
	}
	n, err := m.lookup(name)
	if err != nil {
		return err
	}
	dir, base := split(name)
	delete(m.dirs[dir].entries, base)
	m.used -= int64(len(n.data))
	return nil
}

// Rename implements FS.
func (m *Mem) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fault(OpRename, oldname); err != nil {
		return err
	}
	n, err := m.lookup(oldname)
	if err != nil {
		return err
	}
	nd, nb := split(newname)
	d, ok := m.dirs[nd]
	if !ok {
		return &fs.PathError{Op: "rename", Path: newname, Err: fs.ErrNotExist}
	}
	if old, ok := d.entries[nb]; ok && old != n {
		m.used -= int64(len(old.data))
	}
	od, ob := split(oldname)
	delete(m.dirs[od].entries, ob)
	d.entries[nb] = n
	return nil
}

// MkdirAll implements FS. Directories are durable as soon as they exist.
func (m *Mem) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fault(OpMkdir, dir); err != nil {
		return err
	}
	for d := dir; d != ""; d = Dir(d) {
		if _, ok := m.dirs[d]; !ok {
			m.dirs[d] = newMemDir()
		}
	}
	return nil
}

// List implements FS.
func (m *Mem) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fault(OpList, dir); err != nil {
		return nil, err
	}
	d, ok := m.dirs[dir]
	if !ok {
		return nil, &fs.PathError{Op: "list", Path: dir, Err: fs.ErrNotExist}
	}
	var out []string
	for name := range d.entries {
		out = append(out, name)
	}
	for other := range m.dirs {
		if other != dir && Dir(other) == dir {
			_, base := split(other)
			out = append(out, base)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Stat implements FS.
func (m *Mem) Stat(name string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name)
	if err != nil {
		return 0, err
	}
	return int64(len(n.data)), nil
}

// SyncDir implements FS.
func (m *Mem) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fault(OpSyncDir, dir); err != nil {
		return err
	}
	d, ok := m.dirs[dir]
	if !ok {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	d.durable = make(map[string]*memNode, len(d.entries))
	for k, v := range d.entries {
		d.durable[k] = v
	}
	return nil
}

type memLock struct {
	m    *Mem
	name string
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		if l.m.locks[l.name] == l {
			delete(l.m.locks, l.name)
		}
		l.m.mu.Unlock()
	})
	return nil
}

// Lock implements FS. Locks are not files here; a Crash releases them.
func (m *Mem) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[name] != nil {
		return nil, fmt.Errorf("%s: %w", name, ErrLocked)
	}
	l := &memLock{m: m, name: name}
	m.locks[name] = l
	return l, nil
}

type memFile struct {
	m        *Mem
	n        *memNode
	name     string
	epoch    uint64
	writable bool
	closed   bool
}

func (f *memFile) check(op Op) error {
	if f.closed {
		return &fs.PathError{Op: op.String(), Path: f.name, Err: fs.ErrClosed}
	}
	if f.epoch != f.m.epoch {
		return &fs.PathError{Op: op.String(), Path: f.name, Err: ErrCrashed}
	}
	return f.m.fault(op, f.name)
}

func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(OpWrite); err != nil {
		return 0, err
	}
	if !f.writable {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	n := len(p)
	var err error
	if f.m.capacity > 0 && f.m.used+int64(n) > f.m.capacity {
		n = int(max(0, f.m.capacity-f.m.used))
		err = &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	f.n.data = append(f.n.data, p[:n]...)
	f.m.used += int64(n)
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(OpRead); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EINVAL}
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(OpSync); err != nil {
		return err
	}
	f.n.syncedLen, f.n.syncedCopy = len(f.n.data), nil
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.epoch != f.m.epoch {
		return 0, &fs.PathError{Op: "stat", Path: f.name, Err: ErrCrashed}
	}
	return int64(len(f.n.data)), nil
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(OpTruncate); err != nil {
		return err
	}
	if size < 0 || size > int64(len(f.n.data)) {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	}
	if f.n.syncedCopy == nil && int(size) < f.n.syncedLen {
		f.n.syncedCopy = append([]byte(nil), f.n.data[:f.n.syncedLen]...)
	}
	f.m.used -= int64(len(f.n.data)) - size
	// The capacity cut makes later appends reallocate, so data never
	// overwrites bytes that syncedCopy or a reader still holds.
	f.n.data = f.n.data[:size:size]
	return nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}
