package model

import (
	"bytes"
	"math/rand"
	"sort"
	"testing"
)

type tuple struct {
	row, qual []byte
	fam       string
	ts        int64
	seq       uint64
	kind      MutationKind
}

func (a tuple) less(b tuple) bool {
	if c := bytes.Compare(a.row, b.row); c != 0 {
		return c < 0
	}
	if a.fam != b.fam {
		return a.fam < b.fam
	}
	if c := bytes.Compare(a.qual, b.qual); c != 0 {
		return c < 0
	}
	if a.ts != b.ts {
		return a.ts > b.ts
	}
	if a.seq != b.seq {
		return a.seq > b.seq
	}
	return a.kind > b.kind
}

func randBytes(r *rand.Rand) []byte {
	alphabet := []byte{0, 1, 2, 0xFF, 'a', 'b'}
	b := make([]byte, r.Intn(4))
	for i := range b {
		b[i] = alphabet[r.Intn(len(alphabet))]
	}
	return b
}

func TestKeyOrderMatchesTupleOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	fams := []string{"a", "ab", "b"}
	var ts []tuple
	for i := 0; i < 3000; i++ {
		ts = append(ts, tuple{
			row: randBytes(r), qual: randBytes(r), fam: fams[r.Intn(3)],
			ts: r.Int63n(4), seq: uint64(r.Intn(4)), kind: MutationKind(1 + r.Intn(4)),
		})
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].less(ts[j]) })
	for i := 1; i < len(ts); i++ {
		a, b := ts[i-1], ts[i]
		ka := AppendKey(nil, a.row, a.fam, a.qual, a.ts, a.seq, a.kind)
		kb := AppendKey(nil, b.row, b.fam, b.qual, b.ts, b.seq, b.kind)
		c := bytes.Compare(ka, kb)
		if a.less(b) && c >= 0 {
			t.Fatalf("order broken: %+v < %+v but %x >= %x", a, b, ka, kb)
		}
		if !a.less(b) && !b.less(a) && c != 0 {
			t.Fatalf("equal tuples encode differently")
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		row, qual := randBytes(r), randBytes(r)
		ts, seq := r.Int63(), uint64(r.Int63n(MaxSeq))
		k := AppendKey(nil, row, "fam", qual, ts, seq, KindSetCell)
		d, err := DecodeKey(k)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.Row, row) || string(d.Family) != "fam" || !bytes.Equal(d.Qualifier, qual) ||
			d.Timestamp != ts || d.Seq != seq || d.Kind != KindSetCell {
			t.Fatalf("round trip: got %+v", d)
		}
		rp := RowPrefix(k)
		if !bytes.Equal(RowOf(rp), row) {
			t.Fatalf("RowOf(RowPrefix) = %x, want %x", RowOf(rp), row)
		}
		if got := QualifierOf(k, len(rp), 3); !bytes.Equal(got, qual) {
			t.Fatalf("QualifierOf = %x, want %x", got, qual)
		}
		lim := RowLimit(AppendRowPrefix(nil, row))
		if bytes.Compare(k, lim) >= 0 {
			t.Fatalf("key %x not below its row limit %x", k, lim)
		}
	}
}

func TestMarkersSortBeforeCoveredCells(t *testing.T) {
	row := []byte("r")
	cell := AppendKey(nil, row, "f", nil, MaxTimestamp, 1, KindSetCell)
	fam := AppendFamilyMarker(nil, row, "f", 0)
	rowm := AppendRowMarker(nil, row, 0)
	if !(bytes.Compare(rowm, fam) < 0 && bytes.Compare(fam, cell) < 0) {
		t.Fatal("markers must sort before the cells they cover, whatever their sequence numbers")
	}
	col := AppendColumnMarker(nil, row, "f", []byte("q"), TimeRange{Start: 10, End: 20}, 5)
	if ts, _, _ := Trailer(col); ts != 19 {
		t.Fatalf("column marker ts = %d, want 19", ts)
	}
}

func TestDecodeKeyRejectsGarbage(t *testing.T) {
	for _, k := range [][]byte{nil, []byte("short"), bytes.Repeat([]byte{0}, 40), bytes.Repeat([]byte{0xFF}, 40)} {
		if _, err := DecodeKey(k); err == nil {
			t.Fatalf("DecodeKey(%x) accepted garbage", k)
		}
	}
}
