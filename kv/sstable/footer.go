package sstable

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/cellardb/cellar/kv/model"
)

const (
	footerLen = 64
	// footerCRCLen is the part of the footer its checksum covers.
	footerCRCLen = 52

	formatVersion uint32 = 1

	// tableMagic ends every SSTable; stored little-endian it reads "cellarSS".
	tableMagic uint64 = 0x5353_7261_6c6c_6563
)

// handle locates a block. length counts the stored payload only, not the
// trailer.
type handle struct {
	offset, length uint64
}

// end is the offset just past the block's trailer.
func (h handle) end() uint64 { return h.offset + h.length + blockTrailerLen }

func (h handle) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.length)
}

// decodeHandle parses an index value, which must hold exactly one handle.
func decodeHandle(b []byte) (handle, bool) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return handle{}, false
	}
	length, m := binary.Uvarint(b[n:])
	if m <= 0 || n+m != len(b) {
		return handle{}, false
	}
	return handle{off, length}, true
}

type footer struct {
	index, filter, props handle
	version              uint32
}

func (f footer) encode() []byte {
	b := make([]byte, 0, footerLen)
	for _, h := range [...]handle{f.index, f.filter, f.props} {
		b = binary.LittleEndian.AppendUint64(b, h.offset)
		b = binary.LittleEndian.AppendUint64(b, h.length)
	}
	b = binary.LittleEndian.AppendUint32(b, f.version)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	return binary.LittleEndian.AppendUint64(b, tableMagic)
}

// decodeFooter parses the last footerLen bytes of a file whose footer starts
// at off, and checks that the blocks it names lie before it.
func decodeFooter(b []byte, file string, off uint64) (footer, error) {
	if magic := binary.LittleEndian.Uint64(b[56:]); magic != tableMagic {
		return footer{}, model.Corruptf(file, int64(off+56), "bad magic %#016x: not an sstable, or truncated", magic)
	}
	if want, got := binary.LittleEndian.Uint32(b[52:]), crc32.Checksum(b[:footerCRCLen], crcTable); want != got {
		return footer{}, model.Corruptf(file, int64(off), "footer checksum mismatch: stored %#08x, computed %#08x", want, got)
	}
	var f footer
	hs := [...]*handle{&f.index, &f.filter, &f.props}
	for i, h := range hs {
		h.offset = binary.LittleEndian.Uint64(b[16*i:])
		h.length = binary.LittleEndian.Uint64(b[16*i+8:])
	}
	f.version = binary.LittleEndian.Uint32(b[48:])
	if f.version != formatVersion {
		return footer{}, model.Corruptf(file, int64(off+48), "unsupported format version %d", f.version)
	}
	for i, h := range hs {
		if i == 1 && h.length == 0 {
			continue // no filter
		}
		// Written so that huge values cannot overflow.
		if h.offset > off || h.length > off-h.offset || off-h.offset-h.length < blockTrailerLen {
			return footer{}, model.Corruptf(file, int64(off+16*uint64(i)), "%s handle [%d, +%d) runs past the footer", [...]string{"index", "filter", "properties"}[i], h.offset, h.length)
		}
	}
	return f, nil
}
