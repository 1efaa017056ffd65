package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/coord/cell"
	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/kv/tabletserver"
	"github.com/cellardb/cellar/ops/coordlock"
)

// TestKVClusterInProcess runs a Chubby cell, two tablet servers and a
// master in one process, all talking over loopback. The master sets up
// METADATA and creates tables; a kv client finds their tablets through
// the root file, the root tablet and METADATA, and reads and writes them.
func TestKVClusterInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	chubby := freeLoopbackPort(t)
	replica := cell.New(cell.Options{Cell: "kvtest", ReplicaID: 1, Dir: filepath.Join(dir, "chubby"),
		Peers: map[uint64]cell.Peer{1: {RaftAddr: freeLoopbackPort(t), ClientAddr: chubby}}, Lease: 2 * time.Second, Grace: 2 * time.Second})
	if err := replica.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer replica.Close(context.Background())
	svc := func(principal string) *coordlock.Service {
		return &coordlock.Service{Client: coordclient.Options{Addrs: []string{chubby}, Principal: principal}}
	}

	for _, id := range []string{"ts1", "ts2"} {
		store := tablet.New(dfs.NewLocal(filepath.Join(dir, id)), "", tablet.Options{})
		if err := store.Open(ctx); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ts := tabletserver.New(tabletserver.Options{ID: id, Addr: ln.Addr().String(), Store: store,
			Coord: coordlock.ForTabletServer{Service: svc(id)}})
		if err := ts.Open(ctx); err != nil {
			t.Fatal(err)
		}
		go ts.Serve(ln)
		defer store.Close(context.Background())
		defer ts.Close(context.Background())
	}

	msvc := svc("master")
	sess, err := msvc.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	m := master.New(master.Options{Addr: "in-process", Coord: coordlock.ForMaster{Service: msvc, Session: sess}, ScanInterval: 50 * time.Millisecond})
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	eventually(t, "the master to see both servers", func() bool { return len(m.Servers()) == 2 })

	schema := model.Schema{Families: []model.Family{{Name: "profile"}, {Name: "stats"}}}
	if err := m.CreateTable(ctx, "users", schema, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateTable(ctx, "events", schema, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateTable(ctx, "users", schema, nil); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("creating users again: %v", err)
	}

	kv := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}})
	defer kv.Close()
	for _, table := range []string{"users", "events"} {
		for i := 0; i < 50; i++ {
			row := fmt.Sprintf("%c%03d", 'a'+i%26, i)
			err := kv.Apply(ctx, table, &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{
				model.SetCell("profile", []byte("name"), model.ServerTimestamp, []byte("n"+row))}})
			if err != nil {
				t.Fatalf("%s %s: %v", table, row, err)
			}
		}
		sc := kv.Scan(ctx, table, model.RowRange{}, kvclient.Filter{}, 0)
		var keys []string
		for sc.Next() {
			keys = append(keys, string(sc.Row().Key))
		}
		if sc.Err() != nil || len(keys) != 50 {
			t.Fatalf("%s: scanned %d rows: %v", table, len(keys), sc.Err())
		}
	}
	row, found, err := kv.ReadRow(ctx, "users", []byte("z025"), kvclient.Filter{})
	if err != nil || !found || string(row.Cells[0].Value) != "nz025" {
		t.Fatalf("ReadRow: %v %v %v", row, found, err)
	}
	// The schema is in the lock service, for every master to come.
	if data, ok, err := sess.ReadFile(ctx, "/ls/local/cellar/schema/users"); err != nil || !ok || !strings.Contains(string(data), "profile") {
		t.Fatalf("schema file: %q %v %v", data, ok, err)
	}
}

