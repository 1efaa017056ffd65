package tablet

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// crashWrite is one write a crash-test writer attempted.
type crashWrite struct {
	row   string
	qual  string
	ts    int64
	value string
	del   bool // a deletion of the cell (qual, ts) instead of a write
	acked bool
}

// crashHistory records what writers attempted and what was acknowledged.
// Each writer owns a qualifier and numbers its timestamps, so every cell
// is written at most once and deleted at most once.
type crashHistory struct {
	mu     sync.Mutex
	writes map[[3]string]*crashWrite // (row, qual, ts) -> the write
	dels   map[[3]string]*crashWrite
}

func cellID(row, qual string, ts int64) [3]string {
	return [3]string{row, qual, strconv.FormatInt(ts, 10)}
}

// writer writes, and sometimes deletes its own acknowledged cells, until
// its context ends or the store fails.
func (h *crashHistory) writer(ctx context.Context, s *Store, id, round int, r *rand.Rand) {
	qual := fmt.Sprintf("w%d", id)
	var mine []*crashWrite
	for n := 0; ctx.Err() == nil; n++ {
		var w *crashWrite
		var m model.Mutation
		if len(mine) > 0 && r.Intn(5) == 0 {
			old := mine[r.Intn(len(mine))]
			w = &crashWrite{row: old.row, qual: qual, ts: old.ts, del: true}
			m = model.DeleteColumn("a", []byte(qual), model.TimeRange{Start: old.ts, End: old.ts + 1000})
		} else {
			ts := int64(round*1_000_000+n+1) * 1000
			w = &crashWrite{row: fmt.Sprintf("row%03d", r.Intn(200)), qual: qual, ts: ts, value: fmt.Sprintf("%d/%d/%d", id, round, n)}
			m = model.SetCell("a", []byte(qual), ts, []byte(w.value))
		}
		h.mu.Lock()
		key := cellID(w.row, w.qual, w.ts)
		if w.del {
			if h.dels[key] != nil {
				h.mu.Unlock()
				continue
			}
			h.dels[key] = w
		} else {
			h.writes[key] = w
		}
		h.mu.Unlock()
		err := s.Apply(ctx, "t", &model.RowMutation{Row: []byte(w.row), Mutations: []model.Mutation{m}})
		if err != nil {
			return
		}
		h.mu.Lock()
		w.acked = true
		h.mu.Unlock()
		if !w.del {
			mine = append(mine, w)
		}
	}
}

