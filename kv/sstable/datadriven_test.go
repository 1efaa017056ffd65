package sstable

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the scripts in testdata/. Commands:
//
//	build [block-size=N] [restart-interval=N] [compression=none|snappy] [bloom] [expected-keys=N]
//	  one entry per line: "row fam:qual ts seq kind [value]" (kind is set,
//	  del-col, del-fam or del-row; ts may be "max"; "" is an empty row) or
//	  "raw key [value]". Prints the data blocks.
//	iter
//	  one operation per line: first, last, next, prev, seek-ge ARGS,
//	  seek-lt ARGS, where ARGS is a raw key or "row [fam:qual [ts]]".
//	  Every operation runs on three readers (plain, cached, in-memory)
//	  that must agree.
//	props | check | layout [values]
//	may-contain: lines "row ROW" or "column ROW FAM:QUAL"
func TestDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		if st, err := os.Stat(path); err != nil || st.IsDir() {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			var s ddState
			defer s.close()
			datadriven.RunTest(t, path, s.run)
		})
	}
}

type ddState struct {
	readers []*Reader // plain, cached, in-memory
}

func (s *ddState) close() {
	for _, r := range s.readers {
		r.Close()
	}
	s.readers = nil
}

func (s *ddState) run(t *testing.T, td *datadriven.TestData) string {
	if td.Cmd != "build" && len(s.readers) == 0 {
		td.Fatalf(t, "%s needs a table: run build first", td.Cmd)
	}
	switch td.Cmd {
	case "build":
		return s.build(t, td)
	case "iter":
		return s.iter(t, td)
	case "props":
		return s.readers[0].Properties().String()
	case "check":
		if err := s.readers[0].Check(); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "layout":
		var b strings.Builder
		if err := s.readers[0].Dump(&b, td.HasArg("values")); err != nil {
			return "error: " + err.Error()
		}
		return b.String()
	case "may-contain":
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			var ok bool
			switch {
			case len(f) == 2 && f[0] == "row":
				ok = s.readers[0].MayContainRow(model.AppendRowPrefix(nil, parseBytes(t, f[1])))
			case len(f) == 3 && f[0] == "column":
				fam, qual, _ := strings.Cut(f[2], ":")
				ok = s.readers[0].MayContainColumn(model.AppendColumnPrefix(nil, parseBytes(t, f[1]), fam, []byte(qual)))
			default:
				td.Fatalf(t, "bad may-contain line %q", line)
			}
			fmt.Fprintf(&b, "%s: %t\n", line, ok)
		}
		return b.String()
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

func (s *ddState) build(t *testing.T, td *datadriven.TestData) string {
	s.close()
	var opts WriterOptions
	td.MaybeScanArgs(t, "block-size", &opts.BlockSize)
	td.MaybeScanArgs(t, "restart-interval", &opts.RestartInterval)
	td.MaybeScanArgs(t, "expected-keys", &opts.ExpectedKeys)
	opts.BloomFilter = td.HasArg("bloom")
	if td.HasArg("compression") {
		var c string
		td.ScanArgs(t, "compression", &c)
		switch c {
		case "none":
			opts.Compression = model.CompressionNone
		case "snappy":
			opts.Compression = model.CompressionSnappy
		default:
			td.Fatalf(t, "unknown compression %q", c)
		}
	}
	fs := dfs.NewMem()
	f, err := fs.Create("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, "t.sst", opts)
	for _, line := range strings.Split(td.Input, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v := parseEntry(t, td, line)
		if err := w.Add(k, v); err != nil {
			f.Close()
			return "error: " + err.Error()
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, ro := range []ReaderOptions{{}, {Cache: newMapCache(), CacheID: 1}, {InMemory: true}} {
		s.readers = append(s.readers, openTable(t, fs, "t.sst", ro))
	}
	var b strings.Builder
	for i, bi := range s.readers[0].Blocks() {
		fmt.Fprintf(&b, "block %d: offset %d, length %d, last %s\n", i, bi.Offset, bi.Length, formatKey(bi.LastKey))
	}
	if b.Len() == 0 {
		return "empty table"
	}
	return b.String()
}

func (s *ddState) iter(t *testing.T, td *datadriven.TestData) string {
	var outs []string
	for ri, r := range s.readers {
		it := r.NewIter()
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			var ok bool
			switch f[0] {
			case "first":
				ok = it.First()
			case "last":
				ok = it.Last()
			case "next":
				ok = it.Next()
			case "prev":
				ok = it.Prev()
			case "seek-ge":
				ok = it.SeekGE(seekKey(t, f[1:]))
			case "seek-lt":
				ok = it.SeekLT(seekKey(t, f[1:]))
			default:
				td.Fatalf(t, "unknown iter op %q", line)
			}
			switch {
			case it.Error() != nil:
				fmt.Fprintf(&b, "error: %v\n", it.Error())
			case ok != it.Valid():
				t.Fatalf("%s returned %t but Valid() is %t", line, ok, it.Valid())
			case ok:
				fmt.Fprintf(&b, "%s = %s\n", formatKey(it.Key()), formatValue(it.Value()))
			default:
				b.WriteString(".\n")
			}
		}
		if err := it.Close(); err != nil {
			fmt.Fprintf(&b, "close: %v\n", err)
		}
		outs = append(outs, b.String())
		if ri > 0 && outs[ri] != outs[0] {
			t.Fatalf("reader %d disagrees with reader 0:\n%s\nvs\n%s", ri, outs[ri], outs[0])
		}
	}
	return outs[0]
}

// parseEntry turns a build line into a key and value.
func parseEntry(t *testing.T, td *datadriven.TestData, line string) (key, value []byte) {
	f := strings.Fields(line)
	if f[0] == "raw" {
		if len(f) < 2 || len(f) > 3 {
			td.Fatalf(t, "bad raw entry %q", line)
		}
		key = parseBytes(t, f[1])
		if len(f) == 3 {
			value = parseBytes(t, f[2])
		}
		return key, value
	}
	if len(f) < 5 || len(f) > 6 {
		td.Fatalf(t, "bad entry %q", line)
	}
	fam, qual, _ := strings.Cut(f[1], ":")
	seq, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil {
		td.Fatalf(t, "bad seq in %q", line)
	}
	var kind model.MutationKind
	switch f[4] {
	case "set":
		kind = model.KindSetCell
	case "del-col":
		kind = model.KindDeleteColumn
	case "del-fam":
		kind = model.KindDeleteFamily
	case "del-row":
		kind = model.KindDeleteRow
	default:
		td.Fatalf(t, "bad kind in %q", line)
	}
	key = model.AppendKey(nil, parseBytes(t, f[0]), fam, []byte(qual), parseTS(t, f[2]), seq, kind)
	if len(f) == 6 {
		value = parseBytes(t, f[5])
	}
	return key, value
}

// seekKey builds a seek target: a raw key ("raw KEY"), a row's prefix, a
// column's prefix, or the position just before the column's versions at or
// below ts.
func seekKey(t *testing.T, f []string) []byte {
	if len(f) == 2 && f[0] == "raw" {
		return parseBytes(t, f[1])
	}
	row := parseBytes(t, f[0])
	if len(f) == 1 {
		return model.AppendRowPrefix(nil, row)
	}
	fam, qual, _ := strings.Cut(f[1], ":")
	k := model.AppendColumnPrefix(nil, row, fam, []byte(qual))
	if len(f) == 3 {
		k = model.AppendTrailer(k, parseTS(t, f[2]), model.MaxSeq, 0xff)
	}
	return k
}

func parseTS(t *testing.T, s string) int64 {
	if s == "max" {
		return math.MaxInt64
	}
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad timestamp %q", s)
	}
	return ts
}

// parseBytes accepts a bare word, a Go-quoted string, or N*c for c
// repeated N times.
func parseBytes(t *testing.T, s string) []byte {
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			t.Fatalf("bad quoted string %s", s)
		}
		return []byte(u)
	}
	if n, c, ok := strings.Cut(s, "*"); ok {
		if k, err := strconv.Atoi(n); err == nil {
			return []byte(strings.Repeat(c, k))
		}
	}
	return []byte(s)
}
