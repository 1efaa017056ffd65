package master

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// mergeServer is opsServer that also merges, unloads and loads tablets,
// and serves METADATA rows (meta) to the master's kv client, which a move
// reads. It records the sequencer each admin call carried.
type mergeServer struct {
	*opsServer
	meta  map[string]model.Row // METADATA rows by key
	calls []string             // "Method seq", in order
}

func (s *mergeServer) record(ctx context.Context, method string) {
	seq, ok, _ := client.SequencerFrom(ctx)
	v := "none"
	if ok {
		v = seq.String()
	}
	s.mu.Lock()
	s.calls = append(s.calls, method+" "+v)
	s.mu.Unlock()
}

func (s *mergeServer) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *mergeServer) MergeTablets(ctx context.Context, req *pb.MergeTabletsRequest) (*pb.MergeTabletsResponse, error) {
	s.record(ctx, "MergeTablets")
	s.mu.Lock()
	defer s.mu.Unlock()
	ia, ib := -1, -1
	for i, t := range s.tablets {
		if t.Table == req.Table && t.Id == req.A {
			ia = i
		}
		if t.Table == req.Table && t.Id == req.B {
			ib = i
		}
	}
	if ia < 0 || ib < 0 {
		return nil, status.Error(codes.FailedPrecondition, "not serving: no such tablet")
	}
	a, b := s.tablets[ia], s.tablets[ib]
	if !bytes.Equal(a.Range.GetEnd(), b.Range.GetStart()) {
		return nil, status.Error(codes.InvalidArgument, "not adjacent")
	}
	m := &pb.TabletInfo{Id: s.nextID, Table: a.Table, Range: &pb.RowRange{Start: a.Range.GetStart(), End: b.Range.GetEnd()}, SizeBytes: a.SizeBytes + b.SizeBytes}
	s.nextID++
	var rest []*pb.TabletInfo
	for i, t := range s.tablets {
		if i != ia && i != ib {
			rest = append(rest, t)
		}
	}
	s.tablets = append(rest, m)
	return &pb.MergeTabletsResponse{Tablet: m}, nil
}

func (s *mergeServer) UnloadTablet(ctx context.Context, req *pb.UnloadTabletRequest) (*pb.UnloadTabletResponse, error) {
	s.record(ctx, "UnloadTablet")
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range s.tablets {
		if t.Table == req.Table && t.Id == req.Id {
			s.tablets = append(s.tablets[:i:i], s.tablets[i+1:]...)
			return &pb.UnloadTabletResponse{}, nil
		}
	}
	return nil, status.Error(codes.FailedPrecondition, "not serving: no such tablet")
}

func (s *mergeServer) LoadTablet(ctx context.Context, req *pb.LoadTabletRequest) (*pb.LoadTabletResponse, error) {
	s.record(ctx, "LoadTablet")
	var d model.TabletDescriptor
	if err := json.Unmarshal(req.Descriptor_, &d); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &pb.TabletInfo{Id: s.nextID, Table: d.Table, Range: &pb.RowRange{Start: d.Start, End: d.End}}
	s.nextID++
	s.tablets = append(s.tablets, t)
	return &pb.LoadTabletResponse{Tablet: t}, nil
}

func toPBRow(r model.Row) *pb.Row {
	out := &pb.Row{Key: r.Key}
	for _, c := range r.Cells {
		out.Cells = append(out.Cells, &pb.Cell{Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value})
	}
	return out
}

func (s *mergeServer) ReadRow(_ context.Context, req *pb.ReadRowRequest) (*pb.ReadRowResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.meta[string(req.Row)]
	if !ok {
		return &pb.ReadRowResponse{}, nil
	}
	return &pb.ReadRowResponse{Found: true, Row: toPBRow(r)}, nil
}

func (s *mergeServer) Scan(req *pb.ScanRequest, stream pb.TabletServer_ScanServer) error {
	s.mu.Lock()
	var keys []string
	for k := range s.meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := &pb.ScanResponse{}
	for _, k := range keys {
		for _, r := range req.Ranges {
			if (model.RowRange{Start: r.Start, End: r.End}).Contains([]byte(k)) && (req.RowLimit == 0 || int64(len(out.Rows)) < req.RowLimit) {
				out.Rows = append(out.Rows, toPBRow(s.meta[k]))
			}
		}
	}
	s.mu.Unlock()
	return stream.Send(out)
}

