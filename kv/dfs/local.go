package dfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Local is an FS over a directory of the host's file system.
type Local struct {
	root string
}

// NewLocal returns an FS rooted at root. It does no I/O; the directory is
// created by the first MkdirAll.
func NewLocal(root string) *Local { return &Local{root: root} }

// Root returns the directory the FS is rooted at.
func (l *Local) Root() string { return l.root }

func (l *Local) path(name string) (string, error) {
	clean := path.Clean("/" + name)
	if clean != "/"+strings.TrimSuffix(name, "/") && name != "" {
		return "", fmt.Errorf("dfs: name %q is not clean", name)
	}
	return filepath.Join(l.root, filepath.FromSlash(clean)), nil
}

type localFile struct {
	*os.File
}

func (f localFile) Size() (int64, error) {
	st, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Truncate cuts the file and moves the write offset to its new end, so the
// next Write appends, as on every FS implementation.
func (f localFile) Truncate(size int64) error {
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	_, err := f.File.Seek(size, io.SeekStart)
	return err
}

// Sync uses fdatasync: the files are appended to and never need their
// timestamps durable, but their length is data, so fdatasync covers it.
func (f localFile) Sync() error {
	for {
		err := syscall.Fdatasync(int(f.File.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.File.Name(), Err: err}
			}
			return nil
		}
	}
}

// Create implements FS.
func (l *Local) Create(name string) (File, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return localFile{f}, nil
}

// Open implements FS.
func (l *Local) Open(name string) (File, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	return localFile{f}, nil
}

// Remove implements FS.
func (l *Local) Remove(name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	return os.Remove(p)
}

// Rename implements FS.
func (l *Local) Rename(oldname, newname string) error {
	o, err := l.path(oldname)
	if err != nil {
		return err
	}
	n, err := l.path(newname)
	if err != nil {
		return err
	}
	return os.Rename(o, n)
}

// MkdirAll implements FS.
func (l *Local) MkdirAll(dir string) error {
	p, err := l.path(dir)
	if err != nil {
		return err
	}
	return os.MkdirAll(p, 0o755)
}

// List implements FS.
func (l *Local) List(dir string) ([]string, error) {
	p, err := l.path(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out, nil
}

// Stat implements FS.
func (l *Local) Stat(name string) (int64, error) {
	p, err := l.path(name)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// SyncDir implements FS.
func (l *Local) SyncDir(dir string) error {
	p, err := l.path(dir)
	if err != nil {
		return err
	}
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type flock struct{ f *os.File }

func (l flock) Close() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return errors.Join(err, l.f.Close())
}

// ErrLocked is returned by Lock when another process or handle holds the
// lock.
var ErrLocked = errors.New("locked by another process")

// Lock implements FS with flock(2), so a lock dies with its process.
func (l *Local) Lock(name string) (io.Closer, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", p, ErrLocked)
		}
		return nil, &os.PathError{Op: "flock", Path: p, Err: err}
	}
	return flock{f}, nil
}
