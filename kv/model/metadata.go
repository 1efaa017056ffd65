// The METADATA table (Bigtable paper, section 5.1): the row key of each
// tablet's row, and the tablet descriptor the row holds. The client, the
// tablet servers and the master all read or write these rows.
//
// Row keys:
//
// A tablet's row is keyed by its table and its end row, so that the
// tablet holding a row is the first METADATA row at or after that row:
//
//	key  := table 0x00 tag end
//	tag  := 0x01 (end is a row: the tablet ends before it)
//	      | 0x02 (the table's last tablet; end is empty)
//
// Table names never contain 0x00, so keys of different tables never
// interleave, and within a table keys sort as their end rows, with the
// last tablet after all others. The end row is the key's last part, so it
// needs no escaping. The tablet holding row r of table t is the first key
// at or after MetaLookupKey(t, r) = t 0x00 0x01 r 0x00: the first tablet whose
// end is above r.
//
// The rows that describe METADATA's own tablets use the empty table name,
// so they sort before every user table's rows. METADATA's first tablet,
// the root tablet, covers exactly them (its end is MetaRootEnd), and is never
// split: that is what keeps the hierarchy at three levels.
//
// Descriptor cells:
//
//	range:start      the tablet's start row
//	loc:server       the id of the server that serves it ("" if none)
//	loc:addr         that server's address
//	loc:tablet       the tablet's id in that server's commit log, a uvarint
//	files:<group>    the SSTables of a locality group, as JSON
//	redo:<log>       the redo point in a server's log, a uvarint LSN
//	ts:max           the newest timestamp the tablet has held, 8 bytes BE
//	ts:seq           the newest sequence number its SSTables hold, a uvarint
//	event:           the tablet's event log: one version per event (created,
//	                 loaded, split, moved, merged), the newest 32 kept

package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

const (
	metaTagRow  = 0x01
	metaTagLast = 0x02
)

// MetaRootEnd is the end row of the root tablet: METADATA's first tablet
// covers the rows of METADATA's own tablets and nothing else.
var MetaRootEnd = []byte{0x00, metaTagLast + 1}

// MetaKey returns the METADATA row key of the tablet of table that ends
// before end (an empty end: the table's last tablet).
func MetaKey(table string, end []byte) []byte {
	k := make([]byte, 0, len(table)+2+len(end))
	k = append(k, table...)
	k = append(k, 0)
	if len(end) == 0 {
		return append(k, metaTagLast)
	}
	k = append(k, metaTagRow)
	return append(k, end...)
}

// MetaLookupKey returns the key at or after which the first METADATA row is
// that of the tablet holding row of table.
func MetaLookupKey(table string, row []byte) []byte {
	k := MetaKey(table, nil)
	k[len(k)-1] = metaTagRow
	k = append(k, row...)
	return append(k, 0)
}

// ParseMetaKey splits a METADATA row key into its table and end row.
func ParseMetaKey(key []byte) (table string, end []byte, err error) {
	i := bytes.IndexByte(key, 0)
	if i < 0 || i+1 >= len(key) {
		return "", nil, fmt.Errorf("%w: METADATA key %q has no table separator and tag", ErrCorruption, key)
	}
	switch key[i+1] {
	case metaTagLast:
		if len(key) != i+2 {
			return "", nil, fmt.Errorf("%w: METADATA key %q of a last tablet has an end row", ErrCorruption, key)
		}
		return string(key[:i]), nil, nil
	case metaTagRow:
		if len(key) == i+2 {
			return "", nil, fmt.Errorf("%w: METADATA key %q has an empty end row", ErrCorruption, key)
		}
		return string(key[:i]), key[i+2:], nil
	}
	return "", nil, fmt.Errorf("%w: METADATA key %q has unknown tag %#x", ErrCorruption, key, key[i+1])
}

// validateMetaTable checks that a table name can appear in METADATA keys.
func validateMetaTable(table string) error {
	if table == "" || strings.IndexByte(table, 0) >= 0 {
		return fmt.Errorf("%w: table name %q is empty or contains a NUL byte", ErrInvalidArgument, table)
	}
	return nil
}

