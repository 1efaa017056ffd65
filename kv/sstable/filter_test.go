package sstable

import (
	"fmt"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

func TestBloomFilter(t *testing.T) {
	const rows, cols, versions = 1000, 3, 4
	var kvs []kv
	for r := 0; r < rows; r++ {
		row := []byte(fmt.Sprintf("row%05d", r))
		for c := 0; c < cols; c++ {
			for v := versions; v > 0; v-- {
				kvs = append(kvs, kv{model.AppendKey(nil, row, "f", []byte(fmt.Sprintf("q%d", c)), int64(v), 1, model.KindSetCell), []byte("v")})
			}
		}
	}
	fs := dfs.NewMem()
	writeTable(t, fs, "t.sst", WriterOptions{BloomFilter: true, ExpectedKeys: len(kvs), BlockSize: 4096}, kvs)
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()

	for r2 := 0; r2 < rows; r2++ {
		row := []byte(fmt.Sprintf("row%05d", r2))
		if !r.MayContainRow(model.AppendRowPrefix(nil, row)) {
			t.Fatalf("filter rejects present row %s", row)
		}
		for c := 0; c < cols; c++ {
			if !r.MayContainColumn(model.AppendColumnPrefix(nil, row, "f", []byte(fmt.Sprintf("q%d", c)))) {
				t.Fatalf("filter rejects present column %s f:q%d", row, c)
			}
		}
	}
	const probes = 4000
	rowFP, colFP := 0, 0
	for i := 0; i < probes; i++ {
		absent := []byte(fmt.Sprintf("absent%05d", i))
		if r.MayContainRow(model.AppendRowPrefix(nil, absent)) {
			rowFP++
		}
		// A present row with an absent column.
		row := []byte(fmt.Sprintf("row%05d", i%rows))
		if r.MayContainColumn(model.AppendColumnPrefix(nil, row, "f", []byte(fmt.Sprintf("x%d", i)))) {
			colFP++
		}
	}
	if rowFP > probes/10 || colFP > probes/10 {
		t.Fatalf("false positives: %d rows and %d columns of %d probes", rowFP, colFP, probes)
	}
	t.Logf("false positives: rows %.2f%%, columns %.2f%%", 100*float64(rowFP)/probes, 100*float64(colFP)/probes)
}

// Keys that are not internal keys add nothing to the filter, and the reader
// answers for them as for any absent key.
func TestBloomFilterRawKeys(t *testing.T) {
	fs := dfs.NewMem()
	writeTable(t, fs, "t.sst", WriterOptions{BloomFilter: true}, []kv{{[]byte("a"), nil}, {[]byte("b"), nil}})
	r := openTable(t, fs, "t.sst", ReaderOptions{})
	defer r.Close()
	if !r.Properties().HasFilter {
		t.Fatal("no filter")
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeFilterRejectsGarbage(t *testing.T) {
	hdr := func(m, k, bits uint64, words int) []byte {
		b := make([]byte, filterHeaderLen+8*words)
		for i, x := range []uint64{m, k, bits} {
			for j := 0; j < 8; j++ {
				b[8*i+j] = byte(x >> (56 - 8*j))
			}
		}
		return b
	}
	for _, b := range [][]byte{
		nil,
		make([]byte, 23),
		hdr(0, 3, 0, 0),         // m = 0 would divide by zero
		hdr(64, 3, 64, 2),       // too many words
		hdr(64, 0, 64, 1),       // no hashes
		hdr(64, 1000, 64, 1),    // absurd hash count
		hdr(1<<62, 3, 1<<62, 1), // claims a huge bitset
		hdr(64, 3, 128, 1),      // bitset length differs from m
	} {
		if _, err := decodeFilter(b, "f", 0); err == nil {
			t.Fatalf("decodeFilter accepted %x", b)
		}
	}
	if _, err := decodeFilter(hdr(64, 3, 64, 1), "f", 0); err != nil {
		t.Fatal(err)
	}
}
