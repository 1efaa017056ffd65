package model

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestMetadataDataDriven runs testdata/metadata-keys. Commands:
//
//	key table=T [end=E]       prints the key, quoted
//	parse                     one quoted key per line: prints table and end, or the error
//	locate                    lines "tablet T [END]" describe tablets; lines
//	                          "row T R" print the tablet that holds row R of T
func TestMetadataDataDriven(t *testing.T) {
	datadriven.RunTest(t, "testdata/metadata-keys", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "key":
			var table, end string
			d.ScanArgs(t, "table", &table)
			if d.HasArg("end") {
				d.ScanArgs(t, "end", &end)
			}
			return fmt.Sprintf("%q\n", MetaKey(table, []byte(end)))
		case "parse":
			var out strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				var key string
				if _, err := fmt.Sscanf(line, "%q", &key); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				table, end, err := ParseMetaKey([]byte(key))
				if err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				} else {
					fmt.Fprintf(&out, "table=%q end=%q\n", table, end)
				}
			}
			return out.String()
		case "locate":
			var keys [][]byte
			var out strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				f := strings.Fields(line)
				switch {
				case f[0] == "tablet" && len(f) == 2:
					keys = append(keys, MetaKey(f[1], nil))
				case f[0] == "tablet" && len(f) == 3:
					keys = append(keys, MetaKey(f[1], []byte(f[2])))
				case f[0] == "row" && len(f) == 3:
					sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
					table, end := "none", ""
					if k := firstMetaAtOrAfter(keys, MetaLookupKey(f[1], []byte(f[2]))); k != nil {
						tb, e, _ := ParseMetaKey(k)
						table, end = tb, string(e)
					}
					if table != f[1] {
						fmt.Fprintf(&out, "%s %s -> no tablet of %s (next: %s)\n", f[1], f[2], f[1], table)
					} else {
						fmt.Fprintf(&out, "%s %s -> tablet ending %q\n", f[1], f[2], end)
					}
				default:
					t.Fatalf("bad line %q", line)
				}
			}
			return out.String()
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

func firstMetaAtOrAfter(keys [][]byte, k []byte) []byte {
	i := sort.Search(len(keys), func(i int) bool { return bytes.Compare(keys[i], k) >= 0 })
	if i == len(keys) {
		return nil
	}
	return keys[i]
}

// TestMetaLookupMatchesRanges checks the lookup rule against tablet ranges on
// random tables, split points and rows, bytes 0x00 and 0xff included.
func TestMetaLookupMatchesRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randBytes := func() []byte {
		b := make([]byte, r.IntN(4))
		for i := range b {
			b[i] = []byte{0x00, 0x01, 'a', 'b', 0xfe, 0xff}[r.IntN(6)]
		}
		return b
	}
	for iter := 0; iter < 200; iter++ {
		type tablet struct {
			table      string
			start, end []byte
		}
		var tablets []tablet
		var keys [][]byte
		tables := []string{"a", "ab", "b", "\xff"}
		for _, tb := range tables {
			splits := map[string]bool{}
			for i := 0; i < r.IntN(5); i++ {
				if s := randBytes(); len(s) > 0 {
					splits[string(s)] = true
				}
			}
			var ends []string
			for s := range splits {
				ends = append(ends, s)
			}
			sort.Strings(ends)
			start := []byte{}
			for _, e := range append(ends, "") {
				tablets = append(tablets, tablet{tb, start, []byte(e)})
				keys = append(keys, MetaKey(tb, []byte(e)))
				start = []byte(e)
			}
		}
		sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
		for probe := 0; probe < 50; probe++ {
			tb, row := tables[r.IntN(len(tables))], randBytes()
			var want tablet
			for _, x := range tablets {
				if x.table == tb && (RowRange{Start: x.start, End: x.end}).Contains(row) {
					want = x
				}
			}
			gotTable, gotEnd, err := ParseMetaKey(firstMetaAtOrAfter(keys, MetaLookupKey(tb, row)))
			if err != nil || gotTable != want.table || !bytes.Equal(gotEnd, want.end) {
				t.Fatalf("row %q of %q: found %q/%q (%v), want the tablet ending %q", row, tb, gotTable, gotEnd, err, want.end)
			}
		}
	}
}

// rowOf applies a descriptor's mutation to an empty row, newest first.
func metaRowOf(t *testing.T, m *RowMutation) Row {
	row := Row{Key: m.Row}
	for _, mu := range m.Mutations {
		if mu.Kind == KindSetCell {
			row.Cells = append(row.Cells, Cell{Family: mu.Family, Qualifier: mu.Qualifier, Timestamp: mu.Timestamp, Value: mu.Value})
		}
	}
	return row
}

func TestTabletDescriptorRoundTrip(t *testing.T) {
	for _, d := range []*TabletDescriptor{
		{Table: "users", Start: []byte("m"), End: nil, Server: "ts1", Addr: "127.0.0.1:9100",
			Files: map[string][]TabletFile{"default": {{Path: "tables/users/7.sst", Size: 100, Smallest: []byte("m"), Largest: []byte("z"), MinSeq: 1, MaxSeq: 9}}},
			Redo:  map[string]uint64{"ts1": 42, "ts0": 7}, MaxTS: 1700000000000000, LogTablet: 12, FlushedSeq: 99},
		{Table: "", Start: nil, End: []byte("users\x00\x01m"), Files: map[string][]TabletFile{}, Redo: map[string]uint64{}},
	} {
		m, err := d.Mutation(5)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseTabletDescriptor(metaRowOf(t, m))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Start) == 0 && len(d.Start) == 0 {
			got.Start = d.Start
		}
		if !reflect.DeepEqual(got, d) {
			t.Fatalf("round trip:\n%+v\n%+v", got, d)
		}
	}
}

func TestParseTabletDescriptorRejectsDamage(t *testing.T) {
	good, _ := (&TabletDescriptor{Table: "t", Start: []byte("a"), End: []byte("b")}).Mutation(1)
	for name, damage := range map[string]func(*Row){
		"bad key":       func(r *Row) { r.Key = []byte("no separator") },
		"no start":      func(r *Row) { r.Cells = r.Cells[1:] },
		"short ts":      func(r *Row) { r.Cells[len(r.Cells)-1].Value = []byte{1} },
		"start too big": func(r *Row) { r.Cells[0].Value = []byte("c") },
	} {
		row := metaRowOf(t, good)
		damage(&row)
		if _, err := ParseTabletDescriptor(row); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := (&TabletDescriptor{Table: "a\x00b"}).Mutation(1); err == nil {
		t.Error("a table name with NUL accepted")
	}
}
