package sstable

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/cellardb/cellar/kv/model"
)

const (
	// dumpValueLen is how much of a value Dump prints.
	dumpValueLen = 48
	// formatKeyLen bounds the bytes of a key (or of its row or qualifier)
	// that formatKey renders, so errors stay readable.
	formatKeyLen = 128
)

// Dump writes a human-readable description of the table: footer,
// properties, index, and every entry of every data block, with values when
// values is true. Blocks come from memory or the file, never the cache.
func (r *Reader) Dump(w io.Writer, values bool) error {
	bw := bufio.NewWriter(w)
	ft := r.footer
	fmt.Fprintf(bw, "sstable %s: %d bytes, format version %d\n", r.name, r.size, ft.version)
	fmt.Fprintf(bw, "footer at %d:\n", r.size-footerLen)
	fmt.Fprintf(bw, "  index:      offset %d, length %d\n", ft.index.offset, ft.index.length)
	if ft.filter.length > 0 {
		fmt.Fprintf(bw, "  filter:     offset %d, length %d\n", ft.filter.offset, ft.filter.length)
	} else {
		fmt.Fprintf(bw, "  filter:     none\n")
	}
	fmt.Fprintf(bw, "  properties: offset %d, length %d\n", ft.props.offset, ft.props.length)
	fmt.Fprintf(bw, "properties:\n")
	writeIndented(bw, r.props.String())
	fmt.Fprintf(bw, "index: %d data blocks\n", len(r.index))
	for i, e := range r.index {
		fmt.Fprintf(bw, "  %d: offset %d, length %d, last %s\n", i, e.h.offset, e.h.length, formatKey(e.lastKey))
	}
	var it blockIter
	for bi, e := range r.index {
		data, _, err := r.dataBlock(bi, nil, false, nil)
		if err == nil {
			err = it.init(data, r.name, e.h.offset)
		}
		if err != nil {
			bw.Flush()
			return err
		}
		fmt.Fprintf(bw, "data block %d: offset %d, length %d, decoded %d, restarts %d\n",
			bi, e.h.offset, e.h.length, len(data), it.numRestarts)
		for ok := it.first(); ok; ok = it.nextEntry() {
			if values {
				fmt.Fprintf(bw, "  %s = %s\n", formatKey(it.key), formatValue(it.val))
			} else {
				fmt.Fprintf(bw, "  %s\n", formatKey(it.key))
			}
		}
		if it.err != nil {
			bw.Flush()
			return it.err
		}
	}
	return bw.Flush()
}

func writeIndented(w io.Writer, s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			fmt.Fprintf(w, "  %s\n", s[start:i])
			start = i + 1
		}
	}
}

// formatKey renders an internal key as "row family:qualifier ts=.. seq=..
// kind", and any other key as a quoted string if it is printable ASCII, else
// as hex.
func formatKey(k []byte) string {
	if k == nil {
		return "<none>"
	}
	d, err := model.DecodeKey(k)
	if err != nil {
		k, more := clip(k)
		if isPrintable(k) {
			return strconv.Quote(string(k)) + more
		}
		return "0x" + hex.EncodeToString(k) + more
	}
	ts := strconv.FormatInt(d.Timestamp, 10)
	if d.Timestamp == math.MaxInt64 {
		ts = "max"
	}
	row := formatBytes(d.Row)
	if row == "" {
		row = `""`
	}
	return fmt.Sprintf("%s %s:%s ts=%s seq=%d %s", row, d.Family, formatBytes(d.Qualifier), ts, d.Seq, d.Kind)
}

// formatBytes leaves plain words alone and quotes anything else.
func formatBytes(b []byte) string {
	b, more := clip(b)
	if len(b) > 0 && isPrintable(b) {
		for _, c := range b {
			if c == ' ' || c == '"' || c == ':' {
				return strconv.Quote(string(b)) + more
			}
		}
		return string(b) + more
	}
	if len(b) == 0 {
		return ""
	}
	return strconv.Quote(string(b)) + more
}

// clip cuts b to formatKeyLen bytes and says how long it was.
func clip(b []byte) ([]byte, string) {
	if len(b) <= formatKeyLen {
		return b, ""
	}
	return b[:formatKeyLen], fmt.Sprintf("...(%d bytes)", len(b))
}

func formatValue(v []byte) string {
	if len(v) <= dumpValueLen {
		return strconv.Quote(string(v))
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(string(v[:dumpValueLen])), len(v))
}

func isPrintable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
