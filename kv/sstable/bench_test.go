package sstable

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

const (
	benchKeys     = 100_000
	benchValueLen = 1000
)

// benchKVs returns benchKeys internal keys with values that snappy shrinks
// by about half.
func benchKVs() []kv {
	rng := rand.New(rand.NewSource(1))
	kvs := make([]kv, benchKeys)
	for i := range kvs {
		v := make([]byte, benchValueLen)
		rng.Read(v[:benchValueLen/2])
		kvs[i] = kv{model.AppendKey(nil, []byte(fmt.Sprintf("user%010d", i)), "f", []byte("q"), 1, uint64(i), model.KindSetCell), v}
	}
	return kvs
}

// benchReaders builds one table per file system and returns readers for
// each way of serving blocks.
func benchReaders(b *testing.B, kvs []kv) map[string]*Reader {
	mem := dfs.NewMem()
	writeTable(b, mem, "t.sst", WriterOptions{BloomFilter: true, ExpectedKeys: len(kvs)}, kvs)
	local := dfs.NewLocal(b.TempDir())
	writeTable(b, local, "t.sst", WriterOptions{BloomFilter: true, ExpectedKeys: len(kvs)}, kvs)
	return map[string]*Reader{
		"local":    openTable(b, local, "t.sst", ReaderOptions{}),
		"cache":    openTable(b, local, "t.sst", ReaderOptions{Cache: newMapCache(), CacheID: 1}),
		"inmemory": openTable(b, mem, "t.sst", ReaderOptions{InMemory: true}),
	}
}

func BenchmarkWriter(b *testing.B) {
	kvs := benchKVs()
	for _, c := range []model.Compression{model.CompressionNone, model.CompressionSnappy} {
		b.Run(compressionName(c), func(b *testing.B) {
			fs := dfs.NewLocal(b.TempDir())
			b.SetBytes(int64(len(kvs) * (benchValueLen + len(kvs[0].key))))
			for b.Loop() {
				writeTable(b, fs, "t.sst", WriterOptions{Compression: c, BloomFilter: true, ExpectedKeys: len(kvs)}, kvs)
			}
		})
	}
}

func BenchmarkSeekGE(b *testing.B) {
	kvs := benchKVs()
	readers := benchReaders(b, kvs)
	for _, name := range []string{"local", "cache", "inmemory"} {
		r := readers[name]
		b.Run(name, func(b *testing.B) {
			it := r.NewIter()
			rng := rand.New(rand.NewSource(2))
			for _, e := range kvs { // warm the cache
				it.SeekGE(e.key)
			}
			b.ResetTimer()
			for b.Loop() {
				k := kvs[rng.Intn(len(kvs))].key
				if !it.SeekGE(k) {
					b.Fatal(it.Error())
				}
			}
			it.Close()
		})
		r.Close()
	}
}

func BenchmarkScan(b *testing.B) {
	kvs := benchKVs()
	readers := benchReaders(b, kvs)
	for _, name := range []string{"local", "cache", "inmemory"} {
		r := readers[name]
		for _, dir := range []string{"next", "prev"} {
			b.Run(name+"/"+dir, func(b *testing.B) {
				it := r.NewIter()
				it.First()
				for it.Next() { // warm the cache
				}
				b.ResetTimer()
				for b.Loop() {
					if dir == "next" {
						if !it.Next() {
							it.First()
						}
					} else if !it.Prev() {
						it.Last()
					}
				}
				it.Close()
			})
		}
		r.Close()
	}
}

func BenchmarkMayContainRow(b *testing.B) {
	kvs := benchKVs()
	fs := dfs.NewMem()
	writeTable(b, fs, "t.sst", WriterOptions{BloomFilter: true, ExpectedKeys: len(kvs)}, kvs)
	r := openTable(b, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	rows := make([][]byte, 1024)
	for i := range rows {
		rows[i] = model.AppendRowPrefix(nil, []byte(fmt.Sprintf("absent%d", i)))
	}
	i := 0
	for b.Loop() {
		r.MayContainRow(rows[i&1023])
		i++
	}
}
