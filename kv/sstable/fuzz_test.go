package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cellardb/cellar/kv/model"
)

// fuzzBlocks returns real block payloads to seed FuzzBlockDecode.
func fuzzBlocks() [][]byte {
	rng := rand.New(rand.NewSource(5))
	kvs := randomKVs(rng, 12)
	var out [][]byte
	for _, ri := range []int{1, 3, 16} {
		bw := blockWriter{restartInterval: ri}
		for _, e := range kvs {
			bw.add(e.key, e.value[:min(len(e.value), 8)])
		}
		out = append(out, bytes.Clone(bw.finish()))
	}
	bw := blockWriter{restartInterval: 2}
	for _, k := range []string{"a", "ab", "abc", "b", "ba"} {
		bw.add([]byte(k), []byte(k))
	}
	out = append(out, bytes.Clone(bw.finish()), []byte{0, 0, 0, 0})
	return out
}

// fuzzTables returns small real tables to seed FuzzOpen.
func fuzzTables(t testing.TB) [][]byte {
	rng := rand.New(rand.NewSource(6))
	kvs := randomKVs(rng, 20)
	for i := range kvs {
		kvs[i].value = kvs[i].value[:min(len(kvs[i].value), 30)]
	}
	return [][]byte{
		tableBytes(t, WriterOptions{BlockSize: 128, RestartInterval: 2, Compression: model.CompressionNone}, kvs),
		tableBytes(t, WriterOptions{BlockSize: 256, Compression: model.CompressionSnappy}, kvs),
		tableBytes(t, WriterOptions{BlockSize: 256, BloomFilter: true}, kvs[:3]),
		tableBytes(t, WriterOptions{}, nil),
	}
}

// TestWriteFuzzCorpus regenerates the committed seed corpus from the
// current format when SSTABLE_WRITE_FUZZ_CORPUS is set.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("SSTABLE_WRITE_FUZZ_CORPUS") == "" {
		return // set SSTABLE_WRITE_FUZZ_CORPUS=1 to regenerate testdata/fuzz
	}
	write := func(fuzzer string, seeds [][]byte) {
		dir := filepath.Join("testdata", "fuzz", fuzzer)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("FuzzBlockDecode", fuzzBlocks())
	write("FuzzOpen", fuzzTables(t))
}

// FuzzBlockDecode feeds arbitrary bytes to the block iterator as a
// decompressed payload. Nothing may panic, every error must be a corruption
// error, and a block that passes strict verification must iterate
// consistently in both directions and under seeks.
func FuzzBlockDecode(f *testing.F) {
	for _, b := range fuzzBlocks() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Keys are read in place where they can be: nothing may write
		// into the block (a cached block is shared).
		orig := bytes.Clone(data)
		defer func() {
			if !bytes.Equal(orig, data) {
				t.Fatal("iterating wrote into the block")
			}
		}()
		var it blockIter
		if err := it.init(data, "fuzz", 0); err != nil {
			requireCorruption(t, err)
			return
		}
		// Unverified first, as for a block from the cache.
		fwd := exerciseBlock(t, &it, data)
		it.init(data, "fuzz", 0)
		if it.validateRestarts() != nil {
			return
		}
		exerciseBlock(t, &it, data)
		it.init(data, "fuzz", 0)
		var strict []kv
		if err := it.verify(func(k, v []byte) error {
			strict = append(strict, kv{bytes.Clone(k), v})
			return nil
		}); err != nil {
			requireCorruption(t, err)
			return
		}
		if !sameKVs(fwd, strict) {
			t.Fatalf("forward scan %d entries, verify %d", len(fwd), len(strict))
		}
		var back []kv
		for ok := it.last(); ok; ok = it.prevEntry() {
			back = append(back, kv{bytes.Clone(it.key), it.val})
		}
		if it.err != nil {
			t.Fatalf("backward scan of a verified block: %v", it.err)
		}
		for i, j := 0, len(back)-1; i < j; i, j = i+1, j-1 {
			back[i], back[j] = back[j], back[i]
		}
		if !sameKVs(back, strict) {
			t.Fatal("backward scan disagrees with forward scan")
		}
		for j, e := range strict {
			if !it.seekGE(e.key) || !bytes.Equal(it.key, e.key) {
				t.Fatalf("seekGE(%x) missed", e.key)
			}
			ok := it.seekLT(e.key)
			if ok != (j > 0) || (ok && !bytes.Equal(it.key, strict[j-1].key)) {
				t.Fatalf("seekLT(%x) wrong", e.key)
			}
			ok = it.seekGE(append(bytes.Clone(e.key), 0))
			if ok != (j+1 < len(strict)) || (ok && !bytes.Equal(it.key, strict[j+1].key)) {
				t.Fatalf("seekGE after %x wrong", e.key)
			}
		}
	})
}

