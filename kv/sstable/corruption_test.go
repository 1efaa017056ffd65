package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"strings"
	"testing"

	"github.com/cellardb/cellar/kv/model"
)

const corruptName = "dir/bad.sst"

// corruptionFixture is a table with several blocks and a filter, and its
// reader, for locating the parts to damage.
func corruptionFixture(t *testing.T, comp model.Compression) ([]byte, []kv, *Reader) {
	t.Helper()
	rng := rand.New(rand.NewSource(3))
	kvs := randomKVs(rng, 300)
	b := tableBytes(t, WriterOptions{BlockSize: 512, Compression: comp, BloomFilter: true}, kvs)
	r, err := openBytes(b, corruptName, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if len(r.index) < 4 {
		t.Fatalf("fixture has only %d blocks", len(r.index))
	}
	return b, kvs, r
}

// wantCorruption checks that err is a corruption error naming the file and
// offset.
func wantCorruption(t *testing.T, err error, offset uint64) {
	t.Helper()
	if err == nil {
		t.Fatal("corruption went unnoticed")
	}
	var ce *model.CorruptionError
	if !errors.Is(err, model.ErrCorruption) || !errors.As(err, &ce) {
		t.Fatalf("error %v is not a corruption error", err)
	}
	if ce.File != corruptName || uint64(ce.Offset) != offset {
		t.Fatalf("error %q names %s at %d, want %s at %d", err, ce.File, ce.Offset, corruptName, offset)
	}
	if !strings.Contains(err.Error(), corruptName) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", offset)) {
		t.Fatalf("error %q does not name the file and offset", err)
	}
}

func flip(b []byte, off uint64) []byte {
	c := bytes.Clone(b)
	c[off] ^= 0x40
	return c
}

// scan iterates forward over the whole table and returns the entries it
// saw and the iterator's error.
func scan(r *Reader) ([]kv, error) {
	it := r.NewIter()
	var out []kv
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, kv{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	return out, it.Close()
}

func TestCorruptDataBlock(t *testing.T) {
	for _, comp := range []model.Compression{model.CompressionNone, model.CompressionSnappy} {
		t.Run(compressionName(comp), func(t *testing.T) {
			b, kvs, r0 := corruptionFixture(t, comp)
			h := r0.index[2].h
			bad := flip(b, h.offset+h.length/2)

			r, err := openBytes(bad, corruptName, ReaderOptions{Cache: newMapCache(), CacheID: 1})
			if err != nil {
				t.Fatalf("Open read a data block: %v", err)
			}
			defer r.Close()
			got, err := scan(r)
			wantCorruption(t, err, h.offset)
			// Everything before the bad block comes back intact.
			for i, e := range got {
				if !bytes.Equal(e.key, kvs[i].key) || !bytes.Equal(e.value, kvs[i].value) {
					t.Fatalf("entry %d differs before the corrupt block", i)
				}
			}
			it := r.NewIter()
			if it.SeekGE(r.index[2].lastKey) {
				t.Fatal("SeekGE into the corrupt block succeeded")
			}
			wantCorruption(t, it.Error(), h.offset)
			if it.Next() || it.First() || it.Valid() {
				t.Fatal("an iterator moved after an error")
			}
			wantCorruption(t, it.Close(), h.offset)
			wantCorruption(t, r.Check(), h.offset)
			if err := r.Dump(&strings.Builder{}, true); err == nil {
				t.Fatal("Dump read a corrupt block")
			}

			_, err = openBytes(bad, corruptName, ReaderOptions{InMemory: true})
			wantCorruption(t, err, h.offset)
		})
	}
}

func TestCorruptIndex(t *testing.T) {
	b, _, r := corruptionFixture(t, model.CompressionSnappy)
	_, err := openBytes(flip(b, r.footer.index.offset+3), corruptName, ReaderOptions{})
	wantCorruption(t, err, r.footer.index.offset)
}

func TestCorruptFilter(t *testing.T) {
	b, _, r := corruptionFixture(t, model.CompressionSnappy)
	_, err := openBytes(flip(b, r.footer.filter.offset+r.footer.filter.length/2), corruptName, ReaderOptions{})
	wantCorruption(t, err, r.footer.filter.offset)
}

func TestCorruptProperties(t *testing.T) {
	b, _, r := corruptionFixture(t, model.CompressionSnappy)
	_, err := openBytes(flip(b, r.footer.props.offset+10), corruptName, ReaderOptions{})
	wantCorruption(t, err, r.footer.props.offset)
}

func TestCorruptFooter(t *testing.T) {
	b, _, _ := corruptionFixture(t, model.CompressionSnappy)
	foot := uint64(len(b) - footerLen)
	for _, tc := range []struct {
		name     string
		at, want uint64
	}{
		{"handle", foot + 1, foot},
		{"version", foot + 48, foot},
		{"checksum", foot + 53, foot},
		{"magic", foot + 60, foot + 56},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openBytes(flip(b, tc.at), corruptName, ReaderOptions{})
			wantCorruption(t, err, tc.want)
		})
	}
}