// metaRow is a tablet's METADATA row.
func metaRow(t *testing.T, d *model.TabletDescriptor) (string, model.Row) {
	t.Helper()
	m, err := d.Mutation(1000)
	if err != nil {
		t.Fatal(err)
	}
	row := model.Row{Key: m.Row}
	for _, mu := range m.Mutations {
		if mu.Kind == model.KindSetCell {
			row.Cells = append(row.Cells, model.Cell{Family: mu.Family, Qualifier: mu.Qualifier, Timestamp: mu.Timestamp, Value: mu.Value})
		}
	}
	return string(m.Row), row
}

// mergeMaster is a master whose lock has a sequencer, over three fake
// servers: ts1-a and ts3-c serve the tablets of web given, ts2-b serves
// METADATA (the root tablet, and one METADATA tablet holding every web
// row).
func mergeMaster(t *testing.T, ts1, ts3 []*pb.TabletInfo) (masterpb.MasterClient, client.Sequencer, *mergeServer, *mergeServer) {
	t.Helper()
	s1 := &mergeServer{opsServer: &opsServer{nextID: 10, tablets: ts1}}
	s3 := &mergeServer{opsServer: &opsServer{nextID: 20, tablets: ts3}}
	s2 := &mergeServer{opsServer: &opsServer{nextID: 10, tablets: []*pb.TabletInfo{
		{Id: 1, Table: client.MetaTable, Range: &pb.RowRange{End: model.MetaRootEnd}},
		{Id: 2, Table: client.MetaTable, Range: &pb.RowRange{Start: model.MetaRootEnd}},
	}}, meta: map[string]model.Row{}}
	a1, a2, a3 := serveTablets(t, s1), serveTablets(t, s2), serveTablets(t, s3)
	k, r := metaRow(t, &model.TabletDescriptor{Start: model.MetaRootEnd, Server: "ts2-b", Addr: a2})
	s2.meta[k] = r
	for _, set := range []struct {
		tablets []*pb.TabletInfo
		server  string
		addr    string
	}{{ts1, "ts1-a", a1}, {ts3, "ts3-c", a3}} {
		for _, tb := range set.tablets {
			k, r := metaRow(t, &model.TabletDescriptor{Table: tb.Table, Start: tb.Range.GetStart(), End: tb.Range.GetEnd(), Server: set.server, Addr: set.addr, LogTablet: tb.Id})
			s2.meta[k] = r
		}
	}
	seq := client.Sequencer{Path: "/ls/local/cellar/master", Instance: 4, Generation: 9, LockDelay: time.Second}
	c := &fakeCoord{files: map[string]*fakeFile{}, lost: make(chan struct{})}
	c.set("/ls/local/cellar/servers/ts1-a", &fakeFile{locked: true, contents: []byte(a1)})
	c.set("/ls/local/cellar/servers/ts2-b", &fakeFile{locked: true, contents: []byte(a2)})
	c.set("/ls/local/cellar/servers/ts3-c", &fakeFile{locked: true, contents: []byte(a3)})
	c.set("/ls/local/cellar/schema/web", &fakeFile{contents: []byte(`{"families":[{"name":"f"}]}`)})
	root, err := model.RootFileContents(&model.TabletDescriptor{End: model.MetaRootEnd, Server: "ts2-b", Addr: a2})
	if err != nil {
		t.Fatal(err)
	}
	c.set("/ls/local/cellar/root", &fakeFile{contents: root})
	m := New(Options{Addr: "m:1", Coord: c})
	m.seq.Store(&seq) // as Open does
	m.scan(context.Background())
	if len(m.Servers()) != 3 {
		t.Fatalf("servers: %+v", m.Servers())
	}
	return adminClient(t, m), seq, s1, s3
}

func webTablet(id uint64, start, end string, size int64) *pb.TabletInfo {
	return &pb.TabletInfo{Id: id, Table: "web", Range: &pb.RowRange{Start: []byte(start), End: []byte(end)}, SizeBytes: size}
}

func rangeOf(t *masterpb.Tablet) string { return string(t.Start) + ".." + string(t.End) }

