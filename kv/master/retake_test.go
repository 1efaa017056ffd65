package master

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/client"
)

// jeopardyCoord hands out a lock whose session can fall into jeopardy and
// come back: Lost closes, and Resume gives the lock back in the
// generation set by the test.
type jeopardyCoord struct {
	*fakeCoord
	mu     sync.Mutex
	lost   chan struct{}
	gen    uint64 // the generation Relock takes the lock back in
	relock chan struct{}
}

type jeopardyLock struct{ c *jeopardyCoord }

func (c *jeopardyCoord) Lock(ctx context.Context, path string, contents []byte) (Lock, error) {
	if _, err := c.fakeCoord.Lock(ctx, path, contents); err != nil {
		return nil, err
	}
	return &jeopardyLock{c: c}, nil
}

func (l *jeopardyLock) Held() bool {
	select {
	case <-l.Lost():
		return false
	default:
		return true
	}
}

func (l *jeopardyLock) Lost() <-chan struct{} {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.c.lost
}

func (l *jeopardyLock) Release(context.Context) error { return nil }

func (l *jeopardyLock) Sequencer() (client.Sequencer, error) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return client.Sequencer{Path: "/ls/local/cellar/master", Instance: 1, Generation: l.c.gen}, nil
}

func (l *jeopardyLock) Resume(ctx context.Context) error {
	select {
	case <-l.c.relock:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.c.lost = make(chan struct{})
	return nil
}

func (c *jeopardyCoord) jeopardy() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.lost)
}

func TestMasterResumesAfterJeopardyInTheSameGeneration(t *testing.T) {
	c := &jeopardyCoord{fakeCoord: &fakeCoord{files: map[string]*fakeFile{}, lost: make(chan struct{})},
		lost: make(chan struct{}), gen: 7, relock: make(chan struct{}, 1)}
	fatal := make(chan error, 1)
	m := New(Options{Addr: "m:1", Coord: c, ScanInterval: 10 * time.Millisecond, RelockWait: 10 * time.Second,
		OnFatal: func(err error) { fatal <- err }})
	ctx := context.Background()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)

	// Jeopardy, then the session comes back holding the lock: the master
	// resumes, twice over.
	for i := 0; i < 2; i++ {
		c.jeopardy()
		time.Sleep(30 * time.Millisecond)
		if m.Active() {
			t.Fatal("a master whose lock is not held safely says it is active")
		}
		c.relock <- struct{}{}
		deadline := time.Now().Add(10 * time.Second)
		for resumed(m) < i+1 || !m.Active() {
			if time.Now().After(deadline) {
				t.Fatalf("the master did not resume: %v", m.Events())
			}
			time.Sleep(5 * time.Millisecond)
		}
		select {
		case err := <-fatal:
			t.Fatalf("the master stopped after a jeopardy it survived: %v", err)
		default:
		}
	}

	// The lock comes back in a new generation: another master may have
	// held it, so this one stops.
	c.mu.Lock()
	c.gen = 8
	c.mu.Unlock()
	c.jeopardy()
	c.relock <- struct{}{}
	select {
	case <-fatal:
	case <-time.After(10 * time.Second):
		t.Fatal("the master kept going with its lock in a new generation")
	}
}

func TestMasterStopsWhenTheLockIsNotBackInTime(t *testing.T) {
	c := &jeopardyCoord{fakeCoord: &fakeCoord{files: map[string]*fakeFile{}, lost: make(chan struct{})},
		lost: make(chan struct{}), gen: 7, relock: make(chan struct{}, 1)}
	fatal := make(chan error, 1)
	m := New(Options{Addr: "m:1", Coord: c, ScanInterval: 10 * time.Millisecond, RelockWait: 50 * time.Millisecond,
		OnFatal: func(err error) { fatal <- err }})
	ctx := context.Background()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	c.jeopardy()
	select {
	case <-fatal:
	case <-time.After(10 * time.Second):
		t.Fatal("the master waited past RelockWait")
	}
}

// resumed counts the master's "resuming" events.
func resumed(m *Master) int {
	n := 0
	for _, e := range m.Events() {
		if e.Kind == EventMaster && strings.Contains(e.Text, "resuming") {
			n++
		}
	}
	return n
}
