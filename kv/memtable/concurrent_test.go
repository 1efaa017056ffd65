package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cellardb/cellar/kv/model"
)

// TestConcurrentReadersSeeWholeRows runs one writer that applies row
// mutations (a batch of columns of one row, one seq each) and publishes the
// visible seq after each, against readers that scan at the published seq.
// Readers must see every published mutation whole and keys in order.
func TestConcurrentReadersSeeWholeRows(t *testing.T) {
	const (
		cols    = 4
		rows    = 64
		readers = 4
	)
	batches := 10000
	if raceEnabled || testing.Short() {
		batches = 2000
	}
	m := New(Options{Seed: 7})
	var visible atomic.Uint64
	var done atomic.Bool
	rowOf := func(seq uint64) []byte { return fmt.Appendf(nil, "row%03d", seq*37%rows) }

	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		for seq := uint64(1); seq <= uint64(batches); seq++ {
			row := rowOf(seq)
			keys := make([][]byte, cols)
			values := make([][]byte, cols)
			for c := range cols {
				keys[c] = model.AppendKey(nil, row, "f", fmt.Appendf(nil, "q%d", c), int64(seq%5), seq, model.KindSetCell)
				values[c] = fmt.Appendf(nil, "%d", seq)
			}
			if seq%10 == 0 && seq > 1 {
				// A failing batch, rolled back while readers run. Its seq
				// is not yet published, so no reader may see its entries.
				prev := model.AppendKey(nil, rowOf(seq-1), "f", []byte("q0"), int64((seq-1)%5), seq-1, model.KindSetCell)
				if err := m.AddBatch(append(keys[:cols:cols], prev), append(values[:cols:cols], nil)); err == nil {
					t.Error("batch with a duplicate key succeeded")
					return
				}
			}
			if err := m.AddBatch(keys, values); err != nil {
				t.Error(err)
				return
			}
			visible.Store(seq)
		}
	})

	for id := range readers {
		wg.Go(func() {
			r := rand.New(rand.NewSource(int64(id)))
			counts := make([]int, batches+1)
			for scan := 0; ; scan++ {
				finished := done.Load() // read before the snapshot: one full pass after the writer ends
				snap := visible.Load()
				it := m.NewIter(snap)
				clear(counts)
				var prev []byte
				check := func(backward bool) bool {
					k := it.Key()
					if prev != nil {
						c := bytes.Compare(prev, k)
						if (!backward && c >= 0) || (backward && c <= 0) {
							t.Errorf("reader %d: keys out of order: %x then %x", id, prev, k)
							return false
						}
					}
					prev = k
					_, seq, _ := model.Trailer(k)
					if seq > snap || string(it.Value()) != fmt.Sprint(seq) {
						t.Errorf("reader %d: snapshot %d saw seq %d with value %q", id, snap, seq, it.Value())
						return false
					}
					counts[seq]++
					return true
				}
				var lo, hi uint64 = 1, snap // seqs that must be whole
				switch scan % 3 {
				case 0:
					for ok := it.First(); ok; ok = it.Next() {
						if !check(false) {
							return
						}
					}
				case 1:
					for ok := it.Last(); ok; ok = it.Prev() {
						if !check(true) {
							return
						}
					}
				case 2:
					// One row; only its mutations count.
					want := fmt.Appendf(nil, "row%03d", r.Intn(rows))
					prefix := model.AppendRowPrefix(nil, want)
					for ok := it.SeekGE(prefix); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
						if !check(false) {
							return
						}
					}
					lo, hi = 1, 0
					for seq := uint64(1); seq <= snap; seq++ {
						if string(rowOf(seq)) == string(want) && counts[seq] != cols {
							t.Errorf("reader %d: row %s seq %d: %d of %d columns", id, want, seq, counts[seq], cols)
							return
						}
					}
				}
				for seq := lo; seq <= hi; seq++ {
					if counts[seq] != cols {
						t.Errorf("reader %d: snapshot %d: seq %d has %d of %d columns", id, snap, seq, counts[seq], cols)
						return
					}
				}
				if finished {
					return
				}
			}
		})
	}
	wg.Wait()
	if m.Len() != batches*cols || m.MaxSeq() != uint64(batches) {
		t.Fatalf("Len, MaxSeq = %d, %d", m.Len(), m.MaxSeq())
	}
}
