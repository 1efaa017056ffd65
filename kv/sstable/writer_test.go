package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

func TestWriterOptionsValidate(t *testing.T) {
	if err := (WriterOptions{}).Validate(); err != nil {
		t.Fatal(err)
	}
	d := WriterOptions{}.EnsureDefaults()
	if d.BlockSize != 64<<10 || d.RestartInterval != 16 || d.FalsePositiveRate != 0.01 || d.Compression != model.CompressionSnappy {
		t.Fatalf("defaults: %+v", d)
	}
	for _, o := range []WriterOptions{
		{BlockSize: -1},
		{BlockSize: maxBlockSize + 1},
		{RestartInterval: -1},
		{Compression: 7},
		{FalsePositiveRate: 1},
		{FalsePositiveRate: -0.1},
		{FalsePositiveRate: math.NaN()},
		{ExpectedKeys: -1},
	} {
		err := o.Validate()
		if !errors.Is(err, model.ErrInvalidArgument) {
			t.Fatalf("%+v: %v", o, err)
		}
		w := NewWriter(nil, "x.sst", o)
		if err := w.Add([]byte("a"), nil); !errors.Is(err, model.ErrInvalidArgument) {
			t.Fatalf("Add with options %+v: %v", o, err)
		}
		if _, err := w.Finish(); !errors.Is(err, model.ErrInvalidArgument) {
			t.Fatalf("Finish with options %+v: %v", o, err)
		}
	}
}