// TabletFile describes one SSTable of a tablet, as METADATA lists it.
type TabletFile struct {
	Path     string `json:"path"`
	Size     uint64 `json:"size"`
	Smallest []byte `json:"smallest,omitempty"`
	Largest  []byte `json:"largest,omitempty"`
	MinSeq   uint64 `json:"min_seq"`
	MaxSeq   uint64 `json:"max_seq"`
	// Entries, Deletions and MaxTS come from the file's properties; the
	// compaction policy reads them.
	Entries   uint64 `json:"entries,omitempty"`
	Deletions uint64 `json:"deletions,omitempty"`
	MaxTS     int64  `json:"max_ts,omitempty"`
}

// TabletDescriptor is what a METADATA row says of a tablet.
type TabletDescriptor struct {
	Table      string
	Start, End []byte
	// Server and Addr name the server that serves the tablet, if any.
	Server, Addr string
	// Files maps a locality group to its SSTables, newest first.
	Files map[string][]TabletFile
	// Redo maps a log (a server id) to the LSN from which its records of
	// this tablet are not yet in Files.
	Redo map[string]uint64
	// MaxTS is the newest timestamp the tablet has held, in µs.
	MaxTS int64
	// LogTablet is the tablet's id in the commit log named in Redo: the
	// records of this tablet in that log carry it.
	LogTablet uint64
	// FlushedSeq is the newest sequence number the tablet's SSTables hold;
	// a server that loads the tablet numbers new writes above it.
	FlushedSeq uint64
	// Event, if set, is appended to the row's event log by Mutation.
	Event string
}

// Families of the METADATA table.
const (
	MetaFamilyRange = "range"
	MetaFamilyLoc   = "loc"
	MetaFamilyFiles = "files"
	MetaFamilyRedo  = "redo"
	MetaFamilyTS    = "ts"
	MetaFamilyEvent = "event"
)

// metaEventsKept is how many events a METADATA row keeps.
const metaEventsKept = 32

// MetaSchema is the METADATA table's schema.
func MetaSchema() Schema {
	var s Schema
	for _, f := range []string{MetaFamilyRange, MetaFamilyLoc, MetaFamilyFiles, MetaFamilyRedo, MetaFamilyTS} {
		s.Families = append(s.Families, Family{Name: f, GC: MaxVersionsRule(1)})
	}
	s.Families = append(s.Families, Family{Name: MetaFamilyEvent, GC: MaxVersionsRule(metaEventsKept)})
	return s
}

// Mutation returns the row mutation that writes d as its tablet's row,
// replacing what the row held except its event log, with cells at
// timestamp ts.
func (d *TabletDescriptor) Mutation(ts int64) (*RowMutation, error) {
	if d.Table != "" {
		if err := validateMetaTable(d.Table); err != nil {
			return nil, err
		}
	}
	m := &RowMutation{Row: MetaKey(d.Table, d.End)}
	for _, f := range []string{MetaFamilyRange, MetaFamilyLoc, MetaFamilyFiles, MetaFamilyRedo, MetaFamilyTS} {
		m.Mutations = append(m.Mutations, DeleteFamily(f))
	}
	m.Mutations = append(m.Mutations,
		SetCell(MetaFamilyRange, []byte("start"), ts, d.Start),
		SetCell(MetaFamilyLoc, []byte("server"), ts, []byte(d.Server)),
		SetCell(MetaFamilyLoc, []byte("addr"), ts, []byte(d.Addr)),
		SetCell(MetaFamilyLoc, []byte("tablet"), ts, binary.AppendUvarint(nil, d.LogTablet)),
		SetCell(MetaFamilyTS, []byte("seq"), ts, binary.AppendUvarint(nil, d.FlushedSeq)),
	)
	groups := make([]string, 0, len(d.Files))
	for g := range d.Files {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		b, err := json.Marshal(d.Files[g])
		if err != nil {
			return nil, err
		}
		m.Mutations = append(m.Mutations, SetCell(MetaFamilyFiles, []byte(g), ts, b))
	}
	logs := make([]string, 0, len(d.Redo))
	for l := range d.Redo {
		logs = append(logs, l)
	}
	sort.Strings(logs)
	for _, l := range logs {
		m.Mutations = append(m.Mutations, SetCell(MetaFamilyRedo, []byte(l), ts, binary.AppendUvarint(nil, d.Redo[l])))
	}
	var max [8]byte
	binary.BigEndian.PutUint64(max[:], uint64(d.MaxTS))
	m.Mutations = append(m.Mutations, SetCell(MetaFamilyTS, []byte("max"), ts, max[:]))
	if d.Event != "" {
		m.Mutations = append(m.Mutations, SetCell(MetaFamilyEvent, nil, ts, []byte(d.Event)))
	}
	return m, nil
}

