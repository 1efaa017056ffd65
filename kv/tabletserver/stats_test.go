package tabletserver

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// scanMessages returns every message of a scan.
func scanMessages(t *testing.T, ts *testServer, req *pb.ScanRequest) []*pb.ScanResponse {
	t.Helper()
	stream, err := ts.cli.Scan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []*pb.ScanResponse
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msg)
	}
}

// lastStats checks that only the last message has stats and returns them,
// with the rows of all messages.
func lastStats(t *testing.T, msgs []*pb.ScanResponse) (*pb.ReadStats, int) {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatal("a scan that wants stats sent no message")
	}
	rows := 0
	for i, m := range msgs {
		rows += len(m.Rows)
		if i < len(msgs)-1 && m.Stats != nil {
			t.Fatalf("message %d of %d has stats", i, len(msgs))
		}
	}
	st := msgs[len(msgs)-1].Stats
	if st == nil {
		t.Fatal("the last message has no stats")
	}
	return st, rows
}

func wantStats(t *testing.T, what string, got, want *pb.ReadStats) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Fatalf("%s: stats %v, want %v", what, got, want)
	}
}

func TestReadStatsRPCs(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	// 30 rows of three cells in t's second tablet (from "m"), flushed.
	for i := 0; i < 30; i++ {
		row := fmt.Sprintf("r%02d", i)
		_, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte(row),
			Mutations: []*pb.Mutation{set("f", "a", "v"+row), set("f", "b", "w"+row), set("g", "c", "x")}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.store.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}

	// ReadRow: stats only when asked. The file has one block: the first
	// read takes it from the file, the next ones from the cache.
	resp, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("r05"), Filter: &pb.Filter{WantStats: true}})
	if err != nil || !resp.Found {
		t.Fatalf("ReadRow: %v %v", resp, err)
	}
	wantStats(t, "first ReadRow", resp.Stats, &pb.ReadStats{Rows: 1, Cells: 3, Blocks: 1, BloomChecks: 1})
	resp, err = ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("r05")})
	if err != nil || !resp.Found || resp.Stats != nil {
		t.Fatalf("ReadRow without want_stats: %v %v", resp, err)
	}
	resp, err = ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("r05"), Filter: &pb.Filter{WantStats: true}})
	if err != nil || !resp.Found {
		t.Fatalf("ReadRow: %v %v", resp, err)
	}
	wantStats(t, "ReadRow of a cached block", resp.Stats, &pb.ReadStats{Rows: 1, Cells: 3, CacheHits: 1, BloomChecks: 1})
	// The filter's families and regular expressions: the stats count the
	// cells read, not those returned.
	resp, err = ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("r06"),
		Filter: &pb.Filter{Families: []string{"f"}, QualifierRegex: "b", WantStats: true}})
	if err != nil || !resp.Found || len(resp.Row.Cells) != 1 {
		t.Fatalf("ReadRow with a filter: %v %v", resp, err)
	}
	wantStats(t, "ReadRow with a filter", resp.Stats, &pb.ReadStats{Rows: 1, Cells: 2, CacheHits: 1, BloomChecks: 1})
	// A missing row inside the file's range: the filter keeps the file
	// from being read, and the stats come back though nothing is found.
	resp, err = ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("r055"), Filter: &pb.Filter{WantStats: true}})
	if err != nil || resp.Found {
		t.Fatalf("ReadRow of a missing row: %v %v", resp, err)
	}
	wantStats(t, "ReadRow of a missing row", resp.Stats, &pb.ReadStats{BloomChecks: 1, BloomUseful: 1})

	// Scan: no stats unless asked.
	for _, m := range scanMessages(t, ts, &pb.ScanRequest{Table: "t"}) {
		if m.Stats != nil {
			t.Fatalf("a scan without want_stats sent stats: %v", m.Stats)
		}
	}
	if msgs := scanMessages(t, ts, &pb.ScanRequest{Table: "t", Ranges: []*pb.RowRange{{Start: []byte("a"), End: []byte("b")}}}); len(msgs) != 0 {
		t.Fatalf("an empty scan without want_stats sent %d messages", len(msgs))
	}
	// Over both tablets, through a value filter that keeps 5 rows: the
	// stats count the 30 rows read.
	st, rows := lastStats(t, scanMessages(t, ts, &pb.ScanRequest{Table: "t",
		Filter: &pb.Filter{Families: []string{"f"}, ValueRegex: "vr0[0-4]", WantStats: true}}))
	wantStats(t, "filtered scan", st, &pb.ReadStats{Rows: 30, Cells: 60, CacheHits: 1})
	if rows != 5 {
		t.Fatalf("filtered scan: %d rows", rows)
	}
	// A row limit stops the read; an empty range still answers with stats.
	st, rows = lastStats(t, scanMessages(t, ts, &pb.ScanRequest{Table: "t", RowLimit: 4, Filter: &pb.Filter{WantStats: true}}))
	wantStats(t, "scan with a limit", st, &pb.ReadStats{Rows: 4, Cells: 12, CacheHits: 1})
	if rows != 4 {
		t.Fatalf("scan with a limit: %d rows", rows)
	}
	st, rows = lastStats(t, scanMessages(t, ts, &pb.ScanRequest{Table: "t", Ranges: []*pb.RowRange{{Start: []byte("a"), End: []byte("b")}},
		Filter: &pb.Filter{WantStats: true}}))
	wantStats(t, "empty scan", st, &pb.ReadStats{})
	if rows != 0 {
		t.Fatalf("empty scan: %d rows", rows)
	}
	// A scan that stops early says so on the message with the stats.
	defer func(n int) { scanMaxDropped = n }(scanMaxDropped)
	scanMaxDropped = 4
	msgs := scanMessages(t, ts, &pb.ScanRequest{Table: "t", Filter: &pb.Filter{ValueRegex: "nothing", WantStats: true}})
	st, _ = lastStats(t, msgs)
	if last := msgs[len(msgs)-1]; !last.More || string(last.ResumeAfter) != "r03" || st.Rows != 5 {
		t.Fatalf("a scan that stopped early: %v", last)
	}
	// Reversed, it stops at the fifth row from the end.
	msgs = scanMessages(t, ts, &pb.ScanRequest{Table: "t", Reversed: true, Filter: &pb.Filter{ValueRegex: "nothing", WantStats: true}})
	if last := msgs[len(msgs)-1]; !last.More || string(last.ResumeAfter) != "r26" {
		t.Fatalf("a reversed scan that stopped early: %v", last)
	}
	// Reversed over two ranges: the last range first, each from its end.
	var keys []string
	for _, m := range scanMessages(t, ts, &pb.ScanRequest{Table: "t", Reversed: true, RowLimit: 5,
		Ranges: []*pb.RowRange{{Start: []byte("r03"), End: []byte("r06")}, {Start: []byte("r27")}}}) {
		for _, r := range m.Rows {
			keys = append(keys, string(r.Key))
		}
	}
	if strings.Join(keys, ",") != "r29,r28,r27,r05,r04" {
		t.Fatalf("a reversed scan of two ranges: %v", keys)
	}

	// Aggregate: stats only when asked.
	agg := &pb.AggregateRequest{Table: "t", Ranges: []*pb.RowRange{{Start: []byte("m")}}, Aggs: []*pb.AggSpec{{Func: pb.AggSpec_COUNT_ROWS}}}
	ar, err := ts.cli.Aggregate(ctx, agg)
	if err != nil || ar.Stats != nil || ar.Groups[0].Values[0].Count != 30 {
		t.Fatalf("Aggregate without want_stats: %v %v", ar, err)
	}
	agg.Filter = &pb.Filter{Families: []string{"g"}, WantStats: true}
	ar, err = ts.cli.Aggregate(ctx, agg)
	if err != nil || ar.Groups[0].Values[0].Count != 30 {
		t.Fatalf("Aggregate: %v %v", ar, err)
	}
	wantStats(t, "Aggregate", ar.Stats, &pb.ReadStats{Rows: 30, Cells: 30, CacheHits: 1})
}

// TestScanStatsComeLast: a scan of more than one message's worth of rows
// sends its stats on a last message of its own.
func TestScanStatsComeLast(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	big := strings.Repeat("x", scanBatchBytes/2+1)
	for _, row := range []string{"a", "b"} {
		if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte(row), Mutations: []*pb.Mutation{set("f", "q", big)}}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := scanMessages(t, ts, &pb.ScanRequest{Table: "t", Filter: &pb.Filter{WantStats: true}})
	st, rows := lastStats(t, msgs)
	if len(msgs) != 2 || len(msgs[0].Rows) != 2 || len(msgs[1].Rows) != 0 || rows != 2 {
		t.Fatalf("%d messages, %d rows", len(msgs), rows)
	}
	// The rows are in the memtable: no blocks.
	wantStats(t, "scan of the memtable", st, &pb.ReadStats{Rows: 2, Cells: 2})
}