func TestWriterMisuse(t *testing.T) {
	fs := dfs.NewMem()
	f, _ := fs.Create("t.sst")
	w := NewWriter(f, "t.sst", WriterOptions{})
	if err := w.Add([]byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	// An out-of-order key is refused without breaking the writer.
	if err := w.Add([]byte("a"), nil); !errors.Is(err, model.ErrInvalidArgument) {
		t.Fatal(err)
	}
	if err := w.Add([]byte("c"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add([]byte("d"), nil); !errors.Is(err, model.ErrClosed) {
		t.Fatal(err)
	}
	if _, err := w.Finish(); !errors.Is(err, model.ErrClosed) {
		t.Fatal(err)
	}
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	got, err := scan(r)
	if err != nil || len(got) != 2 {
		t.Fatalf("scan: %d entries, %v", len(got), err)
	}
	r.Close()
}

func TestWriterIOErrors(t *testing.T) {
	kvs := make([]kv, 2000)
	for i := range kvs {
		kvs[i] = kv{[]byte(fmt.Sprintf("key%06d", i)), bytes.Repeat([]byte{byte(i)}, 200)}
	}
	run := func(fs *dfs.Mem) error {
		f, err := fs.Create("t.sst")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w := NewWriter(f, "t.sst", WriterOptions{BlockSize: 4096, Compression: model.CompressionNone})
		for _, e := range kvs {
			if err := w.Add(e.key, e.value); err != nil {
				return err
			}
		}
		_, err = w.Finish()
		return err
	}
	full := dfs.NewMem()
	full.SetCapacity(100 << 10)
	if err := run(full); !errors.Is(err, model.ErrResourceExhausted) || !bytes.Contains([]byte(err.Error()), []byte("t.sst")) {
		t.Fatalf("full disk: %v", err)
	}
	failSync := dfs.NewMem()
	failSync.SetFaultHook(func(op dfs.Op, name string) error {
		if op == dfs.OpSync {
			return dfs.ErrInjected
		}
		return nil
	})
	if err := run(failSync); !errors.Is(err, model.ErrUnavailable) || !errors.Is(err, dfs.ErrInjected) {
		t.Fatalf("failed sync: %v", err)
	}
}

// countingFile counts the writes that reach the file.
type countingFile struct {
	dfs.File
	writes int
}

func (f *countingFile) Write(p []byte) (int, error) {
	f.writes++
	return f.File.Write(p)
}

func TestWriterBuffersAndEstimates(t *testing.T) {
	fs := dfs.NewMem()
	mf, _ := fs.Create("t.sst")
	f := &countingFile{File: mf}
	w := NewWriter(f, "t.sst", WriterOptions{BlockSize: 4096, Compression: model.CompressionNone})
	last := uint64(0)
	for i := 0; i < 10000; i++ {
		if err := w.Add([]byte(fmt.Sprintf("key%06d", i)), bytes.Repeat([]byte{'v'}, 100)); err != nil {
			t.Fatal(err)
		}
		est := w.EstimatedSize()
		if est < last {
			t.Fatalf("EstimatedSize went from %d to %d", last, est)
		}
		last = est
	}
	if f.writes != 0 && last < writeBufferSize {
		t.Fatalf("%d writes before the buffer filled", f.writes)
	}
	props, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	size, _ := mf.Size()
	if uint64(size) < last || props.DataSize > uint64(size) {
		t.Fatalf("file of %d bytes, estimate %d, data %d", size, last, props.DataSize)
	}
	if want := size/writeBufferSize + 2; f.writes > int(want) {
		t.Fatalf("%d writes for %d bytes; want at most %d", f.writes, size, want)
	}
	if w.EstimatedSize() != uint64(size) {
		t.Fatalf("final EstimatedSize %d, file %d", w.EstimatedSize(), size)
	}
}

// TestIterAllocs guards the hot paths: stepping and seeking within loaded
// or cached blocks must not allocate.
func TestIterAllocs(t *testing.T) {
	kvs := make([]kv, 5000)
	for i := range kvs {
		kvs[i] = kv{model.AppendKey(nil, []byte(fmt.Sprintf("row%06d", i)), "f", []byte("q"), 1, 1, model.KindSetCell), bytes.Repeat([]byte{'v'}, 100)}
	}
	fs := dfs.NewMem()
	writeTable(t, fs, "t.sst", WriterOptions{BlockSize: 4096}, kvs)
	for _, ro := range []ReaderOptions{{InMemory: true}, {Cache: newMapCache(), CacheID: 1}} {
		r := openTable(t, fs, "t.sst", ro)
		it := r.NewIter()
		for ok := it.First(); ok; ok = it.Next() { // warm the cache and buffers
		}
		for ok := it.Last(); ok; ok = it.Prev() {
		}
		i := 0
		if n := testing.AllocsPerRun(1000, func() {
			if !it.Next() {
				it.First()
			}
		}); n != 0 {
			t.Fatalf("Next: %v allocs", n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			if !it.Prev() {
				it.Last()
			}
		}); n != 0 {
			t.Fatalf("Prev: %v allocs", n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			i = (i + 7919) % len(kvs)
			if !it.SeekGE(kvs[i].key) {
				t.Fatal("seek failed")
			}
		}); n != 0 {
			t.Fatalf("SeekGE: %v allocs", n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			i = (i + 7919) % len(kvs)
			it.SeekLT(kvs[i].key)
		}); n != 0 {
			t.Fatalf("SeekLT: %v allocs", n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			r.MayContainRow(kvs[i].key[:10])
		}); n != 0 {
			t.Fatalf("MayContainRow: %v allocs", n)
		}
		it.Close()
		r.Close()
	}
}

// A block miss costs exactly one read.
func TestOneReadPerBlock(t *testing.T) {
	kvs := make([]kv, 2000)
	for i := range kvs {
		kvs[i] = kv{[]byte(fmt.Sprintf("key%06d", i)), bytes.Repeat([]byte{'v'}, 100)}
	}
	fs := dfs.NewMem()
	writeTable(t, fs, "t.sst", WriterOptions{BlockSize: 4096}, kvs)
	reads := 0
	fs.SetFaultHook(func(op dfs.Op, name string) error {
		if op == dfs.OpRead {
			reads++
		}
		return nil
	})
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	if reads != 2 {
		t.Fatalf("Open made %d reads, want 2 (footer, then metadata)", reads)
	}
	reads = 0
	it := r.NewIter()
	if !it.SeekGE(kvs[1234].key) || !bytes.Equal(it.Key(), kvs[1234].key) {
		t.Fatal("seek failed")
	}
	if reads != 1 {
		t.Fatalf("point lookup made %d reads", reads)
	}
	reads = 0
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if n != len(kvs) || reads != len(r.index) {
		t.Fatalf("scan of %d entries made %d reads for %d blocks", n, reads, len(r.index))
	}
	it.Close()
}

func TestEmptyTable(t *testing.T) {
	fs := dfs.NewMem()
	p := writeTable(t, fs, "t.sst", WriterOptions{BloomFilter: true}, nil)
	if p.NumEntries != 0 || p.SmallestKey != nil || p.NumDataBlocks != 0 {
		t.Fatalf("%+v", p)
	}
	r := openTable(t, fs, "t.sst", ReaderOptions{InMemory: true})
	defer r.Close()
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if len(r.Blocks()) != 0 || r.MayContainRow(model.AppendRowPrefix(nil, []byte("x"))) {
		t.Fatal("empty table claims content")
	}
}

// TestRestartPointsByBytes: with large values a data block starts a
// restart point once the entries since the last one take dataRestartBytes,
// not only every RestartInterval entries, and seeks land on every key.
func TestRestartPointsByBytes(t *testing.T) {
	for _, vlen := range []int{10, 300, 1000, 5000} {
		bw := blockWriter{restartInterval: 16, restartBytes: dataRestartBytes}
		var keys [][]byte
		for i := range 40 {
			k := fmt.Appendf(nil, "row%04d", i)
			keys = append(keys, k)
			bw.add(k, bytes.Repeat([]byte{'v'}, vlen))
		}
		data := bytes.Clone(bw.finish())
		var b blockIter
		if err := b.init(data, "t.sst", 0); err != nil {
			t.Fatal(err)
		}
		// Entries between restart points, at most: the interval, or as
		// many as fit in restartBytes (plus the one that crosses it).
		perEntry := vlen + 10
		want := min(16, dataRestartBytes/perEntry+1)
		if got := (40 + b.numRestarts - 1) / b.numRestarts; got > want {
			t.Errorf("values of %d bytes: %d restart points for 40 entries, about %d entries apart; want at most %d", vlen, b.numRestarts, got, want)
		}
		for _, k := range keys {
			if !b.seekGE(k) || !bytes.Equal(b.key, k) {
				t.Fatalf("values of %d bytes: seekGE(%s) landed on %q", vlen, k, b.key)
			}
		}
	}
}