// TestForcedMergeOnOneServer: the tablet holding the row merges with its
// right neighbour on their server, through a sequenced MergeTablets.
func TestForcedMergeOnOneServer(t *testing.T) {
	mc, seq, s1, _ := mergeMaster(t, []*pb.TabletInfo{webTablet(1, "", "g", 100), webTablet(2, "g", "p", 100), webTablet(3, "p", "", 100)}, nil)
	ctx := context.Background()
	resp, err := mc.MergeTablets(ctx, &masterpb.MergeTabletsRequest{Table: "web", Row: []byte("h")})
	if err != nil {
		t.Fatal(err)
	}
	if rangeOf(resp.Tablet) != "g.." || resp.Tablet.Server != "ts1-a" || resp.MovedFrom != "" {
		t.Fatalf("merge at h: %+v", resp)
	}
	if got := s1.recorded(); strings.Join(got, ",") != "MergeTablets "+seq.String() {
		t.Fatalf("ts1 got %q, want one MergeTablets with the master's sequencer", got)
	}
	// No row: the table's first tablet, with the one after it.
	resp, err = mc.MergeTablets(ctx, &masterpb.MergeTabletsRequest{Table: "web"})
	if err != nil || rangeOf(resp.Tablet) != ".." {
		t.Fatalf("merge of the first tablet: %+v %v", resp, err)
	}
	// One tablet left: it has no right neighbour.
	_, err = mc.MergeTablets(ctx, &masterpb.MergeTabletsRequest{Table: "web", Row: []byte("x")})
	wantCode(t, "merge the last tablet", err, codes.FailedPrecondition, "no right neighbour")
	_, err = mc.MergeTablets(ctx, &masterpb.MergeTabletsRequest{Table: "nosuch"})
	wantCode(t, "merge in an unknown table", err, codes.NotFound, "does not exist")
	_, err = mc.MergeTablets(ctx, &masterpb.MergeTabletsRequest{Table: "METADATA"})
	wantCode(t, "merge METADATA", err, codes.InvalidArgument, "merge a user table's tablets")
	_, err = mc.MergeTablets(ctx, &masterpb.MergeTabletsRequest{})
	wantCode(t, "merge with no table", err, codes.InvalidArgument, "no table named")
}

// TestForcedMergeAcrossServers: two neighbours on different servers; the
// smaller moves (unload, then a load from its METADATA row) to the
// other's server, which then merges them. Every call carries the
// master's sequencer.
func TestForcedMergeAcrossServers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		loSize       int64
		hiSize       int64
		from, merged string
	}{
		{"the lower is smaller", 100, 300, "ts1-a", "ts3-c"},
		{"the upper is smaller", 300, 100, "ts3-c", "ts1-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc, seq, s1, s3 := mergeMaster(t, []*pb.TabletInfo{webTablet(1, "", "g", tc.loSize)}, []*pb.TabletInfo{webTablet(1, "g", "", tc.hiSize)})
			resp, err := mc.MergeTablets(context.Background(), &masterpb.MergeTabletsRequest{Table: "web", Row: []byte("a")})
			if err != nil {
				t.Fatal(err)
			}
			if rangeOf(resp.Tablet) != ".." || resp.Tablet.Server != tc.merged || resp.MovedFrom != tc.from {
				t.Fatalf("merged %s on %s after a move from %s; want .. on %s after a move from %s", rangeOf(resp.Tablet), resp.Tablet.Server, resp.MovedFrom, tc.merged, tc.from)
			}
			src, dst := s1, s3
			if tc.from == "ts3-c" {
				src, dst = s3, s1
			}
			want := func(s *mergeServer, calls ...string) {
				t.Helper()
				for i := range calls {
					calls[i] += " " + seq.String()
				}
				if got := s.recorded(); strings.Join(got, ",") != strings.Join(calls, ",") {
					t.Fatalf("calls %q, want %q", got, calls)
				}
			}
			want(src, "UnloadTablet")
			want(dst, "LoadTablet", "MergeTablets")
			if len(src.tablets) != 0 || len(dst.tablets) != 1 {
				t.Fatalf("tablets left: %v on the source, %v on the target", src.tablets, dst.tablets)
			}
		})
	}
}
