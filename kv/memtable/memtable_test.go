package memtable

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/cellardb/cellar/kv/model"
)

type entry struct{ key, value []byte }

// refList is the reference model: a sorted slice of entries.
type refList []entry

func (r refList) search(key []byte) (int, bool) {
	i := sort.Search(len(r), func(i int) bool { return bytes.Compare(r[i].key, key) >= 0 })
	return i, i < len(r) && bytes.Equal(r[i].key, key)
}

func (r *refList) insert(e entry) {
	i, found := r.search(e.key)
	if found {
		return // callers insert only keys the memtable accepted, which are unique
	}
	*r = append(*r, entry{})
	copy((*r)[i+1:], (*r)[i:])
	(*r)[i] = e
}

func (r refList) visible(snap uint64) refList {
	var out refList
	for _, e := range r {
		if _, seq, _ := model.Trailer(e.key); seq <= snap {
			out = append(out, e)
		}
	}
	return out
}

// randKey draws from a small key space so that duplicates and shared
// prefixes are common. Rows and qualifiers may hold zero bytes.
func randKey(r *rand.Rand, row []byte, seq uint64) []byte {
	quals := [][]byte{nil, []byte("q"), []byte("q\x00"), []byte("qq")}
	fams := []string{"a", "b"}
	return model.AppendKey(nil, row, fams[r.Intn(len(fams))], quals[r.Intn(len(quals))],
		r.Int63n(4), seq, model.MutationKind(1+r.Intn(4)))
}

func randRow(r *rand.Rand) []byte {
	rows := [][]byte{nil, []byte("a"), []byte("a\x00"), []byte("ab"), []byte("b"), []byte("row1"), []byte("row2"), {0xff}}
	return rows[r.Intn(len(rows))]
}

func randValue(r *rand.Rand) []byte {
	if r.Intn(5) == 0 {
		return nil
	}
	v := make([]byte, r.Intn(40))
	r.Read(v)
	return v
}

// expectAt checks that it is on want[idx], or invalid if idx is out of range.
// It calls t.Helper only on failure, as Helper is costly on this hot path.
func expectAt(t *testing.T, it *Iter, ok bool, want refList, idx int, format string, args ...any) {
	if idx < 0 || idx >= len(want) {
		if ok || it.Valid() {
			t.Helper()
			t.Fatalf("%s: got %x, want end", fmt.Sprintf(format, args...), it.Key())
		}
		return
	}
	if !ok || !it.Valid() {
		t.Helper()
		t.Fatalf("%s: got end, want %x", fmt.Sprintf(format, args...), want[idx].key)
	}
	if !bytes.Equal(it.Key(), want[idx].key) || !bytes.Equal(it.Value(), want[idx].value) {
		t.Helper()
		t.Fatalf("%s: got %x=%x, want %x=%x", fmt.Sprintf(format, args...), it.Key(), it.Value(), want[idx].key, want[idx].value)
	}
}

func checkStats(t *testing.T, m *Memtable, ref refList) {
	t.Helper()
	var maxSeq uint64
	maxTS := int64(math.MinInt64)
	var payload int64
	for _, e := range ref {
		ts, seq, kind := model.Trailer(e.key)
		maxSeq = max(maxSeq, seq)
		if kind == model.KindSetCell {
			maxTS = max(maxTS, ts)
		}
		payload += int64(len(e.key) + len(e.value))
	}
	if m.Len() != len(ref) || m.Empty() != (len(ref) == 0) {
		t.Fatalf("Len = %d, Empty = %v, want %d entries", m.Len(), m.Empty(), len(ref))
	}
	if m.MaxSeq() != maxSeq || m.MaxTimestamp() != maxTS {
		t.Fatalf("MaxSeq, MaxTimestamp = %d, %d, want %d, %d", m.MaxSeq(), m.MaxTimestamp(), maxSeq, maxTS)
	}
	n := int64(len(ref))
	if b := m.ApproximateBytes(); b < payload+n*nodeSize(1) || b > payload+n*nodeSize(maxHeight) {
		t.Fatalf("ApproximateBytes = %d for %d entries of %d bytes", b, n, payload)
	}
}

