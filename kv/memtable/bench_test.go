package memtable

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/cellardb/cellar/kv/model"
)

// benchKeys returns n distinct 40-byte internal keys in random order: a
// 16-byte row, family "f", a 2-byte qualifier and the 16-byte trailer.
func benchKeys(r *rand.Rand, n int) [][]byte {
	keys := make([][]byte, n)
	for i, p := range r.Perm(n) {
		row := fmt.Appendf(nil, "%016x", uint64(p)*0x9e3779b97f4a7c15)
		keys[i] = model.AppendKey(nil, row, "f", []byte("q1"), 1, uint64(i+1), model.KindSetCell)
	}
	return keys
}

// benchEntries is about 70 MB with 1000-byte values, a realistic memtable.
const benchEntries = 1 << 16

func BenchmarkAdd(b *testing.B) {
	keys := benchKeys(rand.New(rand.NewSource(1)), benchEntries)
	value := make([]byte, 1000)
	rand.New(rand.NewSource(2)).Read(value)
	m := New(Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % benchEntries
		if j == 0 && i > 0 {
			b.StopTimer()
			m = New(Options{}) // a flush: start a fresh memtable
			b.StartTimer()
		}
		if err := m.Add(keys[j], value); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAddBatch(b *testing.B) {
	const cols = 4
	r := rand.New(rand.NewSource(1))
	keys := benchKeys(r, benchEntries)
	// Make each batch one row mutation: cols columns of one row.
	for i := 0; i < len(keys); i += cols {
		for c := range cols {
			k := keys[i+c]
			k = append(model.ColumnPrefix(keys[i])[:0:0], model.ColumnPrefix(keys[i])...)
			k[len(k)-3] = byte('0' + c)
			keys[i+c] = model.AppendTrailer(k, 1, uint64(i+1), model.KindSetCell)
		}
	}
	value := make([]byte, 1000)
	values := [][]byte{value, value, value, value}
	m := New(Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i * cols % benchEntries
		if j == 0 && i > 0 {
			b.StopTimer()
			m = New(Options{})
			b.StartTimer()
		}
		if err := m.AddBatch(keys[j:j+cols], values); err != nil {
			b.Fatal(err)
		}
	}
}

func benchMemtable(b *testing.B, valueLen int) (*Memtable, [][]byte) {
	keys := benchKeys(rand.New(rand.NewSource(1)), benchEntries)
	value := make([]byte, valueLen)
	m := New(Options{})
	for _, k := range keys {
		if err := m.Add(k, value); err != nil {
			b.Fatal(err)
		}
	}
	rand.New(rand.NewSource(3)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return m, keys
}

func BenchmarkSeekGE(b *testing.B) {
	m, keys := benchMemtable(b, 1000)
	it := m.NewIter(m.MaxSeq()) // as the tablet does; checks each entry's seq
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		it.SeekGE(keys[i%len(keys)])
	}
}

func BenchmarkNext(b *testing.B) {
	m, _ := benchMemtable(b, 1000)
	it := m.NewIter(1 << 62)
	it.First()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !it.Next() {
			it.First()
		}
	}
}
