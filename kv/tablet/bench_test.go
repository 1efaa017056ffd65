package tablet

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

func benchStore(b *testing.B, rows int) *Store {
	b.Helper()
	s := New(dfs.NewLocal(b.TempDir()), "", Options{})
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(ctx) })
	s.CreateTable(ctx, "t", model.Schema{Families: []model.Family{{Name: "f"}}}, nil)
	val := make([]byte, 1000)
	for i := 0; i < rows; i++ {
		if err := s.Apply(ctx, "t", &model.RowMutation{Row: []byte(fmt.Sprintf("%016d", i)), Mutations: []model.Mutation{model.SetCell("f", nil, 1000, val)}}); err != nil {
			b.Fatal(err)
		}
	}
	s.FlushAll(ctx)
	s.Tablets()[0].Compact(ctx, true)
	return s
}

func BenchmarkReadRow(b *testing.B) {
	s := benchStore(b, 20000)
	ctx := context.Background()
	r := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, found, err := s.ReadRow(ctx, "t", []byte(fmt.Sprintf("%016d", r.Intn(20000))), ReadOptions{})
		if err != nil || !found {
			b.Fatal(err, found)
		}
	}
}

func BenchmarkScan1000(b *testing.B) {
	s := benchStore(b, 20000)
	ctx := context.Background()
	r := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sc := s.Scan(ctx, "t", model.RowRange{Start: []byte(fmt.Sprintf("%016d", r.Intn(19000)))}, ReadOptions{Limit: 1000})
		n := 0
		for sc.Next() {
			n++
		}
		sc.Close()
		if n != 1000 {
			b.Fatal(n, sc.Err())
		}
	}
}