// exerciseBlock runs every operation over the block and returns what a
// forward scan saw before any error.
func exerciseBlock(t *testing.T, it *blockIter, data []byte) []kv {
	limit := len(data) + 1 // each entry takes at least 3 bytes
	var fwd []kv
	n := 0
	for ok := it.first(); ok; ok = it.nextEntry() {
		fwd = append(fwd, kv{bytes.Clone(it.key), it.val})
		if n++; n > limit {
			t.Fatal("forward scan does not end")
		}
	}
	if it.err != nil {
		requireCorruption(t, it.err)
		fwd = nil
	}
	it.err = nil
	// A scan's prefetching steps (nextScan) read the same entries.
	var scan []kv
	n = 0
	for ok := it.first(); ok; ok = it.nextScan() {
		scan = append(scan, kv{bytes.Clone(it.key), it.val})
		if n++; n > limit {
			t.Fatal("prefetching scan does not end")
		}
	}
	if it.err != nil {
		requireCorruption(t, it.err)
		scan = nil
	}
	if !sameKVs(scan, fwd) {
		t.Fatalf("prefetching scan read %d entries, nextEntry %d", len(scan), len(fwd))
	}
	it.err = nil
	n = 0
	for ok := it.last(); ok; ok = it.prevEntry() {
		if n++; n > limit {
			t.Fatal("backward scan does not end")
		}
	}
	if it.err != nil {
		requireCorruption(t, it.err)
	}
	targets := [][]byte{nil, {0}, {0xff, 0xff}, []byte("b")}
	for _, e := range fwd {
		targets = append(targets, e.key)
	}
	for _, k := range targets {
		it.err = nil
		it.seekGE(k)
		it.err = nil
		it.seekLT(k)
		if it.valid {
			it.prevEntry()
		}
	}
	it.err = nil
	return fwd
}

func requireCorruption(t *testing.T, err error) {
	t.Helper()
	var ce *model.CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("error is not a corruption error: %v", err)
	}
}

func sameKVs(a, b []kv) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].key, b[i].key) || !bytes.Equal(a[i].value, b[i].value) {
			return false
		}
	}
	return true
}

// FuzzOpen feeds arbitrary bytes to Open as a whole file, then iterates,
// seeks, checks and dumps. Nothing may panic and every error must be a
// corruption error; a file that passes Check must iterate cleanly.
func FuzzOpen(f *testing.F) {
	for _, b := range fuzzTables(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Random bytes rarely get past the checksums; the resealed copy
		// takes mutations through to the decoders behind them.
		for _, ro := range []ReaderOptions{{}, {InMemory: true}, {Cache: newMapCache()}} {
			openAndExercise(t, data, ro)
			openAndExercise(t, resealTable(data), ro)
		}
	})
}

// openAndExercise opens data as a table and runs every reader operation
// over it.
func openAndExercise(t *testing.T, data []byte, ro ReaderOptions) {
	r, err := openBytes(data, "fuzz.sst", ro)
	if err != nil {
		requireCorruption(t, err)
		return
	}
	defer r.Close()
	fwd, scanErr := scan(r)
	if scanErr != nil {
		requireCorruption(t, scanErr)
	}
	it := r.NewIter()
	n := 0
	for ok := it.Last(); ok; ok = it.Prev() {
		n++
	}
	for _, e := range fwd {
		it.SeekGE(e.key)
		it.SeekLT(e.key)
		it.Next()
	}
	if err := it.Close(); err != nil {
		requireCorruption(t, err)
	}
	if err := r.Dump(io.Discard, true); err != nil {
		requireCorruption(t, err)
	}
	if err := r.Check(); err != nil {
		requireCorruption(t, err)
		return
	}
	if scanErr != nil || uint64(len(fwd)) != r.Properties().NumEntries || n != len(fwd) {
		t.Fatalf("Check passed but scans found %d forward and %d backward of %d entries (%v)",
			len(fwd), n, r.Properties().NumEntries, scanErr)
	}
	for _, e := range fwd {
		it := r.NewIter()
		if !it.SeekGE(e.key) || !bytes.Equal(it.Key(), e.key) || !bytes.Equal(it.Value(), e.value) {
			t.Fatalf("Check passed but SeekGE(%x) missed", e.key)
		}
		it.Close()
	}
}

// resealTable repairs the magic, version and every checksum it can find in
// a table, on a copy.
func resealTable(data []byte) []byte {
	b := bytes.Clone(data)
	if len(b) < footerLen {
		return b
	}
	foot := uint64(len(b) - footerLen)
	binary.LittleEndian.PutUint32(b[foot+48:], formatVersion)
	binary.LittleEndian.PutUint32(b[foot+52:], crc32.Checksum(b[foot:foot+footerCRCLen], crcTable))
	binary.LittleEndian.PutUint64(b[foot+56:], tableMagic)
	seal := func(h handle) bool {
		if h.offset > foot || h.length > foot-h.offset || foot-h.offset-h.length < blockTrailerLen {
			return false
		}
		reseal(b, h)
		return true
	}
	var hs [3]handle
	for i := range hs {
		hs[i] = handle{binary.LittleEndian.Uint64(b[foot+16*uint64(i):]), binary.LittleEndian.Uint64(b[foot+16*uint64(i)+8:])}
		seal(hs[i])
	}
	if !seal(hs[0]) {
		return b
	}
	r := &Reader{name: "fuzz.sst"}
	index, _, err := r.decodeBlock(b[hs[0].offset:hs[0].end()], hs[0].offset)
	if err != nil {
		return b
	}
	var it blockIter
	if it.init(index, "fuzz.sst", 0) != nil {
		return b
	}
	for ok := it.first(); ok; ok = it.nextEntry() {
		if h, ok := decodeHandle(it.val); ok {
			seal(h)
		}
	}
	return b
}
