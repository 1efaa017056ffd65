package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dirLock is an exclusive flock(2) on <dir>/LOCK, which holds the owner's
// pid. The kernel drops the lock when the process dies, so a crash leaves
// no stale lock behind; the pid only makes the error say who holds it.
type dirLock struct{ f *os.File }

// lockDir takes the lock of dir, creating dir if needed. owner names the
// kind of process for the error, e.g. "cellar demo".
func lockDir(dir, owner string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := os.ReadFile(path)
			pid := strings.TrimSpace(string(b))
			if pid == "" {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%s is in use by another %s (pid %s)", dir, owner, pid)
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

// Close releases the lock. The file stays, so that the next owner's
// open never races with a removal.
func (l *dirLock) Close() error {
	return errors.Join(syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN), l.f.Close())
}