func checkIterators(t *testing.T, r *rand.Rand, m *Memtable, ref refList) {
	t.Helper()
	snaps := []uint64{0, math.MaxUint64, uint64(r.Intn(45)), uint64(r.Intn(45))}
	for _, snap := range snaps {
		want := ref.visible(snap)
		it := m.NewIter(snap)

		// Full scans both ways.
		ok := it.First()
		for i := 0; i <= len(want); i++ {
			expectAt(t, it, ok, want, i, "snap %d First+Next #%d", snap, i)
			ok = it.Next()
		}
		ok = it.Last()
		for i := len(want) - 1; i >= -1; i-- {
			expectAt(t, it, ok, want, i, "snap %d Last+Prev #%d", snap, i)
			ok = it.Prev()
		}
		if it.Next() || it.Prev() || it.Valid() {
			t.Fatal("exhausted iterator moved")
		}

		// Seeks to present keys, absent keys and prefixes, then a short walk.
		for range 30 {
			var target []byte
			switch r.Intn(3) {
			case 0:
				if len(ref) > 0 {
					target = ref[r.Intn(len(ref))].key
				}
			case 1:
				target = randKey(r, randRow(r), uint64(r.Intn(45)))
			case 2:
				target = model.AppendRowPrefix(nil, randRow(r))
			}
			ge, _ := want.search(target)
			idx := ge
			ok := it.SeekGE(target)
			expectAt(t, it, ok, want, idx, "SeekGE(%x)", target)
			if r.Intn(2) == 0 {
				idx = ge - 1
				ok = it.SeekLT(target)
				expectAt(t, it, ok, want, idx, "SeekLT(%x)", target)
			}
			for step := 0; step < 6 && idx >= 0 && idx < len(want); step++ {
				if r.Intn(2) == 0 {
					idx++
					ok = it.Next()
				} else {
					idx--
					ok = it.Prev()
				}
				expectAt(t, it, ok, want, idx, "walk %d from %x", step, target)
			}
		}
		if it.Error() != nil || it.Close() != nil {
			t.Fatal("Error or Close returned an error")
		}
	}
}

func TestAgainstModel(t *testing.T) {
	seeds, ops := 8, 1000
	if raceEnabled || testing.Short() {
		seeds, ops = 2, 600 // the race detector slows this test 30-fold
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			m := New(Options{Seed: uint64(seed)})
			var ref refList
			checkStats(t, m, ref)
			checkIterators(t, r, m, ref)
			for range ops {
				switch x := r.Intn(20); {
				case x < 12:
					k, v := randKey(r, randRow(r), uint64(1+r.Intn(40))), randValue(r)
					_, dup := ref.search(k)
					err := m.Add(k, v)
					if dup != (err != nil) || (dup && !errors.Is(err, model.ErrInvalidArgument)) {
						t.Fatalf("Add(%x): err = %v, duplicate = %v", k, err, dup)
					}
					if !dup {
						ref.insert(entry{k, v})
					}
				case x < 19:
					// A row mutation: one row, one seq.
					row, seq := randRow(r), uint64(1+r.Intn(40))
					var keys, values [][]byte
					dup := false
					seen := map[string]bool{}
					for range 1 + r.Intn(5) {
						k := randKey(r, row, seq)
						_, found := ref.search(k)
						dup = dup || found || seen[string(k)]
						seen[string(k)] = true
						keys = append(keys, k)
						values = append(values, randValue(r))
					}
					err := m.AddBatch(keys, values)
					if dup != (err != nil) || (dup && !errors.Is(err, model.ErrInvalidArgument)) {
						t.Fatalf("AddBatch: err = %v, duplicate = %v", err, dup)
					}
					if !dup {
						for i := range keys {
							ref.insert(entry{keys[i], values[i]})
						}
					}
				default:
					checkStats(t, m, ref)
					checkIterators(t, r, m, ref)
				}
			}
			checkStats(t, m, ref)
			checkIterators(t, r, m, ref)
		})
	}
}

func TestDuplicateKeyRejected(t *testing.T) {
	m := New(Options{})
	k := model.AppendKey(nil, []byte("row"), "f", []byte("q"), 5, 7, model.KindSetCell)
	if err := m.Add(k, []byte("first")); err != nil {
		t.Fatal(err)
	}
	before := m.ApproximateBytes()
	err := m.Add(k, []byte("second"))
	if !errors.Is(err, model.ErrInvalidArgument) {
		t.Fatalf("duplicate Add: err = %v, want ErrInvalidArgument", err)
	}
	if m.Len() != 1 || m.ApproximateBytes() != before {
		t.Fatalf("duplicate Add changed the memtable: Len %d, bytes %d -> %d", m.Len(), before, m.ApproximateBytes())
	}
	it := m.NewIter(math.MaxUint64)
	if !it.First() || string(it.Value()) != "first" || it.Next() {
		t.Fatal("duplicate Add changed the contents")
	}
}