// ParseTabletDescriptor reads a tablet descriptor from its METADATA row (newest version
// of each cell first, as reads return them).
func ParseTabletDescriptor(row Row) (*TabletDescriptor, error) {
	table, end, err := ParseMetaKey(row.Key)
	if err != nil {
		return nil, err
	}
	d := &TabletDescriptor{Table: table, End: end, Files: map[string][]TabletFile{}, Redo: map[string]uint64{}}
	seen := map[string]bool{}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: METADATA row %q: %s", ErrCorruption, row.Key, fmt.Sprintf(format, args...))
	}
	for _, c := range row.Cells {
		col := c.Family + ":" + string(c.Qualifier)
		if seen[col] {
			continue // an older version
		}
		seen[col] = true
		switch {
		case col == "range:start":
			d.Start = c.Value
		case col == "loc:server":
			d.Server = string(c.Value)
		case col == "loc:addr":
			d.Addr = string(c.Value)
		case col == "loc:tablet", col == "ts:seq":
			v, n := binary.Uvarint(c.Value)
			if n <= 0 || n != len(c.Value) {
				return nil, bad("%s is not a uvarint", col)
			}
			if col == "loc:tablet" {
				d.LogTablet = v
			} else {
				d.FlushedSeq = v
			}
		case c.Family == MetaFamilyFiles:
			var fs []TabletFile
			if err := json.Unmarshal(c.Value, &fs); err != nil {
				return nil, bad("files of group %q: %v", c.Qualifier, err)
			}
			d.Files[string(c.Qualifier)] = fs
		case c.Family == MetaFamilyRedo:
			lsn, n := binary.Uvarint(c.Value)
			if n <= 0 || n != len(c.Value) {
				return nil, bad("redo point of log %q is not a uvarint", c.Qualifier)
			}
			d.Redo[string(c.Qualifier)] = lsn
		case col == "ts:max":
			if len(c.Value) != 8 {
				return nil, bad("ts:max has %d bytes, not 8", len(c.Value))
			}
			d.MaxTS = int64(binary.BigEndian.Uint64(c.Value))
		}
	}
	if !seen["range:start"] {
		return nil, bad("no range:start cell")
	}
	if len(d.End) > 0 && bytes.Compare(d.Start, d.End) >= 0 {
		return nil, bad("start %q is not below end %q", d.Start, d.End)
	}
	return d, nil
}

// The root tablet's descriptor is not a METADATA row: it is the root file
// in the lock service, as JSON. Before descriptors were recorded there, the
// file held the bare address; ParseRootFile still reads that.

// RootFileContents encodes the root tablet's descriptor for the root file.
func RootFileContents(d *TabletDescriptor) ([]byte, error) { return json.Marshal(d) }

// ParseRootFile decodes the root file.
func ParseRootFile(data []byte) (*TabletDescriptor, error) {
	if len(data) > 0 && data[0] != '{' {
		return &TabletDescriptor{Addr: string(data)}, nil
	}
	d := &TabletDescriptor{}
	if err := json.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("%w: root file: %v", ErrCorruption, err)
	}
	return d, nil
}
