package query

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestParallelRuns checks the row writer: every write runs once, no more
// than writeParallel at a time, the count is of writes that did, the first
// error is kept, and wait may be called twice.
func TestParallelRuns(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		p := newParallel(context.Background(), allowed)
		var ran, running, peak atomic.Int64
		release := make(chan struct{})
		const n = 1000
		if allowed {
			go func() {
				for ran.Load() < writeParallel {
					runtime.Gosched()
				}
				close(release)
			}()
		} else {
			close(release)
		}
		for i := range n {
			if err := p.do(func() (bool, error) {
				cur := running.Add(1)
				for {
					old := peak.Load()
					if cur <= old || peak.CompareAndSwap(old, cur) {
						break
					}
				}
				ran.Add(1)
				<-release
				running.Add(-1)
				return i%2 == 0, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := p.wait()
		if err != nil || got != n/2 || ran.Load() != n {
			t.Fatalf("allowed=%v: wait = %d, %v after %d writes; want %d, nil after %d", allowed, got, err, ran.Load(), n/2, n)
		}
		if pk := peak.Load(); pk > writeParallel || (!allowed && pk != 1) {
			t.Fatalf("allowed=%v: %d writes at once", allowed, pk)
		}
		if again, err := p.wait(); again != got || err != nil {
			t.Fatalf("second wait = %d, %v", again, err)
		}
	}

	// The first error stops new writes.
	p := newParallel(context.Background(), true)
	boom := errors.New("boom")
	if err := p.do(func() (bool, error) { return false, boom }); err != nil {
		t.Fatal(err)
	}
	if _, err := p.wait(); !errors.Is(err, boom) {
		t.Fatalf("wait: %v, want boom", err)
	}

	// A canceled statement stops waiting for a free worker.
	ctx, cancel := context.WithCancel(context.Background())
	p = newParallel(ctx, true)
	block := make(chan struct{})
	for range writeParallel {
		if err := p.do(func() (bool, error) { <-block; return true, nil }); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := p.do(func() (bool, error) { return true, nil }); err == nil {
		t.Fatal("do on a canceled statement with every worker busy: no error")
	}
	close(block)
	if got, _ := p.wait(); got != writeParallel {
		t.Fatalf("wait = %d, want %d", got, writeParallel)
	}
}
