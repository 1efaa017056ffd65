package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// randomKVs returns n sorted, distinct entries: mostly internal keys with
// rows and qualifiers that contain zero bytes, some raw keys, and values
// from empty to several blocks long, compressible or not.
func randomKVs(rng *rand.Rand, n int) []kv {
	alphabet := []byte{0, 1, 'a', 'b', 'c', 0xff}
	word := func(max int) []byte {
		b := make([]byte, rng.Intn(max+1))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return b
	}
	seen := map[string]bool{}
	var out []kv
	for len(out) < n {
		var k []byte
		if rng.Intn(20) == 0 {
			k = word(8)
		} else {
			kind := model.KindSetCell
			if rng.Intn(5) == 0 {
				kind = model.MutationKind(2 + rng.Intn(3))
			}
			k = model.AppendKey(nil, word(4), []string{"a", "b"}[rng.Intn(2)], word(3),
				rng.Int63n(1000), uint64(rng.Int63n(1<<20)), kind)
		}
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		var v []byte
		switch p := rng.Intn(100); {
		case p < 70:
			v = make([]byte, rng.Intn(40))
		case p < 95:
			v = make([]byte, 40+rng.Intn(400))
		default:
			v = make([]byte, 2000+rng.Intn(4000))
		}
		if rng.Intn(2) == 0 {
			rng.Read(v)
		} else {
			for i := range v {
				v[i] = byte('a' + i%7)
			}
		}
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].key, out[j].key) < 0 })
	return out
}

// iterModel is the reference an Iter is compared with.
type iterModel struct {
	kvs []kv
	pos int
	idx int
}

func (m *iterModel) seekGE(k []byte) {
	i := sort.Search(len(m.kvs), func(i int) bool { return bytes.Compare(m.kvs[i].key, k) >= 0 })
	m.set(i)
}

func (m *iterModel) seekLT(k []byte) {
	i := sort.Search(len(m.kvs), func(i int) bool { return bytes.Compare(m.kvs[i].key, k) >= 0 })
	m.set(i - 1)
}

// set positions at i, or past either end.
func (m *iterModel) set(i int) {
	switch {
	case i < 0:
		m.pos = posAtStart
	case i >= len(m.kvs):
		m.pos = posAtEnd
	default:
		m.pos, m.idx = posValid, i
	}
}

func (m *iterModel) next() {
	switch m.pos {
	case posValid:
		m.set(m.idx + 1)
	case posAtStart:
		m.set(0)
	}
}

func (m *iterModel) prev() {
	switch m.pos {
	case posValid:
		m.set(m.idx - 1)
	case posAtEnd:
		m.set(len(m.kvs) - 1)
	}
}

func TestRandomized(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	kvs := randomKVs(rng, 3000)
	for _, bs := range []int{64, 700, 4096} {
		for _, ri := range []int{1, 3, 16} {
			for _, comp := range []model.Compression{model.CompressionNone, model.CompressionSnappy} {
				opts := WriterOptions{BlockSize: bs, RestartInterval: ri, Compression: comp, BloomFilter: rng.Intn(2) == 0}
				t.Run(fmt.Sprintf("bs=%d/ri=%d/%s", bs, ri, compressionName(comp)), func(t *testing.T) {
					testRandomTable(t, rng, opts, kvs)
				})
			}
		}
	}
	t.Run("empty", func(t *testing.T) { testRandomTable(t, rng, WriterOptions{BloomFilter: true}, nil) })
	t.Run("one", func(t *testing.T) { testRandomTable(t, rng, WriterOptions{}, kvs[:1]) })
}

