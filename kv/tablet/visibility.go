package tablet

import (
	"bytes"

	"github.com/cellardb/cellar/kv/model"
)

type colMarker struct {
	start, top int64
	seq        uint64
}

// visibility applies cellar's deletion rules to the entries of one row as
// they pass in internal key order. A marker sorts before every entry it may
// hide (see the model package), so one pass suffices: row markers, then per
// family the family marker, then per column the column markers interleaved
// with the cells by timestamp. A marker hides only entries with a smaller
// sequence number; of several writes of one (column, timestamp) only the
// newest counts.
type visibility struct {
	si      *schemaInfo
	row     []byte
	col     []byte
	fam     []byte
	famInfo *familyInfo // nil for an undeclared family
	// the family before fam, and its info
	prevFam  []byte
	prevInfo *familyInfo
	rowDel   uint64
	famDel   uint64
	markers  []colMarker
	lastTS   int64
	haveTS   bool
	versions int // live versions of the column so far
}

// startRow resets the state for the row whose encoded prefix is rp.
// The family and its info carry over from the previous row: rows of a
// table mostly hold the same families, and a family marker, the only state
// of a family, is reset.
func (v *visibility) startRow(rp []byte) {
	v.row = append(v.row[:0], rp...)
	v.col = v.col[:0]
	v.rowDel, v.famDel = 0, 0
	v.markers = v.markers[:0]
}

// step takes in one entry of the current row, whose trailer the caller
// decoded. For a cell it reports
// whether the cell is live: neither hidden by a marker nor an older write
// of a version already seen. familyChanged reports that the entry starts a
// new family, whose info is in v.famInfo.
func (v *visibility) step(key, value []byte, ts int64, seq uint64, kind model.MutationKind) (live, familyChanged bool) {
	col := model.ColumnPrefix(key)
	if !bytes.Equal(col, v.col) {
		v.col = append(v.col[:0], col...)
		v.markers = v.markers[:0]
		v.haveTS, v.versions = false, 0
		if fam := model.FamilyOf(key, len(v.row)); !bytes.Equal(fam, v.fam) {
			// Rows mostly alternate between the same two families (a
			// row's marker and its data), so the one before is kept:
			// no schema lookup then.
			v.fam, v.prevFam = v.prevFam, v.fam
			v.famInfo, v.prevInfo = v.prevInfo, v.famInfo
			if !bytes.Equal(fam, v.fam) {
				v.fam = append(v.fam[:0], fam...)
				v.famInfo = v.si.family(fam)
			}
			v.famDel = 0
			familyChanged = true
		}
	}
	switch kind {
	case model.KindDeleteRow:
		v.rowDel = max(v.rowDel, seq)
	case model.KindDeleteFamily:
		v.famDel = max(v.famDel, seq)
	case model.KindDeleteColumn:
		if start, top, ok := model.ColumnMarkerRange(ts, value); ok {
			v.markers = append(v.markers, colMarker{start: start, top: top, seq: seq})
		}
	case model.KindSetCell:
		if v.haveTS && ts == v.lastTS {
			return false, familyChanged
		}
		v.haveTS, v.lastTS = true, ts
		if seq < v.rowDel || seq < v.famDel {
			return false, familyChanged
		}
		for _, m := range v.markers {
			if seq < m.seq && ts >= m.start && ts <= m.top {
				return false, familyChanged
			}
		}
		return true, familyChanged
	}
	return false, familyChanged
}
