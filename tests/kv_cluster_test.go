package tests

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/coord/cell"
	coordclient "github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/master"
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