// TestSplitsAreRecordedInMetadata writes enough into a table for its
// tablets to split, and checks that METADATA follows: one row per tablet,
// with ranges that match the server's, and a cold client that finds every
// row through them.
func TestSplitsAreRecordedInMetadata(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	chubby := freeLoopbackPort(t)
	replica := cell.New(cell.Options{Cell: "kvtest", ReplicaID: 1, Dir: filepath.Join(dir, "chubby"),
		Peers: map[uint64]cell.Peer{1: {RaftAddr: freeLoopbackPort(t), ClientAddr: chubby}}, Lease: 2 * time.Second, Grace: 2 * time.Second})
	if err := replica.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer replica.Close(context.Background())
	svc := func(principal string) *coordlock.Service {
		return &coordlock.Service{Client: coordclient.Options{Addrs: []string{chubby}, Principal: principal}}
	}
	tsSess, err := svc("ts1").NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tsSess.Close(context.Background())
	meta := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: tsSess}})
	defer meta.Close()

	var srv atomic.Pointer[tabletserver.Server]
	store := tablet.New(dfs.NewLocal(filepath.Join(dir, "ts1")), "", tablet.Options{
		MemtableSize: 64 << 10, SplitSize: 256 << 10, KeepWhole: tabletserver.KeepWhole,
		Events: tablet.Events{Split: func(p uint64, c [2]uint64, k []byte) { srv.Load().SplitHook(p, c, k) }},
	})
	if err := store.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer store.Close(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := tabletserver.New(tabletserver.Options{ID: "ts1", Addr: ln.Addr().String(), Store: store, Meta: meta,
		ReportSplit: master.SplitReporter(tsSess.MasterAddr("")),
		Coord:       coordlock.ForTabletServer{Service: svc("ts1")}})
	srv.Store(ts)
	if err := ts.Open(ctx); err != nil {
		t.Fatal(err)
	}
	go ts.Serve(ln)
	defer ts.Close(context.Background())

	msvc := svc("master")
	sess, err := msvc.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	// The master scans once at start and then rarely: only the split
	// reports can tell it of the splits in time.
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := master.New(master.Options{Addr: mln.Addr().String(), Coord: coordlock.ForMaster{Service: msvc, Session: sess}, ScanInterval: time.Hour})
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	admin := grpc.NewServer()
	masterpb.RegisterMasterServer(admin, master.AdminServer{M: m})
	go admin.Serve(mln)
	defer admin.Stop()
	if len(m.Servers()) != 1 {
		t.Fatalf("the master sees %d servers", len(m.Servers()))
	}
	if err := m.CreateTable(ctx, "big", model.Schema{Families: []model.Family{{Name: "f"}}}, nil); err != nil {
		t.Fatal(err)
	}

	kv := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}})
	defer kv.Close()
	const rows = 3000
	// Incompressible values, so that the tablets really grow.
	rnd := rand.New(rand.NewPCG(1, 2))
	var batch []*model.RowMutation
	for i := 0; i < rows; i++ {
		value := make([]byte, 1000)
		for j := range value {
			value[j] = byte(rnd.Uint32())
		}
		batch = append(batch, &model.RowMutation{Row: []byte(fmt.Sprintf("row%05d", i)), Mutations: []model.Mutation{model.SetCell("f", nil, model.ServerTimestamp, value)}})
		if len(batch) == 100 {
			for _, err := range kv.ApplyBulk(ctx, "big", batch) {
				if err != nil {
					t.Fatal(err)
				}
			}
			batch = nil
		}
	}
	if err := store.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	tabletsOf := func() []model.RowRange {
		var out []model.RowRange
		for _, tb := range store.Tablets() {
			if tb.Table() == "big" {
				out = append(out, tb.Range())
			}
		}
		return out
	}
	eventually(t, "the table to split", func() bool { return len(tabletsOf()) > 2 })
	// METADATA's rows for "big" must match the server's tablets.
	eventually(t, "METADATA to record the splits", func() bool {
		sc := kv.Scan(ctx, kvclient.MetaTable, model.RowRange{Start: model.MetaKey("big", nil)[:4], End: model.MetaKey("big", nil)}, kvclient.Filter{}, 0)
		var got []model.RowRange
		for sc.Next() {
			d, err := model.ParseTabletDescriptor(sc.Row())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, model.RowRange{Start: d.Start, End: d.End})
		}
		if row, found, _ := kv.ReadRow(ctx, kvclient.MetaTable, model.MetaKey("big", nil), kvclient.Filter{}); found {
			d, _ := model.ParseTabletDescriptor(row)
			got = append(got, model.RowRange{Start: d.Start, End: d.End})
		}
		return sc.Err() == nil && fmt.Sprint(got) == fmt.Sprint(tabletsOf())
	})
	eventually(t, "the master to hear of the splits", func() bool {
		n := 0
		for _, tb := range m.Servers()[0].Tablets {
			if tb.Table == "big" {
				n++
			}
		}
		return n == len(tabletsOf())
	})
	cold := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}})
	defer cold.Close()
	sc := cold.Scan(ctx, "big", model.RowRange{}, kvclient.Filter{}, 0)
	n := 0
	for sc.Next() {
		if want := fmt.Sprintf("row%05d", n); string(sc.Row().Key) != want {
			t.Fatalf("row %d is %q", n, sc.Row().Key)
		}
		n++
	}
	if sc.Err() != nil || n != rows {
		t.Fatalf("a cold client scanned %d of %d rows: %v", n, rows, sc.Err())
	}
}
