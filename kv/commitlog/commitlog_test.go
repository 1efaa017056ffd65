package commitlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

func testRecord(i int) *Record {
	return &Record{
		Tablet: uint64(i % 3), Table: "t", Seq: uint64(i*4 + 1),
		Mutation: model.RowMutation{
			Row: []byte(fmt.Sprintf("row%06d", i)),
			Mutations: []model.Mutation{
				model.SetCell("f", []byte("q"), int64(i)*1000, bytes.Repeat([]byte{byte(i)}, i%50)),
				model.DeleteColumn("f", []byte("old"), model.TimeRange{Start: 1000, End: 5000}),
				model.DeleteFamily("g"),
				model.DeleteRow(),
			},
		},
	}
}

// canon makes nil and empty slices compare equal.
func canon(r *Record) *Record {
	c := *r
	c.Mutation.Mutations = append([]model.Mutation(nil), r.Mutation.Mutations...)
	for i := range c.Mutation.Mutations {
		m := &c.Mutation.Mutations[i]
		if len(m.Qualifier) == 0 {
			m.Qualifier = nil
		}
		if len(m.Value) == 0 {
			m.Value = nil
		}
	}
	return &c
}

func openLog(t *testing.T, fs dfs.FS, opts Options) (*Writer, []*Record, *State) {
	t.Helper()
	ctx := context.Background()
	var got []*Record
	st, err := Replay(ctx, fs, "log", 0, func(r *Record) error {
		c := canon(r)
		c.Mutation.Row = append([]byte(nil), r.Mutation.Row...)
		for i := range c.Mutation.Mutations {
			m := &c.Mutation.Mutations[i]
			m.Qualifier = bytes.Clone(m.Qualifier)
			m.Value = bytes.Clone(m.Value)
		}
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(fs, "log", opts)
	if err := w.Open(ctx, st, 0); err != nil {
		t.Fatal(err)
	}
	return w, got, st
}

func appendAll(t *testing.T, w *Writer, from, to int) map[uint64]*Record {
	t.Helper()
	acked := map[uint64]*Record{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := from + g; i < to; i += 8 {
				r := testRecord(i)
				c, err := w.Append(context.Background(), r)
				if err != nil {
					t.Error(err)
					return
				}
				if err := c.Wait(); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[r.LSN] = canon(r)
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	return acked
}

func checkReplay(t *testing.T, got []*Record, acked map[uint64]*Record) {
	t.Helper()
	seen := map[uint64]bool{}
	var last uint64
	for _, r := range got {
		if r.LSN <= last {
			t.Fatalf("replay out of LSN order: %d after %d", r.LSN, last)
		}
		last = r.LSN
		seen[r.LSN] = true
		if want, ok := acked[r.LSN]; ok && !reflect.DeepEqual(r, want) {
			t.Fatalf("LSN %d replayed as %+v, want %+v", r.LSN, r, want)
		}
	}
	for lsn := range acked {
		if !seen[lsn] {
			t.Fatalf("acknowledged LSN %d missing from replay", lsn)
		}
	}
}

func TestRoundTripWithRotation(t *testing.T) {
	fs := dfs.NewMem()
	var rotations atomic.Int32
	opts := Options{SegmentSize: 4 << 10, Events: Events{Rotated: func(uint64, string) { rotations.Add(1) }}}
	w, _, _ := openLog(t, fs, opts)
	acked := appendAll(t, w, 0, 500)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rotations.Load() < 5 {
		t.Fatalf("only %d rotations with 4 KiB segments", rotations.Load())
	}
	w2, got, st := openLog(t, fs, opts)
	defer w2.Close(context.Background())
	if len(got) != len(acked) {
		t.Fatalf("replayed %d records, acknowledged %d", len(got), len(acked))
	}
	checkReplay(t, got, acked)
	if st.Corruption != nil {
		t.Fatal(st.Corruption)
	}
}

func TestReplayFromSkipsOlderRecords(t *testing.T) {
	fs := dfs.NewMem()
	w, _, _ := openLog(t, fs, Options{SegmentSize: 2 << 10})
	appendAll(t, w, 0, 200)
	w.Close(context.Background())
	var first uint64
	if _, err := Replay(context.Background(), fs, "log", 150, func(r *Record) error {
		if first == 0 {
			first = r.LSN
		}
		if r.LSN < 150 {
			t.Fatalf("record %d below from", r.LSN)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if first != 150 {
		t.Fatalf("first replayed LSN %d, want 150", first)
	}
}

func TestReleaseDropsOldSegments(t *testing.T) {
	fs := dfs.NewMem()
	w, _, _ := openLog(t, fs, Options{SegmentSize: 2 << 10})
	defer w.Close(context.Background())
	appendAll(t, w, 0, 300)
	before := len(w.Segments())
	if err := w.Release(w.DurableLSN()); err != nil {
		t.Fatal(err)
	}
	after := w.Segments()
	if len(after) >= before || len(after) == 0 {
		t.Fatalf("segments %d -> %d", before, len(after))
	}
	names, _ := fs.List("log")
	if len(names) != len(after) {
		t.Fatalf("files %v, live segments %v", names, after)
	}
}

func TestGroupCommitSharesSyncs(t *testing.T) {
	fs := dfs.NewMem()
	var syncs atomic.Int64
	fs.SetFaultHook(func(op dfs.Op, name string) error {
		if op == dfs.OpSync {
			syncs.Add(1)
			time.Sleep(200 * time.Microsecond) // a disk, so that writers pile up
		}
		return nil
	})
	w, _, _ := openLog(t, fs, Options{})
	defer w.Close(context.Background())
	before := syncs.Load()
	appendAll(t, w, 0, 800)
	if n := syncs.Load() - before; n >= 800 {
		t.Fatalf("%d fsyncs for 800 records from 8 writers: no group commit", n)
	}
}

// TestSyncedReportsEveryGroup checks the Synced hook: its record counts
// add up to the records appended, over fewer groups than records when
// writers pile up behind a slow fsync, with a duration that covers it.
func TestSyncedReportsEveryGroup(t *testing.T) {
	fs := dfs.NewMem()
	fs.SetFaultHook(func(op dfs.Op, name string) error {
		if op == dfs.OpSync {
			time.Sleep(200 * time.Microsecond)
		}
		return nil
	})
	var mu sync.Mutex
	var groups, records int
	var shortest time.Duration = time.Hour
	w, _, _ := openLog(t, fs, Options{Events: Events{Synced: func(n int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		groups++
		records += n
		shortest = min(shortest, d)
	}}})
	appendAll(t, w, 0, 400)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if records != 400 || groups == 0 || groups >= 400 {
		t.Fatalf("Synced saw %d records in %d groups; want 400 records in fewer groups", records, groups)
	}
	if shortest < 200*time.Microsecond {
		t.Fatalf("a group's write and fsync took %v, less than the fsync's 200µs", shortest)
	}
}

func TestCrashKeepsAcknowledgedAndTearsTail(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	fs := dfs.NewMem()
	acked := map[uint64]*Record{}
	next := 0
	for round := 0; round < 20; round++ {
		w, got, st := openLog(t, fs, Options{SegmentSize: 8 << 10})
		if st.Corruption != nil {
			t.Fatalf("round %d: crash looked like corruption: %v", round, st.Corruption)
		}
		checkReplay(t, got, acked)
		for lsn, rec := range appendAll(t, w, next, next+100) {
			acked[lsn] = rec
		}
		next += 100
		// Unacknowledged records in flight when the machine dies.
		for i := 0; i < 5; i++ {
			w.Append(context.Background(), testRecord(next+i))
		}
		fs.Crash(dfs.CrashOptions{Rand: r})
		w.Close(context.Background())
	}
}

func TestCorruptionStopsReplayAndNamesFile(t *testing.T) {
	fs := dfs.NewMem()
	w, _, _ := openLog(t, fs, Options{SegmentSize: 4 << 10})
	appendAll(t, w, 0, 300)
	w.Close(context.Background())
	segs := w.Segments()
	victim := dfs.Join("log", SegmentName(segs[1].Number))
	data, _ := dfs.ReadFile(fs, victim)
	data[headerLen+100] ^= 0x55
	dfs.WriteFile(fs, victim, data)

	var n int
	st, err := Replay(context.Background(), fs, "log", 0, func(*Record) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	var ce *model.CorruptionError
	if !errors.As(st.Corruption, &ce) || ce.File != victim || ce.Offset <= headerLen {
		t.Fatalf("corruption = %v, want one in %s", st.Corruption, victim)
	}
	if st.End.Segment != segs[1].Number || len(st.Void) == 0 {
		t.Fatalf("replay did not stop at the corrupt segment: end %+v void %v", st.End, st.Void)
	}
	if n == 0 || n >= 300 {
		t.Fatalf("replayed %d records; want the prefix before the corruption", n)
	}
	// A writer continuing from this state starts a chain that never reads
	// past the corruption again.
	w2 := NewWriter(fs, "log", Options{SegmentSize: 4 << 10})
	if err := w2.Open(context.Background(), st, 0); err != nil {
		t.Fatal(err)
	}
	c, _ := w2.Append(context.Background(), testRecord(1000))
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	w2.Close(context.Background())
	var lsns []uint64
	st2, _ := Replay(context.Background(), fs, "log", 0, func(r *Record) error { lsns = append(lsns, r.LSN); return nil })
	if st2.Corruption != nil || len(lsns) != n+1 || lsns[n] != c.LSN {
		t.Fatalf("after restart: corruption %v, %d records (want %d)", st2.Corruption, len(lsns), n+1)
	}
}

func TestFailedSyncIsNotAcknowledgedAndVoided(t *testing.T) {
	fs := dfs.NewMem()
	w, _, _ := openLog(t, fs, Options{})
	acked := appendAll(t, w, 0, 50)
	var fail atomic.Bool
	fail.Store(true)
	fs.SetFaultHook(func(op dfs.Op, name string) error {
		if op == dfs.OpSync && fail.CompareAndSwap(true, false) {
			return syscall.EIO
		}
		return nil
	})
	c, err := w.Append(context.Background(), testRecord(50))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	if err == nil || !errors.Is(err, syscall.EIO) || !errors.Is(err, model.ErrUnavailable) {
		t.Fatalf("failed sync returned %v", err)
	}
	failed := c.LSN
	for lsn, r := range appendAll(t, w, 51, 100) {
		acked[lsn] = r
	}
	fs.Crash(dfs.CrashOptions{})
	w.Close(context.Background())
	w2, got, _ := openLog(t, fs, Options{})
	defer w2.Close(context.Background())
	checkReplay(t, got, acked)
	for _, r := range got {
		if r.LSN == failed {
			t.Fatalf("record %d, whose sync failed, came back after a crash", failed)
		}
	}
}

func TestFullDiskFailsWritesAndRecovers(t *testing.T) {
	fs := dfs.NewMem()
	w, _, _ := openLog(t, fs, Options{})
	defer w.Close(context.Background())
	acked := appendAll(t, w, 0, 20)
	fs.SetCapacity(fs.Used() + 10)
	c, _ := w.Append(context.Background(), testRecord(999))
	if err := c.Wait(); !errors.Is(err, model.ErrResourceExhausted) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v", err)
	}
	c, _ = w.Append(context.Background(), testRecord(998))
	if err := c.Wait(); err == nil {
		t.Fatal("second write on a full disk succeeded")
	}
	fs.SetCapacity(0)
	for lsn, r := range appendAll(t, w, 20, 40) {
		acked[lsn] = r
	}
	w.Close(context.Background())
	_, got, st := openLog(t, fs, Options{})
	if st.Corruption != nil {
		t.Fatal(st.Corruption)
	}
	checkReplay(t, got, acked)
	if len(got) != len(acked) {
		t.Fatalf("replayed %d records, acknowledged %d: a failed write came back", len(got), len(acked))
	}
}

func TestAppendHonoursContextWhenBufferFull(t *testing.T) {
	fs := dfs.NewMem()
	block := make(chan struct{})
	fs.SetFaultHook(func(op dfs.Op, name string) error {
		if op == dfs.OpSync {
			<-block
		}
		return nil
	})
	close(block) // let Open's header sync through
	w, _, _ := openLog(t, fs, Options{MaxPendingBytes: 1 << 10})
	block = make(chan struct{})
	defer func() { close(block); w.Close(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = w.Append(ctx, testRecord(100))
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append with a stuck disk: %v", err)
	}
}

func FuzzRecordDecode(f *testing.F) {
	for i := 0; i < 4; i++ {
		f.Add(appendRecord(nil, testRecord(i)))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// The payload decoder on its own: checksums keep random bytes from
		// ever reaching it through the framing.
		if len(b) > recordHeaderLen {
			decodePayload(b[recordHeaderLen:])
		}
		for len(b) > 0 {
			payload, n, err := nextRecord(b)
			if err != nil {
				return
			}
			if r, err := decodePayload(payload); err == nil {
				// Whatever decodes must encode back to the same bytes.
				again := appendRecord(nil, r)
				if p2, _, err := nextRecord(again); err != nil || !bytes.Equal(p2, payload) {
					t.Fatalf("re-encoding differs")
				}
			}
			b = b[n:]
		}
	})
}

// TestWriteFuzzCorpus regenerates the committed seed corpus of
// FuzzRecordDecode from real records when COMMITLOG_WRITE_FUZZ_CORPUS is
// set; otherwise it does nothing.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("COMMITLOG_WRITE_FUZZ_CORPUS") == "" {
		return
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRecordDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for i := 0; i < 4; i++ {
		seeds = append(seeds, appendRecord(nil, testRecord(i*17)))
	}
	two := appendRecord(appendRecord(nil, testRecord(3)), testRecord(4))
	seeds = append(seeds, two, two[:len(two)-3])
	torn := appendRecord(nil, testRecord(5))
	torn[10] ^= 0xFF
	seeds = append(seeds, torn)
	for i, s := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// On a local file system segments after the first are preallocated:
// zero-filled to SegmentSize and written in place. Replay reads the same
// records whether the writer closed or was abandoned mid-run (a crash of
// the process: what it wrote is in the files), and a reopened log goes on.
func TestPreallocatedSegmentsOnLocalFS(t *testing.T) {
	fs := dfs.NewLocal(t.TempDir())
	const segSize = 16 << 10
	var rotations atomic.Int32
	opts := Options{SegmentSize: segSize, Events: Events{Rotated: func(uint64, string) { rotations.Add(1) }}}
	w, _, _ := openLog(t, fs, opts)
	acked := appendAll(t, w, 0, 1500)
	if rotations.Load() < 4 {
		t.Fatalf("only %d rotations with %d-byte segments", rotations.Load(), segSize)
	}
	names, err := fs.List("log")
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, name := range names {
		if _, ok := parseSegmentName(name); !ok {
			continue
		}
		size, err := fs.Stat(dfs.Join("log", name))
		if err != nil {
			t.Fatal(err)
		}
		if size == segSize {
			full++
		}
	}
	if full == 0 {
		t.Fatalf("no segment of the %d was preallocated to %d bytes", len(names), segSize)
	}

	// Abandoned without Close: replay finds every acknowledged record and
	// reads the zeros after the last one as the end.
	w2, got, st := openLog(t, fs, opts)
	if st.Corruption != nil {
		t.Fatalf("preallocated zeros looked like corruption: %v", st.Corruption)
	}
	if len(got) != len(acked) {
		t.Fatalf("replayed %d records, acknowledged %d", len(got), len(acked))
	}
	checkReplay(t, got, acked)
	for lsn, rec := range appendAll(t, w2, 1500, 2000) {
		acked[lsn] = rec
	}
	if err := w2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Close(context.Background())
	if _, err := fs.Stat(dfs.Join("log", spareName)); err == nil {
		t.Fatal("Close left the spare segment behind")
	}
	w3, got, st := openLog(t, fs, opts)
	defer w3.Close(context.Background())
	if st.Corruption != nil {
		t.Fatal(st.Corruption)
	}
	checkReplay(t, got, acked)
	if len(got) != len(acked) {
		t.Fatalf("replayed %d records after reopening, acknowledged %d", len(got), len(acked))
	}
}