// A footer with a valid checksum can still be wrong.
func TestFooterSemantics(t *testing.T) {
	b, _, r := corruptionFixture(t, model.CompressionSnappy)
	foot := uint64(len(b) - footerLen)
	rewrite := func(f footer) []byte {
		c := bytes.Clone(b[:foot])
		enc := f.encode()
		return append(c, enc...)
	}
	f := r.footer
	f.version = 2
	_, err := openBytes(rewrite(f), corruptName, ReaderOptions{})
	wantCorruption(t, err, foot+48)

	f = r.footer
	f.index.length = 1 << 62
	_, err = openBytes(rewrite(f), corruptName, ReaderOptions{})
	wantCorruption(t, err, foot)

	f = r.footer
	f.props.offset = foot
	_, err = openBytes(rewrite(f), corruptName, ReaderOptions{})
	wantCorruption(t, err, foot+32)

	// Handles that point at the wrong (but real) blocks.
	f = r.footer
	f.index, f.props = f.props, f.index
	_, err = openBytes(rewrite(f), corruptName, ReaderOptions{})
	if !errors.Is(err, model.ErrCorruption) {
		t.Fatalf("swapped handles: %v", err)
	}
}

func TestTruncated(t *testing.T) {
	b, _, r := corruptionFixture(t, model.CompressionSnappy)
	for _, n := range []int{0, 1, footerLen - 1, footerLen, len(b) / 2, int(r.footer.index.offset), len(b) - footerLen, len(b) - 1} {
		for _, inMem := range []bool{false, true} {
			_, err := openBytes(b[:n], corruptName, ReaderOptions{InMemory: inMem})
			if !errors.Is(err, model.ErrCorruption) || !strings.Contains(err.Error(), corruptName) {
				t.Fatalf("truncated to %d bytes: %v", n, err)
			}
		}
	}
}

// TestEveryByte flips each byte of a small table in turn: Open or Check must
// notice, and no iteration may return data that was not written.
func TestEveryByte(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	kvs := randomKVs(rng, 40)
	for i := range kvs {
		kvs[i].value = kvs[i].value[:min(len(kvs[i].value), 24)]
	}
	for _, comp := range []model.Compression{model.CompressionNone, model.CompressionSnappy} {
		b := tableBytes(t, WriterOptions{BlockSize: 256, Compression: comp, BloomFilter: true}, kvs)
		for off := range b {
			bad := flip(b, uint64(off))
			r, err := openBytes(bad, corruptName, ReaderOptions{})
			if err != nil {
				if !errors.Is(err, model.ErrCorruption) {
					t.Fatalf("flip at %d: Open: %v", off, err)
				}
				continue
			}
			got, scanErr := scan(r)
			if scanErr != nil && !errors.Is(scanErr, model.ErrCorruption) {
				t.Fatalf("flip at %d: scan: %v", off, scanErr)
			}
			for i, e := range got {
				if i >= len(kvs) || !bytes.Equal(e.key, kvs[i].key) || !bytes.Equal(e.value, kvs[i].value) {
					t.Fatalf("flip at %d: scan returned wrong data", off)
				}
			}
			if err := r.Check(); !errors.Is(err, model.ErrCorruption) {
				t.Fatalf("flip at %d went unnoticed by Check: %v", off, err)
			}
			r.Close()
		}
	}
}

// reseal recomputes the checksum of the stored block at h after its payload
// was edited in place.
func reseal(b []byte, h handle) {
	binary.LittleEndian.PutUint32(b[h.offset+h.length+1:], crc32.Checksum(b[h.offset:h.offset+h.length+1], crcTable))
}

// Blocks with valid checksums but bad structure, as a writer bug would
// produce, are reported rather than trusted.
func TestCorruptStructure(t *testing.T) {
	b, _, r := corruptionFixture(t, model.CompressionNone)
	h := r.index[1].h

	t.Run("restart-count", func(t *testing.T) {
		bad := bytes.Clone(b)
		binary.LittleEndian.PutUint32(bad[h.offset+h.length-4:], 1<<30)
		reseal(bad, h)
		r, err := openBytes(bad, corruptName, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		_, err = scan(r)
		wantCorruption(t, err, h.offset)
		wantCorruption(t, r.Check(), h.offset)
	})

	t.Run("restart-offset", func(t *testing.T) {
		bad := bytes.Clone(b)
		binary.LittleEndian.PutUint32(bad[h.offset+h.length-8:], uint32(h.length))
		reseal(bad, h)
		r, err := openBytes(bad, corruptName, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		_, err = scan(r)
		wantCorruption(t, err, h.offset)
	})

	t.Run("entry-length", func(t *testing.T) {
		// The first entry's value length runs past the block.
		bad := bytes.Clone(b)
		p := bad[h.offset:]
		_, n1 := binary.Uvarint(p)
		_, n2 := binary.Uvarint(p[n1:])
		if p[n1+n2] >= 0x80 {
			t.Fatal("fixture's first value length is not one byte; the test needs a fixture whose header it can rewrite")
		}
		p[n1+n2] = 0x7f
		reseal(bad, h)
		r, err := openBytes(bad, corruptName, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := scan(r); err == nil {
			// The value may still fit; Check's strict decoding must object.
			wantCorruption(t, r.Check(), h.offset)
		} else {
			wantCorruption(t, err, h.offset)
		}
	})

	t.Run("index-key", func(t *testing.T) {
		// Lower the last byte of the first index key, which then names a
		// key that block 0 does not end with.
		bad := bytes.Clone(b)
		ih := r.footer.index
		var it blockIter
		if err := it.init(bad[ih.offset:ih.offset+ih.length], corruptName, ih.offset); err != nil {
			t.Fatal(err)
		}
		if !it.first() {
			t.Fatal(it.err)
		}
		// The first entry's key ends just before its value.
		keyEnd := ih.offset + uint64(it.next-len(it.val)) - 1
		bad[keyEnd]--
		reseal(bad, ih)
		r, err := openBytes(bad, corruptName, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		wantCorruption(t, r.Check(), r.index[0].h.offset)
	})
}
