package dfs

import (
	"errors"
	"io"
	"io/fs"
	"sync"
)

// ErrKilled is what a ProcessFS returns once its process was killed.
var ErrKilled = errors.New("process killed")

// ProcessFS is one simulated process's view of a file system. Kill makes
// every later operation through it, and through files opened by it, fail,
// as if the process had died; an operation already running finishes first.
// Crash tests kill the old process's view before Mem.Crash, so a store that
// is still shutting down cannot write into the file system's next life.
type ProcessFS struct {
	fs   FS
	mu   sync.RWMutex
	dead bool
}

// NewProcessFS wraps fs.
func NewProcessFS(fs FS) *ProcessFS { return &ProcessFS{fs: fs} }

// Kill ends the process's access.
func (p *ProcessFS) Kill() {
	p.mu.Lock()
	p.dead = true
	p.mu.Unlock()
}

func (p *ProcessFS) enter(op, name string) error {
	p.mu.RLock()
	if p.dead {
		p.mu.RUnlock()
		return &fs.PathError{Op: op, Path: name, Err: ErrKilled}
	}
	return nil
}

func (p *ProcessFS) leave() { p.mu.RUnlock() }

// Create implements FS.
func (p *ProcessFS) Create(name string) (File, error) {
	if err := p.enter("create", name); err != nil {
		return nil, err
	}
	defer p.leave()
	f, err := p.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return &processFile{p: p, f: f, name: name}, nil
}

// Open implements FS.
func (p *ProcessFS) Open(name string) (File, error) {
	if err := p.enter("open", name); err != nil {
		return nil, err
	}
	defer p.leave()
	f, err := p.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &processFile{p: p, f: f, name: name}, nil
}

// Remove implements FS.
func (p *ProcessFS) Remove(name string) error {
	if err := p.enter("remove", name); err != nil {
		return err
	}
	defer p.leave()
	return p.fs.Remove(name)
}

// Rename implements FS.
func (p *ProcessFS) Rename(oldname, newname string) error {
	if err := p.enter("rename", oldname); err != nil {
		return err
	}
	defer p.leave()
	return p.fs.Rename(oldname, newname)
}

// MkdirAll implements FS.
func (p *ProcessFS) MkdirAll(dir string) error {
	if err := p.enter("mkdir", dir); err != nil {
		return err
	}
	defer p.leave()
	return p.fs.MkdirAll(dir)
}

// List implements FS.
func (p *ProcessFS) List(dir string) ([]string, error) {
	if err := p.enter("list", dir); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.fs.List(dir)
}

// Stat implements FS.
func (p *ProcessFS) Stat(name string) (int64, error) {
	if err := p.enter("stat", name); err != nil {
		return 0, err
	}
	defer p.leave()
	return p.fs.Stat(name)
}

// SyncDir implements FS.
func (p *ProcessFS) SyncDir(dir string) error {
	if err := p.enter("syncdir", dir); err != nil {
		return err
	}
	defer p.leave()
	return p.fs.SyncDir(dir)
}

// Lock implements FS.
func (p *ProcessFS) Lock(name string) (io.Closer, error) {
	if err := p.enter("lock", name); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.fs.Lock(name)
}

type processFile struct {
	p    *ProcessFS
	f    File
	name string
}

func (f *processFile) Write(b []byte) (int, error) {
	if err := f.p.enter("write", f.name); err != nil {
		return 0, err
	}
	defer f.p.leave()
	return f.f.Write(b)
}

func (f *processFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.p.enter("read", f.name); err != nil {
		return 0, err
	}
	defer f.p.leave()
	return f.f.ReadAt(b, off)
}

func (f *processFile) Sync() error {
	if err := f.p.enter("sync", f.name); err != nil {
		return err
	}
	defer f.p.leave()
	return f.f.Sync()
}

func (f *processFile) Size() (int64, error) {
	if err := f.p.enter("stat", f.name); err != nil {
		return 0, err
	}
	defer f.p.leave()
	return f.f.Size()
}

func (f *processFile) Truncate(size int64) error {
	if err := f.p.enter("truncate", f.name); err != nil {
		return err
	}
	defer f.p.leave()
	return f.f.Truncate(size)
}

// Close always closes the underlying file, killed or not.
func (f *processFile) Close() error { return f.f.Close() }
