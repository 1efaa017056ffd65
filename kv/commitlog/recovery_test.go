package commitlog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// writeInterleaved writes n records spread over tablets 1-3, one writer
// at a time, and returns them by tablet in the order written.
func writeInterleaved(t *testing.T, fs dfs.FS, n int) map[uint64][]Record {
	t.Helper()
	ctx := context.Background()
	w := NewWriter(fs, "log", Options{SegmentSize: 4 << 10})
	if err := w.Open(ctx, &State{}, 1); err != nil {
		t.Fatal(err)
	}
	byTablet := map[uint64][]Record{}
	seq := map[uint64]uint64{}
	var last Commit
	for i := 0; i < n; i++ {
		tab := uint64(i%3 + 1)
		seq[tab]++
		r := &Record{Tablet: tab, Table: "t", Seq: seq[tab], Mutation: model.RowMutation{Row: []byte(fmt.Sprintf("row%04d", i)),
			Mutations: []model.Mutation{model.SetCell("f", []byte("q"), int64(1000+i), []byte(strings.Repeat("v", i%50)))}}}
		c, err := w.Append(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		last = c
		byTablet[tab] = append(byTablet[tab], *r)
	}
	if err := last.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return byTablet
}

func readPartition(t *testing.T, fs dfs.FS, dir string) []Record {
	t.Helper()
	var out []Record
	_, err := Replay(context.Background(), fs, dir, 0, func(r *Record) error {
		c := *r
		c.Mutation = model.RowMutation{Row: append([]byte(nil), r.Mutation.Row...)}
		for _, m := range r.Mutation.Mutations {
			m.Qualifier, m.Value = append([]byte(nil), m.Qualifier...), append([]byte(nil), m.Value...)
			c.Mutation.Mutations = append(c.Mutation.Mutations, m)
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// same compares records without their LSNs, which the partition assigns
// anew.
func same(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.LSN, y.LSN = 0, 0
		if len(x.Mutation.Mutations) == len(y.Mutation.Mutations) {
			for j := range x.Mutation.Mutations {
				if len(x.Mutation.Mutations[j].Value) == 0 && len(y.Mutation.Mutations[j].Value) == 0 {
					x.Mutation.Mutations[j].Value, y.Mutation.Mutations[j].Value = nil, nil
				}
			}
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func TestPartitionSplitsTheLogByTablet(t *testing.T) {
	fs := dfs.NewMem()
	want := writeInterleaved(t, fs, 600)
	// Tablet 2's records below LSN 300 are already in its SSTables.
	tablets, err := Partition(context.Background(), fs, "log", "out", map[uint64]uint64{2: 300}, Options{SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(tablets, func(i, j int) bool { return tablets[i] < tablets[j] })
	if !reflect.DeepEqual(tablets, []uint64{1, 2, 3}) {
		t.Fatalf("tablets: %v", tablets)
	}
	for _, tab := range tablets {
		got := readPartition(t, fs, fmt.Sprintf("out/%d", tab))
		exp := want[tab]
		if tab == 2 {
			// LSNs were 1..600 in write order; tablet 2 held i%3==1, LSN i+1.
			var kept []Record
			for i, r := range exp {
				if lsn := uint64(3*i + 2); lsn >= 300 {
					kept = append(kept, r)
				}
			}
			exp = kept
		}
		if !same(got, exp) {
			t.Fatalf("tablet %d: %d records, want %d", tab, len(got), len(exp))
		}
	}
	// A complete partition is reused, even once the log is gone.
	for _, n := range []string{"log"} {
		names, _ := fs.List(n)
		for _, f := range names {
			fs.Remove(n + "/" + f)
		}
	}
	again, err := Partition(context.Background(), fs, "log", "out", nil, Options{})
	if err != nil || len(again) != 3 {
		t.Fatalf("reusing the partition: %v %v", again, err)
	}
}

func TestPartitionRedoneAfterAnInterruption(t *testing.T) {
	fs := dfs.NewMem()
	want := writeInterleaved(t, fs, 300)
	injected := errors.New("injected")
	fs.SetFaultHook(func(op dfs.Op, name string) error {
		if op == dfs.OpCreate && strings.HasSuffix(name, doneName) {
			return injected
		}
		return nil
	})
	if _, err := Partition(context.Background(), fs, "log", "out", nil, Options{SegmentSize: 4 << 10}); !errors.Is(err, injected) {
		t.Fatalf("interrupted partition: %v", err)
	}
	fs.SetFaultHook(nil)
	// The rerun, now with a redo point for tablet 1, must not pick up the
	// first attempt's segments.
	if _, err := Partition(context.Background(), fs, "log", "out", map[uint64]uint64{1: 200}, Options{SegmentSize: 4 << 10}); err != nil {
		t.Fatal(err)
	}
	want[1] = want[1][67:] // tablet 1 held LSNs 3k+1; 3*67+1 is the first at or above 200
	for tab, exp := range want {
		if got := readPartition(t, fs, fmt.Sprintf("out/%d", tab)); !same(got, exp) {
			t.Fatalf("tablet %d after a rerun: %d records, want %d", tab, len(got), len(exp))
		}
	}
}
