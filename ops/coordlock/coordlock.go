// Package coordlock gives cellar's processes their lock files in the
// Chubby cell: it implements the lock-service interfaces that kv packages
// declare (tabletserver.Coordinator) with coord/client.
//
// A lock is watched locally: it counts as lost as soon as the handle no
// longer holds it or the session is not safe (jeopardy), without a round
// trip. Taking it back reuses the session if it survived, and opens a new
// session if it expired.
package coordlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/client"
	"github.com/cellardb/cellar/kv/tabletserver"
)

// Service hands out locks on files, one session per lock.
type Service struct {
	// Client are the options of each lock's session (OnEvent is ignored).
	Client client.Options
	// Poll is how often a lock checks, locally, whether it still holds.
	Poll time.Duration
}

// Lock creates the file at path (and its parent directories) unless it
// exists, and waits under ctx for its exclusive lock.
func (s *Service) Lock(ctx context.Context, path string, contents []byte) (tabletserver.Lock, error) {
	l := &lock{svc: s, path: path, contents: contents, lost: make(chan struct{}), stop: make(chan struct{})}
	if err := l.take(ctx, true); err != nil {
		return nil, err
	}
	l.wg.Add(1)
	go l.watch()
	return l, nil
}

type lock struct {
	svc      *Service
	path     string
	contents []byte

	mu   sync.Mutex
	c    *client.Client
	h    *client.Handle
	lost chan struct{} // closed when the current hold ends

	stop chan struct{}
	wg   sync.WaitGroup
}

func (l *lock) Held() bool {
	l.mu.Lock()
	h := l.h
	l.mu.Unlock()
	return h != nil && h.LockHeld()
}

func (l *lock) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// watch closes the lost channel when the hold ends, and makes a new one
// once the lock is held again.
func (l *lock) watch() {
	defer l.wg.Done()
	poll := l.svc.Poll
	if poll == 0 {
		poll = 20 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	held := true
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		now := l.Held()
		l.mu.Lock()
		switch {
		case held && !now:
			close(l.lost)
		case !held && now:
			l.lost = make(chan struct{})
		}
		l.mu.Unlock()
		held = now
	}
}

// Relock takes the lock back: at once if the session survived and still
// holds it, else with the session (or a new one) waiting for the lock.
func (l *lock) Relock(ctx context.Context) error {
	if l.Held() {
		return nil
	}
	l.mu.Lock()
	c, h := l.c, l.h
	l.mu.Unlock()
	if h != nil {
		err := h.Acquire(ctx, coord.Exclusive)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, coord.ErrInvalidHandle):
			// The node was deleted, or the session ended; look again.
		case !errors.Is(err, coord.ErrSessionExpired):
			return err
		}
	}
	if c != nil {
		c.Close(ctx)
	}
	return l.take(ctx, false)
}

// take opens a session if need be, opens the file (creating it and its
// parents if create) and waits for its lock.
func (l *lock) take(ctx context.Context, create bool) error {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c == nil || !c.Safe() {
		opts := l.svc.Client
		opts.OnEvent = nil
		c = client.New(opts)
		if err := c.Open(ctx); err != nil {
			return fmt.Errorf("open a session: %w", err)
		}
	}
	fail := func(err error) error {
		c.Close(context.Background())
		l.mu.Lock()
		l.c, l.h = nil, nil
		l.mu.Unlock()
		return err
	}
	if create {
		if err := mkdirs(ctx, c, l.path); err != nil {
			return fail(err)
		}
	}
	h, _, err := c.OpenNode(ctx, l.path, client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: create,
		Contents: l.contents, Events: coord.Mask(coord.EventHandleInvalid)})
	if errors.Is(err, coord.ErrNotFound) {
		return fail(fmt.Errorf("%s: %w", l.path, tabletserver.ErrFileGone))
	}
	if err != nil {
		return fail(err)
	}
	if err := h.Acquire(ctx, coord.Exclusive); err != nil {
		return fail(fmt.Errorf("lock %s: %w", l.path, err))
	}
	l.mu.Lock()
	l.c, l.h = c, h
	l.mu.Unlock()
	return nil
}

// mkdirs creates the parent directories of path.
func mkdirs(ctx context.Context, c *client.Client, path string) error {
	if !strings.HasPrefix(path, coord.Prefix) {
		return fmt.Errorf("%s is not a lock service name", path)
	}
	parts := strings.Split(path, "/")
	// parts: "", "ls", cell, dirs..., file
	for n := 4; n < len(parts); n++ {
		dir := strings.Join(parts[:n], "/")
		h, _, err := c.OpenNode(ctx, dir, client.OpenOptions{Mode: coord.ModeRead, Create: true, Directory: true})
		if err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		h.Close(ctx)
	}
	return nil
}

// Release gives the lock up and ends the session.
func (l *lock) Release(ctx context.Context) error {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	c, h := l.c, l.h
	l.c, l.h = nil, nil
	l.mu.Unlock()
	if c == nil {
		return nil
	}
	var err error
	if h != nil && h.LockHeld() {
		err = h.Release(ctx)
	}
	return errors.Join(err, c.Close(ctx))
}
