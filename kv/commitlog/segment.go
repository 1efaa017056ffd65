package commitlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/cellardb/cellar/kv/dfs"
)

const (
	segmentMagic   = 0x676f4c72616c6c63 // "cllarLog" little-endian
	segmentVersion = 1
	headerLen      = 48
	segmentSuffix  = ".log"
)

// segmentHeader starts every segment file.
type segmentHeader struct {
	Number       uint64
	FirstLSN     uint64
	PrevSegment  uint64 // 0: no predecessor
	PrevValidLen int64
}

func (h segmentHeader) encode() []byte {
	b := make([]byte, headerLen)
	binary.LittleEndian.PutUint64(b[0:], segmentMagic)
	binary.LittleEndian.PutUint32(b[8:], segmentVersion)
	binary.LittleEndian.PutUint64(b[12:], h.Number)
	binary.LittleEndian.PutUint64(b[20:], h.FirstLSN)
	binary.LittleEndian.PutUint64(b[28:], h.PrevSegment)
	binary.LittleEndian.PutUint64(b[36:], uint64(h.PrevValidLen))
	binary.LittleEndian.PutUint32(b[44:], crc32.Checksum(b[:44], crcTable))
	return b
}

func decodeHeader(b []byte) (segmentHeader, error) {
	if len(b) < headerLen {
		return segmentHeader{}, fmt.Errorf("header of %d bytes, want %d", len(b), headerLen)
	}
	if binary.LittleEndian.Uint64(b) != segmentMagic {
		return segmentHeader{}, fmt.Errorf("bad magic %x", b[:8])
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != segmentVersion {
		return segmentHeader{}, fmt.Errorf("unsupported version %d", v)
	}
	if crc32.Checksum(b[:44], crcTable) != binary.LittleEndian.Uint32(b[44:]) {
		return segmentHeader{}, fmt.Errorf("header checksum mismatch")
	}
	h := segmentHeader{
		Number:       binary.LittleEndian.Uint64(b[12:]),
		FirstLSN:     binary.LittleEndian.Uint64(b[20:]),
		PrevSegment:  binary.LittleEndian.Uint64(b[28:]),
		PrevValidLen: int64(binary.LittleEndian.Uint64(b[36:])),
	}
	if h.PrevValidLen < 0 || (h.PrevSegment != 0 && h.PrevValidLen < headerLen) || (h.PrevSegment >= h.Number) {
		return segmentHeader{}, fmt.Errorf("bad predecessor %d/%d", h.PrevSegment, h.PrevValidLen)
	}
	return h, nil
}

// SegmentName returns the file name of segment n.
func SegmentName(n uint64) string { return fmt.Sprintf("%016x%s", n, segmentSuffix) }

// parseSegmentName returns the number of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	if !strings.HasSuffix(name, segmentSuffix) || len(name) != 16+len(segmentSuffix) {
		return 0, false
	}
	n, err := strconv.ParseUint(name[:16], 16, 64)
	return n, err == nil && n > 0
}

// listSegments returns the segment numbers in dir, ascending.
func listSegments(fs dfs.FS, dir string) ([]uint64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, name := range names {
		if n, ok := parseSegmentName(name); ok {
			out = append(out, n)
		}
	}
	return out, nil
}
