// Package dfs is the file-system interface that stands in for GFS.
//
// Every file cellar stores (commit log segments, SSTables, tablet state)
// goes through FS. Two implementations exist, and a wrapper:
//
//   - Local, a directory on a POSIX file system. On a real cluster every
//     tablet server mounts the same root, which may be any POSIX distributed
//     file system.
//   - Mem, an in-memory file system that keeps what was synced apart from
//     what was only written. Crash throws away everything that was not
//     synced (files and directory entries alike) and may tear the last
//     unsynced write; fault hooks fail writes, syncs or any other operation
//     on demand, and a capacity turns writes into ENOSPC. Tests use it to
//     prove that acknowledged writes survive and nothing else appears.
//   - Faulty wraps either one and brings the same faults to a real
//     process: failed fsyncs, and a power loss that cuts every file back to
//     what was synced (with an optional torn tail) in the underlying
//     directory, after which the process ends. It is for testing only.
//
// Names are slash-separated and relative to the root. Files are written
// once, front to back, and then only read: SSTables are immutable and log
// segments are append-only, so the interface has no random writes.
package dfs

import (
	"io"
)

// File is an open file. A file from Create is written sequentially; one from
// Open is read with ReadAt. Both may be used concurrently for ReadAt.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	// Sync makes everything written so far durable.
	Sync() error
	// Size returns the file's current length.
	Size() (int64, error)
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
}

// FS is a file system rooted at some directory.
type FS interface {
	// Create makes a new file, or truncates an existing one, for writing.
	Create(name string) (File, error)
	// Open opens a file for reading.
	Open(name string) (File, error)
	// Remove deletes a file. Removing a missing file returns an error that
	// satisfies errors.Is(err, fs.ErrNotExist).
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string) error
	// List returns the sorted names of the entries of dir.
	List(dir string) ([]string, error)
	// Stat returns a file's size.
	Stat(name string) (int64, error)
	// SyncDir makes the creations, renames and removals in dir durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on name, creating it if needed, or fails
	// at once if someone else holds it. Closing the result releases it.
	Lock(name string) (io.Closer, error)
}

// WriteFile creates name with data, syncs it, and syncs its directory.
func WriteFile(fs FS, name string, data []byte) (err error) {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	return fs.SyncDir(Dir(name))
}

// ReadFile reads a whole file.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// Dir returns the directory part of a slash-separated name ("" for the
// root).
func Dir(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return ""
}

// Join joins name elements with slashes.
func Join(elem ...string) string {
	out := ""
	for _, e := range elem {
		if e == "" {
			continue
		}
		if out != "" {
			out += "/"
		}
		out += e
	}
	return out
}