func TestAddBatchIsAllOrNothing(t *testing.T) {
	m := New(Options{})
	key := func(q string, seq uint64) []byte {
		return model.AppendKey(nil, []byte("row"), "f", []byte(q), 1, seq, model.KindSetCell)
	}
	if err := m.AddBatch([][]byte{key("a", 1), key("b", 1)}, [][]byte{[]byte("1"), []byte("2")}); err != nil {
		t.Fatal(err)
	}
	bytes0, seq0, ts0 := m.ApproximateBytes(), m.MaxSeq(), m.MaxTimestamp()
	bad := []struct {
		name         string
		keys, values [][]byte
	}{
		{"duplicate of an existing key", [][]byte{key("c", 2), key("d", 2), key("a", 1), key("e", 2)}, make([][]byte, 4)},
		{"duplicate within the batch", [][]byte{key("c", 2), key("d", 2), key("c", 2)}, make([][]byte, 3)},
		{"short key", [][]byte{key("c", 2), []byte("short")}, make([][]byte, 2)},
		{"length mismatch", [][]byte{key("c", 2)}, nil},
	}
	for _, tc := range bad {
		if err := m.AddBatch(tc.keys, tc.values); !errors.Is(err, model.ErrInvalidArgument) {
			t.Fatalf("%s: err = %v, want ErrInvalidArgument", tc.name, err)
		}
		if m.Len() != 2 || m.ApproximateBytes() != bytes0 || m.MaxSeq() != seq0 || m.MaxTimestamp() != ts0 {
			t.Fatalf("%s: statistics changed", tc.name)
		}
		it := m.NewIter(math.MaxUint64)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if n != 2 {
			t.Fatalf("%s: %d entries after failed batch, want 2", tc.name, n)
		}
	}
	if err := m.Add([]byte("too short"), nil); !errors.Is(err, model.ErrInvalidArgument) {
		t.Fatalf("short key: err = %v", err)
	}
	// The rolled-back keys can be inserted afterwards.
	if err := m.AddBatch([][]byte{key("c", 2), key("d", 2)}, [][]byte{nil, nil}); err != nil {
		t.Fatal(err)
	}
	if m.Len() != 4 || m.MaxSeq() != 2 {
		t.Fatalf("Len, MaxSeq = %d, %d", m.Len(), m.MaxSeq())
	}
}

func TestDeterministicShape(t *testing.T) {
	shape := func(seed uint64) []int {
		m := New(Options{Seed: seed})
		var hs []int
		for range 200 {
			hs = append(hs, m.randomHeight())
		}
		return hs
	}
	a, b := shape(42), shape(42)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different heights")
		}
	}
	// p = 1/4: about 3/4 of nodes have height 1.
	m := New(Options{})
	var ones int
	for range 100000 {
		if m.randomHeight() == 1 {
			ones++
		}
	}
	if ones < 74000 || ones > 76000 {
		t.Fatalf("%d of 100000 heights are 1, want about 75000", ones)
	}
}

func TestLargeEntries(t *testing.T) {
	m := New(Options{})
	var ref refList
	for i := range 50 {
		k := model.AppendKey(nil, fmt.Appendf(nil, "row%03d", i), "f", nil, 1, uint64(i+1), model.KindSetCell)
		v := bytes.Repeat([]byte{byte(i)}, i*997) // up to ~48 KiB: inline and own allocations
		if err := m.Add(k, v); err != nil {
			t.Fatal(err)
		}
		ref.insert(entry{k, v})
	}
	checkIterators(t, rand.New(rand.NewSource(1)), m, ref)
	checkStats(t, m, ref)
}

func TestKeyAndValueAreCopiesAndCapped(t *testing.T) {
	m := New(Options{})
	k := model.AppendKey(nil, []byte("r"), "f", nil, 1, 1, model.KindSetCell)
	v := []byte("value")
	if err := m.Add(k, v); err != nil {
		t.Fatal(err)
	}
	k2 := model.AppendKey(nil, []byte("s"), "f", nil, 1, 2, model.KindSetCell)
	if err := m.Add(k2, []byte("other")); err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(k)
	k[0], v[0] = 'x', 'x'
	it := m.NewIter(math.MaxUint64)
	if !it.First() || !bytes.Equal(it.Key(), want) || string(it.Value()) != "value" {
		t.Fatal("memtable aliases the caller's slices")
	}
	// Appending to a returned slice must not overwrite the neighbouring bytes.
	_ = append(it.Key(), 'z')
	_ = append(it.Value(), 'z')
	if !bytes.Equal(it.Key(), want) || string(it.Value()) != "value" || !it.Next() || string(it.Value()) != "other" {
		t.Fatal("append to Key or Value clobbered the arena")
	}
}

func TestReadPathDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		return // the race detector allocates on its own; counts mean nothing there
	}
	m := New(Options{})
	r := rand.New(rand.NewSource(1))
	keys := benchKeys(r, 1100)
	for i, k := range keys {
		if err := m.Add(k, []byte("v")); err != nil {
			t.Fatal(i, err)
		}
	}
	it := m.NewIter(500)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		it.SeekGE(keys[i%len(keys)])
		it.Next()
		it.SeekLT(keys[i%len(keys)])
		if it.Prev() {
			_, _ = it.Key(), it.Value()
		}
		i++
	})
	if allocs != 0 {
		t.Fatalf("read path allocates %.1f times per run", allocs)
	}

	m = New(Options{})
	value := make([]byte, 1000)
	i = 0
	allocs = testing.AllocsPerRun(1000, func() {
		if err := m.Add(keys[i], value); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs > 2 {
		t.Fatalf("Add allocates %.1f times per call, want at most 2", allocs)
	}
}