func testRandomTable(t *testing.T, rng *rand.Rand, opts WriterOptions, kvs []kv) {
	fs := dfs.NewMem()
	props := writeTable(t, fs, "t.sst", opts, kvs)
	var raw uint64
	for _, e := range kvs {
		raw += uint64(len(e.key))
	}
	if props.NumEntries != uint64(len(kvs)) || props.RawKeyBytes != raw {
		t.Fatalf("properties count %d entries and %d key bytes, want %d and %d", props.NumEntries, props.RawKeyBytes, len(kvs), raw)
	}
	cache := newMapCache()
	for _, ro := range []ReaderOptions{{}, {Cache: cache, CacheID: 7}, {InMemory: true}} {
		r := openTable(t, fs, "t.sst", ro)
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
		if got := r.Properties(); got.NumEntries != props.NumEntries || !bytes.Equal(got.LargestKey, props.LargestKey) {
			t.Fatalf("read properties %+v differ from written %+v", got, props)
		}
		checkBlockSizes(t, r, opts.EnsureDefaults().BlockSize)
		compareWithModel(t, rng, r, kvs, 3000)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if props.NumDataBlocks > 1 && cache.hits == 0 {
		t.Fatal("the block cache was never hit")
	}
}

// checkBlockSizes checks the cutting policy: a block holds less than
// blockSize before its last entry, and an entry of blockSize or more is
// alone in its block.
func checkBlockSizes(t *testing.T, r *Reader, blockSize int) {
	for bi := range r.index {
		data, _, err := r.dataBlock(bi, nil, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var it blockIter
		if err := it.init(data, r.name, 0); err != nil {
			t.Fatal(err)
		}
		n, big := 0, false
		for ok := it.first(); ok; ok = it.nextEntry() {
			n++
			big = big || it.next-it.offset >= blockSize
		}
		if it.offset >= blockSize || (big && n > 1) {
			t.Fatalf("block %d: %d entries in %d bytes, the last at %d, for block size %d", bi, n, len(data), it.offset, blockSize)
		}
	}
}

func compareWithModel(t *testing.T, rng *rand.Rand, r *Reader, kvs []kv, ops int) {
	it := r.NewIter()
	m := iterModel{kvs: kvs}
	type saved struct{ got, want []byte }
	var values []saved
	target := func() []byte {
		if len(kvs) == 0 || rng.Intn(10) == 0 {
			b := make([]byte, rng.Intn(6))
			rng.Read(b)
			return b
		}
		k := kvs[rng.Intn(len(kvs))].key
		switch rng.Intn(4) {
		case 0:
			return k
		case 1:
			return append(slices.Clip(k), 0) // just after k
		case 2:
			return k[:rng.Intn(len(k)+1)] // a prefix, often a row or column
		default:
			if row := model.RowPrefix(k); row != nil {
				return model.RowLimit(slices.Clone(row)) // just after the row
			}
			return k
		}
	}
	var trace []string
	for n := 0; n < ops; n++ {
		var op string
		var ok bool
		switch rng.Intn(10) {
		case 0:
			k := target()
			op = fmt.Sprintf("SeekGE(%x)", k)
			ok = it.SeekGE(k)
			m.seekGE(k)
		case 1:
			k := target()
			op = fmt.Sprintf("SeekLT(%x)", k)
			ok = it.SeekLT(k)
			m.seekLT(k)
		case 2:
			op, ok = "First", it.First()
			m.set(0)
		case 3:
			op, ok = "Last", it.Last()
			if len(kvs) == 0 {
				m.set(-1)
			} else {
				m.set(len(kvs) - 1)
			}
		case 4, 5, 6:
			op, ok = "Next", it.Next()
			m.next()
		default:
			op, ok = "Prev", it.Prev()
			m.prev()
		}
		trace = append(trace, op)
		if len(trace) > 10 {
			trace = trace[1:]
		}
		if err := it.Error(); err != nil {
			t.Fatalf("after %v: %v", trace, err)
		}
		want := m.pos == posValid
		if ok != want || it.Valid() != want {
			t.Fatalf("after %v: valid=%t/%t, want %t (model pos %d)", trace, ok, it.Valid(), want, m.pos)
		}
		if want {
			e := kvs[m.idx]
			if !bytes.Equal(it.Key(), e.key) || !bytes.Equal(it.Value(), e.value) {
				t.Fatalf("after %v: at %s, want %s", trace, formatKey(it.Key()), formatKey(e.key))
			}
			if rng.Intn(50) == 0 {
				values = append(values, saved{it.Value(), e.value})
			}
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if !bytes.Equal(v.got, v.want) {
			t.Fatal("a value changed after the iterator moved on")
		}
	}
}