// verify checks the store against the history: every acknowledged write
// that no acknowledged deletion removed is there, and every cell there was
// written and not deleted by an acknowledged deletion.
func (h *crashHistory) verify(t *testing.T, s *Store) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[[3]string]bool{}
	sc := s.Scan(context.Background(), "t", model.RowRange{}, ReadOptions{})
	defer sc.Close()
	for sc.Next() {
		row := sc.Row()
		for _, c := range row.Cells {
			key := cellID(string(row.Key), string(c.Qualifier), c.Timestamp)
			seen[key] = true
			w := h.writes[key]
			if w == nil {
				t.Fatalf("cell %v = %q was never written", key, c.Value)
			}
			if string(c.Value) != w.value {
				t.Fatalf("cell %v = %q, written as %q", key, c.Value, w.value)
			}
			if d := h.dels[key]; d != nil && d.acked {
				t.Fatalf("cell %v came back after an acknowledged deletion", key)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for key, w := range h.writes {
		if w.acked && !seen[key] && (h.dels[key] == nil) {
			t.Fatalf("acknowledged write %v = %q is missing", key, w.value)
		}
	}
	// A deletion whose outcome was unknown may or may not have happened;
	// from now on count it as done so the next round checks consistently.
	for key, d := range h.dels {
		if !d.acked && !seen[key] {
			d.acked = true
		}
		if !d.acked && seen[key] {
			delete(h.dels, key)
		}
	}
	for key, w := range h.writes {
		if !w.acked && seen[key] {
			w.acked = true // it reached the log before the crash
		}
		if !w.acked {
			delete(h.writes, key)
		}
	}
}

// TestCrashKeepsAcknowledgedWrites crashes the file system at random moments
// under concurrent writers, flushes, compactions and splits, tearing
// unsynced writes, and checks after every restart that each acknowledged
// write survived and nothing that was never written appeared.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 8
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CELLAR_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	mem := dfs.NewMem()
	opts := Options{MemtableSize: 16 << 10, BlockSize: 1 << 10, CompactionTrigger: 2, StallRuns: 64,
		LogSegmentSize: 16 << 10, MaxLogSize: 256 << 10, SplitSize: 64 << 10}
	h := &crashHistory{writes: map[[3]string]*crashWrite{}, dels: map[[3]string]*crashWrite{}}
	for round := 0; round < rounds; round++ {
		proc := dfs.NewProcessFS(mem)
		if round%2 == 1 {
			// Some rounds also lose fsyncs now and then: the writes in that
			// group commit fail, flushes and compactions retry, and nothing
			// acknowledged may be lost.
			fr := rand.New(rand.NewSource(r.Int63()))
			mem.SetFaultHook(func(op dfs.Op, name string) error {
				if op == dfs.OpSync && fr.Intn(50) == 0 {
					return syscall.EIO
				}
				return nil
			})
		}
		s := New(proc, "db", opts)
		var err error
		for try := 0; try < 20; try++ {
			// Open itself may meet an injected fsync failure; a restart
			// tries again.
			if err = s.Open(context.Background()); err == nil {
				break
			}
			s = New(proc, "db", opts)
		}
		if err != nil {
			t.Fatalf("round %d: open after crash: %v", round, err)
		}
		if round == 0 {
			if err := s.CreateTable(context.Background(), "t", model.Schema{Families: []model.Family{{Name: "a"}}}, nil); err != nil {
				t.Fatal(err)
			}
		} else {
			h.verify(t, s)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := 0; w < 6; w++ {
			wg.Add(1)
			go func(w int, seed int64) {
				defer wg.Done()
				h.writer(ctx, s, w, round, rand.New(rand.NewSource(seed)))
			}(w, r.Int63())
		}
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			mr := rand.New(rand.NewSource(seed))
			for ctx.Err() == nil {
				ts := s.Tablets()
				if len(ts) == 0 {
					return
				}
				tb := ts[mr.Intn(len(ts))]
				switch mr.Intn(3) {
				case 0:
					tb.Flush(ctx)
				case 1:
					tb.Compact(ctx, mr.Intn(2) == 0)
				case 2:
					if key := []byte(fmt.Sprintf("row%03d", mr.Intn(200))); tb.Range().Contains(key) && len(ts) < 6 {
						s.Split(ctx, tb.ID(), key)
					}
				}
				time.Sleep(time.Millisecond)
			}
		}(r.Int63())
		time.Sleep(time.Duration(5+r.Intn(40)) * time.Millisecond)
		// The machine dies: the process first, then the disk's unsynced
		// state.
		proc.Kill()
		mem.SetFaultHook(nil)
		mem.Crash(dfs.CrashOptions{Rand: r})
		cancel()
		wg.Wait()
		s.Close(context.Background())
	}
	s := New(dfs.NewProcessFS(mem), "db", opts)
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.verify(t, s)
	s.Close(context.Background())
}

// TestFullDiskFailsWritesCleanly fills the disk under a writer: writes fail
// with ErrResourceExhausted, never silently, and once space returns the
// store takes writes again and every acknowledged write is intact after a
// restart.
func TestFullDiskFailsWritesCleanly(t *testing.T) {
	mem := dfs.NewMem()
	opts := Options{MemtableSize: 8 << 10, BlockSize: 1 << 10, LogSegmentSize: 8 << 10, MaxLogSize: 64 << 10}
	s := New(mem, "db", opts)
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTable(ctx, "t", model.Schema{Families: []model.Family{{Name: "a"}}}, nil); err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{}
	put := func(i int) error {
		row := fmt.Sprintf("row%05d", i)
		val := fmt.Sprintf("value-%d-%0100d", i, i)
		err := s.Apply(ctx, "t", &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{model.SetCell("a", nil, 1000, []byte(val))}})
		if err == nil {
			acked[row] = val
		}
		return err
	}
	for i := 0; i < 200; i++ {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}
	mem.SetCapacity(mem.Used() + 20<<10)
	var failure error
	for i := 200; i < 2000 && failure == nil; i++ {
		failure = put(i)
	}
	if !errors.Is(failure, model.ErrResourceExhausted) || !errors.Is(failure, syscall.ENOSPC) {
		t.Fatalf("write on a full disk failed with %v, want ErrResourceExhausted wrapping ENOSPC", failure)
	}
	mem.SetCapacity(0)
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for i := 3000; ; i++ {
		if err = put(i); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("writes did not resume after space came back: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s = New(mem, "db", opts)
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	for row, val := range acked {
		got, found, err := s.ReadRow(ctx, "t", []byte(row), ReadOptions{})
		if err != nil || !found || string(got.Cells[0].Value) != val {
			t.Fatalf("acknowledged %s = %q, read %v %v %v", row, val, got, found, err)
		}
	}
}
