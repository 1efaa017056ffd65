package tabletserver

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// TestSplitAndCompactRPCs splits a tablet at a row and at its midpoint and
// compacts one, through the RPCs the master calls for an operator.
func TestSplitAndCompactRPCs(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	for i := range 2000 {
		row := fmt.Sprintf("r%04d", i)
		if _, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte(row),
			Mutations: []*pb.Mutation{set("f", "a", fmt.Sprintf("value of %s, long enough to fill blocks %064d", row, i))}}); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []*pb.TabletInfo {
		resp, err := ts.cli.ListTablets(ctx, &pb.ListTabletsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Tablets
	}
	// Table t is split at "m"; every row is in the upper tablet.
	var top *pb.TabletInfo
	for _, tb := range list() {
		if string(tb.Range.GetStart()) == "m" {
			top = tb
		}
	}
	resp, err := ts.cli.SplitTablet(ctx, &pb.SplitTabletRequest{Table: "t", Id: top.Id, Key: []byte("r0500")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Tablets) != 2 || string(resp.Tablets[1].Range.Start) != "r0500" || len(resp.Tablets[1].Range.End) != 0 {
		t.Fatalf("split at r0500: %v", resp.Tablets)
	}
	upper := resp.Tablets[1]
	resp, err = ts.cli.SplitTablet(ctx, &pb.SplitTabletRequest{Table: "t", Id: upper.Id})
	if err != nil {
		t.Fatal(err)
	}
	if mid := string(resp.Tablets[1].Range.Start); mid < "r0900" || mid > "r1600" {
		t.Fatalf("the midpoint of [r0500, end) is %q", mid)
	}
	if n := len(list()); n != 4 {
		t.Fatalf("%d tablets after two splits, want 4", n)
	}
	if _, err := ts.cli.SplitTablet(ctx, &pb.SplitTabletRequest{Table: "t", Id: upper.Id}); code(err) != codes.FailedPrecondition {
		t.Fatalf("split a tablet that split already: %v", err)
	}
	if _, err := ts.cli.SplitTablet(ctx, &pb.SplitTabletRequest{Table: "t", Id: resp.Tablets[0].Id, Key: []byte("zzz")}); code(err) != codes.InvalidArgument {
		t.Fatalf("split outside the tablet: %v", err)
	}

	c, err := ts.cli.CompactTablet(ctx, &pb.CompactTabletRequest{Table: "t", Id: resp.Tablets[0].Id})
	if err != nil {
		t.Fatal(err)
	}
	if c.Tablet.SizeBytes <= 0 || c.Tablet.CompactionTotalBytes != 0 {
		t.Fatalf("after the compaction: %+v", c.Tablet)
	}
	r, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("r0700")})
	if err != nil || !r.Found {
		t.Fatalf("read after the compaction: %v %v", r, err)
	}
	if _, err := ts.cli.CompactTablet(ctx, &pb.CompactTabletRequest{Table: "t", Id: 999}); code(err) != codes.FailedPrecondition {
		t.Fatalf("compact an unknown tablet: %v", err)
	}
}
