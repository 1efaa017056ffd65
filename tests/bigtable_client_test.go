package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	adminpb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/bigtableapi"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/querykv"
)

// The official Go client (cloud.google.com/go/bigtable) against
// kv/bigtableapi over a real cluster: two tablet servers, a master and a
// Chubby cell in this process, the API on a loopback port, the client
// connected the way users connect it, through BIGTABLE_EMULATOR_HOST.
// Calls the Go client cannot make (sink and bitmask filters, AddToCell,
// bad requests) go through the generated stubs over the same port.

const (
	btProject  = "proj"
	btInstance = "inst"
)

// btEnv is one Bigtable API server over a cluster, with its clients.
type btEnv struct {
	t     *testing.T
	ctx   context.Context
	c     *kvCluster
	qkv   *querykv.KV
	addr  string
	data  *bigtable.Client
	admin *bigtable.AdminClient
	raw   btpb.BigtableClient
	rawAd adminpb.BigtableTableAdminClient
}

// startBigtableAPI serves the API over the cluster with opts (Rows and
// Admin filled in) and connects the clients to it.
func startBigtableAPI(t *testing.T, ctx context.Context, c *kvCluster, qkv *querykv.KV, opts bigtableapi.Options, sopts ...grpc.ServerOption) *btEnv {
	t.Helper()
	opts.Rows, opts.Admin = c.kv, qkv
	api, err := bigtableapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(bigtableapi.MaxRequestBytes)}, sopts...)...)
	api.Register(srv)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	e := &btEnv{t: t, ctx: ctx, c: c, qkv: qkv, addr: ln.Addr().String()}
	t.Setenv("BIGTABLE_EMULATOR_HOST", e.addr)
	if e.data, err = bigtable.NewClient(ctx, btProject, btInstance); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.data.Close() })
	if e.admin, err = bigtable.NewAdminClient(ctx, btProject, btInstance); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.admin.Close() })
	cc, err := grpc.NewClient("passthrough:///"+e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	e.raw, e.rawAd = btpb.NewBigtableClient(cc), adminpb.NewBigtableTableAdminClient(cc)
	return e
}

func (e *btEnv) tableName(table string) string {
	return fmt.Sprintf("projects/%s/instances/%s/tables/%s", btProject, btInstance, table)
}

// createTable makes a table with the families, each keeping all versions.
func (e *btEnv) createTable(table string, families ...string) *bigtable.Table {
	e.t.Helper()
	conf := &bigtable.TableConf{TableID: table, Families: map[string]bigtable.GCPolicy{}}
	for _, f := range families {
		conf.Families[f] = bigtable.NoGcPolicy()
	}
	if err := e.admin.CreateTableFromConf(e.ctx, conf); err != nil {
		e.t.Fatalf("create %s: %v", table, err)
	}
	return e.data.Open(table)
}

func (e *btEnv) apply(tbl *bigtable.Table, row string, m *bigtable.Mutation) {
	e.t.Helper()
	if err := tbl.Apply(e.ctx, row, m); err != nil {
		e.t.Fatalf("apply %s: %v", row, err)
	}
}

// readKeys reads a row set and returns the keys in the order received.
func (e *btEnv) readKeys(tbl *bigtable.Table, rs bigtable.RowSet, opts ...bigtable.ReadOption) []string {
	e.t.Helper()
	var keys []string
	err := tbl.ReadRows(e.ctx, rs, func(r bigtable.Row) bool {
		keys = append(keys, r.Key())
		return true
	}, opts...)
	if err != nil {
		e.t.Fatalf("read rows: %v", err)
	}
	return keys
}

// cellsOf renders a row as "family:qualifier@ts=value[label]" strings in
// the order of the row's families by name, then as the client got them.
func cellsOf(r bigtable.Row) []string {
	fams := make([]string, 0, len(r))
	for f := range r {
		fams = append(fams, f)
	}
	slices.Sort(fams)
	var out []string
	for _, f := range fams {
		for _, it := range r[f] {
			s := fmt.Sprintf("%s@%d=%s", it.Column, it.Timestamp, it.Value)
			if len(it.Labels) > 0 {
				s += "[" + strings.Join(it.Labels, ",") + "]"
			}
			out = append(out, s)
		}
	}
	return out
}

// setCell is a SetCell mutation for the generated stubs.
func setCell(family, qualifier string, ts int64, value string) *btpb.Mutation {
	return &btpb.Mutation{Mutation: &btpb.Mutation_SetCell_{SetCell: &btpb.Mutation_SetCell{FamilyName: family,
		ColumnQualifier: []byte(qualifier), TimestampMicros: ts, Value: []byte(value)}}}
}

func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: got %v (%s), want %s", what, err, status.Code(err), code)
	}
}

func newBigtableEnv(t *testing.T) *btEnv {
	c := newKVCluster(t, kvClusterConfig{servers: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	qkv := &querykv.KV{Client: c.kv, MasterAddr: c.msess.MasterAddr("")}
	t.Cleanup(func() { qkv.Close() })
	return startBigtableAPI(t, ctx, c, qkv, bigtableapi.Options{})
}

func TestBigtableClientAdmin(t *testing.T) {
	e := newBigtableEnv(t)
	ctx := e.ctx
	union := bigtable.UnionPolicy(bigtable.MaxAgePolicy(time.Hour), bigtable.MaxVersionsPolicy(3))
	inter := bigtable.IntersectionPolicy(bigtable.MaxAgePolicy(2*time.Hour), bigtable.MaxVersionsPolicy(1))
	err := e.admin.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: "admin1", SplitKeys: []string{"p", "g"},
		Families: map[string]bigtable.GCPolicy{"v2": bigtable.MaxVersionsPolicy(2), "u": union, "i": inter, "all": bigtable.NoGcPolicy()}})
	if err != nil {
		t.Fatal(err)
	}

	// The splits are real tablets.
	tablets, err := e.c.kv.Tablets(ctx, "admin1", model.RowRange{})
	if err != nil || len(tablets) != 3 || string(tablets[1].Start) != "g" || string(tablets[2].Start) != "p" {
		t.Fatalf("tablets of a table split at g and p: %+v %v", tablets, err)
	}
	names, err := e.admin.Tables(ctx)
	if err != nil || !slices.Contains(names, "admin1") {
		t.Fatalf("tables: %v %v", names, err)
	}
	policies := func(table string) map[string]string {
		t.Helper()
		ti, err := e.admin.TableInfo(ctx, table)
		if err != nil {
			t.Fatalf("table info %s: %v", table, err)
		}
		out := map[string]string{}
		for _, f := range ti.FamilyInfos {
			out[f.Name] = f.FullGCPolicy.String()
		}
		return out
	}
	want := map[string]string{"v2": "versions() > 2", "u": "(age() > 1h || versions() > 3)", "i": "(age() > 2h && versions() > 1)", "all": ""}
	if got := policies("admin1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("families: got %v, want %v", got, want)
	}
	// The schema the master keeps is the same rules.
	all, err := e.qkv.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s1 := all["admin1"]
	if f, _ := s1.Family("i"); f.GC.String() != "(maxage=2h0m0s && maxversions=1)" {
		t.Fatalf("kv schema of family i: %v", f.GC)
	}

	// A schema change made from a schema that has changed since is
	// refused (the master compares), so read-modify-write changes cannot
	// lose one another.
	s2 := s1
	s2.Families = append(slices.Clone(s1.Families), model.Family{Name: "cas1"})
	if err := e.qkv.UpdateSchema(ctx, "admin1", &s1, s2); err != nil {
		t.Fatalf("a change from the current schema: %v", err)
	}
	s3 := s1
	s3.Families = append(slices.Clone(s1.Families), model.Family{Name: "cas2"})
	if err := e.qkv.UpdateSchema(ctx, "admin1", &s1, s3); !errors.Is(err, model.ErrAborted) {
		t.Fatalf("a change from a stale schema: %v, want aborted", err)
	}
	// Concurrent ModifyColumnFamilies: each either applies or is aborted,
	// and none is lost silently.
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.admin.CreateColumnFamily(ctx, "admin1", fmt.Sprintf("conc%d", i))
		}()
	}
	wg.Wait()
	ti, err := e.admin.TableInfo(ctx, "admin1")
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		name := fmt.Sprintf("conc%d", i)
		has := slices.ContainsFunc(ti.FamilyInfos, func(f bigtable.FamilyInfo) bool { return f.Name == name })
		switch {
		case err == nil && !has:
			t.Fatalf("family %s was acknowledged and lost", name)
		case err != nil && (has || status.Code(err) != codes.Aborted):
			t.Fatalf("family %s: %v (present: %v)", name, err, has)
		}
	}
	for _, name := range []string{"cas1", "conc0", "conc1", "conc2", "conc3", "conc4", "conc5"} {
		if slices.ContainsFunc(ti.FamilyInfos, func(f bigtable.FamilyInfo) bool { return f.Name == name }) {
			if err := e.admin.DeleteColumnFamily(ctx, "admin1", name); err != nil {
				t.Fatal(err)
			}
		}
	}

	wantCode(t, "create again", e.admin.CreateTable(ctx, "admin1"), codes.AlreadyExists)
	wantCode(t, "bad table id", e.admin.CreateTable(ctx, "no/slash"), codes.InvalidArgument)
	_, err = e.admin.TableInfo(ctx, "missing")
	wantCode(t, "info of a missing table", err, codes.NotFound)

	// Families: create, update, drop, and their errors.
	if err := e.admin.CreateColumnFamily(ctx, "admin1", "new"); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.SetGCPolicy(ctx, "admin1", "new", bigtable.MaxVersionsPolicy(5)); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.SetGCPolicy(ctx, "admin1", "u", bigtable.IntersectionPolicy(bigtable.MaxVersionsPolicy(1), bigtable.UnionPolicy(bigtable.MaxAgePolicy(time.Hour), bigtable.MaxVersionsPolicy(4)))); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.DeleteColumnFamily(ctx, "admin1", "i"); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"v2": "versions() > 2", "u": "(versions() > 1 && (age() > 1h || versions() > 4))", "all": "", "new": "versions() > 5"}
	if got := policies("admin1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("families after changes: got %v, want %v", got, want)
	}
	wantCode(t, "create an existing family", e.admin.CreateColumnFamily(ctx, "admin1", "new"), codes.AlreadyExists)
	wantCode(t, "drop a missing family", e.admin.DeleteColumnFamily(ctx, "admin1", "nope"), codes.NotFound)
	wantCode(t, "update a missing family", e.admin.SetGCPolicy(ctx, "admin1", "nope", bigtable.MaxVersionsPolicy(1)), codes.NotFound)
	wantCode(t, "family of a missing table", e.admin.CreateColumnFamily(ctx, "missing", "f"), codes.NotFound)
	wantCode(t, "bad GC rule", e.admin.SetGCPolicy(ctx, "admin1", "new", bigtable.MaxVersionsPolicy(0)), codes.InvalidArgument)

	// A family change keeps what the Bigtable API does not describe: the
	// SQL layer's metadata and locality groups.
	meta := model.Schema{Families: []model.Family{{Name: "f", LocalityGroup: "hot"}}, LocalityGroups: []model.LocalityGroup{{Name: "hot", InMemory: true}},
		Meta: map[string]string{"sql": `{"columns":[]}`}}
	if err := e.qkv.CreateTable(ctx, "withmeta", meta, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.CreateColumnFamily(ctx, "withmeta", "g"); err != nil {
		t.Fatal(err)
	}
	all, err = e.qkv.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := all["withmeta"]; s.Meta["sql"] != `{"columns":[]}` || len(s.LocalityGroups) != 1 || len(s.Families) != 2 || s.Families[0].LocalityGroup != "hot" {
		t.Fatalf("schema after adding a family: %+v", s)
	}

	// Views and paging through the raw API.
	tbl, err := e.rawAd.GetTable(ctx, &adminpb.GetTableRequest{Name: e.tableName("admin1"), View: adminpb.Table_NAME_ONLY})
	if err != nil || len(tbl.ColumnFamilies) != 0 || tbl.Name != e.tableName("admin1") {
		t.Fatalf("NAME_ONLY view: %v %v", tbl, err)
	}
	tbl, err = e.rawAd.GetTable(ctx, &adminpb.GetTableRequest{Name: "projects/other/instances/x/tables/admin1"})
	if err != nil || len(tbl.ColumnFamilies) != 4 || tbl.Granularity != adminpb.Table_MILLIS || tbl.Name != "projects/other/instances/x/tables/admin1" {
		t.Fatalf("default view, another project and instance: %v %v", tbl, err)
	}
	page, err := e.rawAd.ListTables(ctx, &adminpb.ListTablesRequest{Parent: "projects/p/instances/i", PageSize: 1})
	if err != nil || len(page.Tables) != 1 || page.NextPageToken == "" {
		t.Fatalf("first page: %v %v", page, err)
	}
	rest, err := e.rawAd.ListTables(ctx, &adminpb.ListTablesRequest{Parent: "projects/p/instances/i", PageToken: page.NextPageToken})
	if err != nil || len(rest.Tables) == 0 || rest.Tables[0].Name <= page.Tables[0].Name {
		t.Fatalf("second page: %v %v", rest, err)
	}
	_, err = e.rawAd.GetTable(ctx, &adminpb.GetTableRequest{Name: "tables/admin1"})
	wantCode(t, "a bad table name", err, codes.InvalidArgument)
	_, err = e.rawAd.CreateBackup(ctx, &adminpb.CreateBackupRequest{})
	wantCode(t, "backups", err, codes.Unimplemented)
	err = e.admin.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: "typed", ColumnFamilies: map[string]bigtable.Family{
		"sum": {ValueType: bigtable.AggregateType{Input: bigtable.Int64Type{}, Aggregator: bigtable.SumAggregator{}}}}})
	wantCode(t, "an aggregate family", err, codes.Unimplemented)
	if err := e.admin.WaitForReplication(ctx, "admin1"); err != nil {
		t.Fatalf("consistency tokens: %v", err)
	}

	// Delete.
	if err := e.admin.DeleteTable(ctx, "admin1"); err != nil {
		t.Fatal(err)
	}
	names, err = e.admin.Tables(ctx)
	if err != nil || slices.Contains(names, "admin1") {
		t.Fatalf("tables after delete: %v %v", names, err)
	}
	wantCode(t, "delete a missing table", e.admin.DeleteTable(ctx, "admin1"), codes.NotFound)
}

func TestBigtableClientMutationsAndReads(t *testing.T) {
	e := newBigtableEnv(t)
	ctx := e.ctx
	tbl := e.createTable("rows", "cf", "other")

	// SetCell with client timestamps, versions newest first.
	m := bigtable.NewMutation()
	m.Set("cf", "a", 1000, []byte("a1"))
	m.Set("cf", "a", 3000, []byte("a3"))
	m.Set("cf", "a", 2000, []byte("a2"))
	m.Set("cf", "b", 5000, []byte("b5"))
	m.Set("other", "", 7000, []byte("empty qualifier"))
	e.apply(tbl, "r1", m)
	r, err := tbl.ReadRow(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cf:a@3000=a3", "cf:a@2000=a2", "cf:a@1000=a1", "cf:b@5000=b5", "other:@7000=empty qualifier"}
	if got := cellsOf(r); !slices.Equal(got, want) {
		t.Fatalf("row r1: got %v, want %v", got, want)
	}
	if r, err := tbl.ReadRow(ctx, "absent"); err != nil || r != nil {
		t.Fatalf("an absent row: %v %v", r, err)
	}

	// Server time: -1 becomes the tablet's clock, in whole milliseconds.
	before := time.Now()
	m = bigtable.NewMutation()
	m.Set("cf", "srv", bigtable.ServerTime, []byte("x"))
	m.Set("cf", "srv2", bigtable.ServerTime, []byte("y"))
	e.apply(tbl, "r2", m)
	after := time.Now()
	r, err = tbl.ReadRow(ctx, "r2")
	if err != nil || len(r["cf"]) != 2 {
		t.Fatalf("server-time row: %v %v", r, err)
	}
	ts := r["cf"][0].Timestamp
	if ts%1000 != 0 || ts.Time().Before(before.Add(-time.Second)) || ts.Time().After(after.Add(time.Second)) || r["cf"][1].Timestamp != ts {
		t.Fatalf("server timestamps %d and %d; the write ran between %v and %v", ts, r["cf"][1].Timestamp, before, after)
	}

	// What the service rejects. The Go client truncates timestamps to
	// milliseconds itself, so bad ones go through the generated stub.
	for _, tc := range []struct {
		ts   int64
		code codes.Code
	}{{1001, codes.InvalidArgument}, {-2, codes.InvalidArgument}, {-1, codes.OK}, {9000, codes.OK}} {
		_, err := e.raw.MutateRow(ctx, &btpb.MutateRowRequest{TableName: e.tableName("rows"), RowKey: []byte("ts"), Mutations: []*btpb.Mutation{setCell("cf", "a", tc.ts, "x")}})
		wantCode(t, fmt.Sprintf("timestamp %d", tc.ts), err, tc.code)
	}
	m = bigtable.NewMutation()
	m.Set("nope", "a", 1000, []byte("x"))
	wantCode(t, "a missing family", tbl.Apply(ctx, "r1", m), codes.NotFound)
	m = bigtable.NewMutation()
	m.Set("cf", "a", 1000, []byte("x"))
	wantCode(t, "a key over 64 KiB", tbl.Apply(ctx, strings.Repeat("k", 64<<10+1), m), codes.InvalidArgument)
	wantCode(t, "a missing table", e.data.Open("missing").Apply(ctx, "r", m), codes.NotFound)
	_, err = e.raw.MutateRow(ctx, &btpb.MutateRowRequest{TableName: e.tableName("rows"), RowKey: []byte("r"), Mutations: []*btpb.Mutation{{Mutation: &btpb.Mutation_AddToCell_{
		AddToCell: &btpb.Mutation_AddToCell{FamilyName: "cf", ColumnQualifier: &btpb.Value{Kind: &btpb.Value_RawValue{RawValue: []byte("q")}},
			Timestamp: &btpb.Value{Kind: &btpb.Value_RawTimestampMicros{RawTimestampMicros: 1000}}, Input: &btpb.Value{Kind: &btpb.Value_IntValue{IntValue: 1}}}}}}})
	wantCode(t, "AddToCell", err, codes.InvalidArgument)
	_, err = e.raw.MutateRow(ctx, &btpb.MutateRowRequest{TableName: "tables/rows", RowKey: []byte("r"), Mutations: []*btpb.Mutation{{Mutation: &btpb.Mutation_DeleteFromRow_{DeleteFromRow: &btpb.Mutation_DeleteFromRow{}}}}})
	wantCode(t, "a bad table name", err, codes.InvalidArgument)
	_, err = e.raw.MutateRow(ctx, &btpb.MutateRowRequest{TableName: e.tableName("rows"), RowKey: []byte("r")})
	wantCode(t, "no mutations", err, codes.InvalidArgument)

	// Deletions: a column's time range [2000, 3000), a column, a family,
	// a row.
	m = bigtable.NewMutation()
	m.DeleteTimestampRange("cf", "a", 2000, 3000)
	e.apply(tbl, "r1", m)
	r, _ = tbl.ReadRow(ctx, "r1")
	if got := cellsOf(r); !slices.Equal(got, []string{"cf:a@3000=a3", "cf:a@1000=a1", "cf:b@5000=b5", "other:@7000=empty qualifier"}) {
		t.Fatalf("after deleting [2000, 3000) of cf:a: %v", got)
	}
	_, err = e.raw.MutateRow(ctx, &btpb.MutateRowRequest{TableName: e.tableName("rows"), RowKey: []byte("r1"), Mutations: []*btpb.Mutation{{
		Mutation: &btpb.Mutation_DeleteFromColumn_{DeleteFromColumn: &btpb.Mutation_DeleteFromColumn{FamilyName: "cf", ColumnQualifier: []byte("a"),
			TimeRange: &btpb.TimestampRange{StartTimestampMicros: 2000, EndTimestampMicros: 2500}}}}}})
	wantCode(t, "a time range bound not in milliseconds", err, codes.InvalidArgument)
	m = bigtable.NewMutation()
	m.DeleteCellsInColumn("cf", "a")
	e.apply(tbl, "r1", m)
	m = bigtable.NewMutation()
	m.DeleteCellsInFamily("other")
	e.apply(tbl, "r1", m)
	r, _ = tbl.ReadRow(ctx, "r1")
	if got := cellsOf(r); !slices.Equal(got, []string{"cf:b@5000=b5"}) {
		t.Fatalf("after deleting cf:a and family other: %v", got)
	}
	m = bigtable.NewMutation()
	m.DeleteRow()
	e.apply(tbl, "r1", m)
	if r, _ := tbl.ReadRow(ctx, "r1"); r != nil {
		t.Fatalf("a deleted row: %v", r)
	}

	// ApplyBulk: one status per entry, the bad entry alone fails.
	var keys []string
	var muts []*bigtable.Mutation
	for i := range 100 {
		m := bigtable.NewMutation()
		fam := "cf"
		if i == 37 {
			fam = "nope"
		}
		m.Set(fam, "n", 1000, []byte(fmt.Sprint(i)))
		keys = append(keys, fmt.Sprintf("bulk%03d", i))
		muts = append(muts, m)
	}
	errs, err := tbl.ApplyBulk(ctx, keys, muts)
	if err != nil || len(errs) != 100 {
		t.Fatalf("apply bulk: %v, %d errors", err, len(errs))
	}
	for i, err := range errs {
		switch i {
		case 37:
			wantCode(t, "bulk entry with a missing family", err, codes.NotFound)
		default:
			if err != nil {
				t.Fatalf("bulk entry %d: %v", i, err)
			}
		}
	}
	// A missing table fails the whole call, as on the service.
	if _, err := e.data.Open("missing").ApplyBulk(ctx, []string{"a", "b"}, []*bigtable.Mutation{muts[0], muts[1]}); status.Code(err) != codes.NotFound {
		t.Fatalf("apply bulk to a missing table: %v, want NotFound for the call", err)
	}
	// Malformed entries fail alone, without failing the batch.
	mr, err := e.raw.MutateRows(ctx, &btpb.MutateRowsRequest{TableName: e.tableName("rows"), Entries: []*btpb.MutateRowsRequest_Entry{
		{RowKey: []byte("bulk200"), Mutations: []*btpb.Mutation{setCell("cf", "n", 1000, "ok")}},
		{RowKey: []byte("bulk201"), Mutations: []*btpb.Mutation{setCell("cf", "n", 1500, "bad timestamp")}},
		{RowKey: nil, Mutations: []*btpb.Mutation{setCell("cf", "n", 1000, "no key")}},
		{RowKey: []byte("bulk202")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := mr.Recv()
	if err != nil || len(resp.Entries) != 4 {
		t.Fatalf("raw MutateRows: %v %v", resp, err)
	}
	for i, want := range []codes.Code{codes.OK, codes.InvalidArgument, codes.InvalidArgument, codes.InvalidArgument} {
		if got := codes.Code(resp.Entries[i].GetStatus().GetCode()); resp.Entries[i].Index != int64(i) || got != want {
			t.Fatalf("entry %d: index %d, %s, want %s", i, resp.Entries[i].Index, got, want)
		}
	}
	got := e.readKeys(tbl, bigtable.PrefixRange("bulk"))
	if len(got) != 100 || slices.Contains(got, "bulk037") || !slices.Contains(got, "bulk200") || !slices.IsSorted(got) {
		t.Fatalf("bulk rows: %d %v", len(got), got)
	}

	// Large values are split over chunks and joined by the client.
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16+7) // a little over 3 MiB
	m = bigtable.NewMutation()
	m.Set("cf", "big", 1000, big)
	m.Set("cf", "small", 1000, []byte("s"))
	e.apply(tbl, "big", m)
	r, err = tbl.ReadRow(ctx, "big")
	if err != nil || len(r["cf"]) != 2 || !bytes.Equal(r["cf"][0].Value, big) || string(r["cf"][1].Value) != "s" {
		t.Fatalf("a 3 MiB value: %v", err)
	}

	// PingAndWarm.
	if err := e.data.PingAndWarm(ctx); err != nil {
		t.Fatalf("ping and warm: %v", err)
	}
}

// fillRows writes rows a..z (keys "a" to "z"), each with cf:c = its key.
func (e *btEnv) fillRows(tbl *bigtable.Table) {
	e.t.Helper()
	var keys []string
	var muts []*bigtable.Mutation
	for c := 'a'; c <= 'z'; c++ {
		m := bigtable.NewMutation()
		m.Set("cf", "c", 1000, []byte(string(c)))
		keys = append(keys, string(c))
		muts = append(muts, m)
	}
	errs, err := tbl.ApplyBulk(e.ctx, keys, muts)
	if err != nil || errs != nil {
		e.t.Fatalf("fill: %v %v", err, errs)
	}
}

func TestBigtableClientRowSets(t *testing.T) {
	e := newBigtableEnv(t)
	ctx := e.ctx
	if err := e.admin.CreatePresplitTable(ctx, "sets", []string{"h", "q"}); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.CreateColumnFamily(ctx, "sets", "cf"); err != nil {
		t.Fatal(err)
	}
	tbl := e.data.Open("sets")
	e.fillRows(tbl)
	rangeList := bigtable.RowRangeList{bigtable.NewRange("x", "z"), bigtable.NewRange("b", "d"), bigtable.NewRange("c", "f")}
	// More keys than one window of parallel point reads, some absent.
	var many bigtable.RowList
	for c := 'z'; c >= 'a'; c-- {
		many = append(many, string(c), string(c)+"-absent")
	}
	for _, tc := range []struct {
		name string
		set  bigtable.RowSet
		opts []bigtable.ReadOption
		want string
	}{
		{"row list, out of order, duplicates, absent keys", bigtable.RowList{"q", "c", "a", "c", "zz", "p"}, nil, "acpq"},
		{"[b, e)", bigtable.NewRange("b", "e"), nil, "bcd"},
		{"[b, e]", bigtable.NewClosedRange("b", "e"), nil, "bcde"},
		{"(b, e)", bigtable.NewOpenRange("b", "e"), nil, "cd"},
		{"(b, e]", bigtable.NewOpenClosedRange("b", "e"), nil, "cde"},
		{"[b, e) closed-open", bigtable.NewClosedOpenRange("b", "e"), nil, "bcd"},
		{"[w, ∞)", bigtable.InfiniteRange("w"), nil, "wxyz"},
		{"(-∞, c]", bigtable.InfiniteReverseRange("c"), nil, "abc"},
		{"prefix", bigtable.PrefixRange("m"), nil, "m"},
		{"across tablet boundaries", bigtable.NewRange("f", "s"), nil, "fghijklmnopqr"},
		{"range list, overlapping", rangeList, nil, "bcdexy"},
		{"limit", bigtable.InfiniteRange(""), []bigtable.ReadOption{bigtable.LimitRows(5)}, "abcde"},
		{"limit across ranges", rangeList, []bigtable.ReadOption{bigtable.LimitRows(5)}, "bcdex"},
		{"reversed", bigtable.NewRange("f", "s"), []bigtable.ReadOption{bigtable.ReverseScan()}, "rqponmlkjihgf"},
		{"reversed list with a limit", rangeList, []bigtable.ReadOption{bigtable.ReverseScan(), bigtable.LimitRows(4)}, "yxed"},
		{"reversed row list", bigtable.RowList{"c", "q", "a"}, []bigtable.ReadOption{bigtable.ReverseScan()}, "qca"},
		{"many keys", many, nil, "abcdefghijklmnopqrstuvwxyz"},
		{"many keys with a limit", many, []bigtable.ReadOption{bigtable.LimitRows(20)}, "abcdefghijklmnopqrst"},
		{"many keys reversed with a limit", many, []bigtable.ReadOption{bigtable.ReverseScan(), bigtable.LimitRows(18)}, "zyxwvutsrqponmlkji"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(e.readKeys(tbl, tc.set, tc.opts...), ""); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}

	// Through the raw API: an inverted range, and a key over 64 KiB.
	rng := &btpb.RowRange{StartKey: &btpb.RowRange_StartKeyClosed{StartKeyClosed: []byte("d")}, EndKey: &btpb.RowRange_EndKeyOpen{EndKeyOpen: []byte("b")}}
	st, err := e.raw.ReadRows(ctx, &btpb.ReadRowsRequest{TableName: e.tableName("sets"), Rows: &btpb.RowSet{RowRanges: []*btpb.RowRange{rng}}})
	if err == nil {
		_, err = st.Recv()
	}
	wantCode(t, "an inverted range", err, codes.InvalidArgument)
	st, err = e.raw.ReadRows(ctx, &btpb.ReadRowsRequest{TableName: e.tableName("sets"), Rows: &btpb.RowSet{RowKeys: [][]byte{make([]byte, 64<<10+1)}}})
	if err == nil {
		_, err = st.Recv()
	}
	wantCode(t, "a key over 64 KiB", err, codes.InvalidArgument)

	// Request statistics when asked.
	var stats *bigtable.FullReadStats
	e.readKeys(tbl, bigtable.NewRange("a", "k"), bigtable.WithFullReadStats(func(s *bigtable.FullReadStats) { stats = s }))
	if stats == nil || stats.ReadIterationStats.RowsReturnedCount != 10 || stats.ReadIterationStats.CellsReturnedCount != 10 {
		t.Fatalf("read stats: %+v", stats)
	}

	// SampleRowKeys: the tablets' ends, the table's end last.
	samples, err := tbl.SampleRowKeys(ctx)
	if err != nil || !slices.Equal(samples, []string{"h", "q"}) {
		t.Fatalf("sample row keys: %q %v", samples, err)
	}
	ss, err := e.raw.SampleRowKeys(ctx, &btpb.SampleRowKeysRequest{TableName: e.tableName("sets")})
	if err != nil {
		t.Fatal(err)
	}
	var raw []string
	var last int64
	for {
		r, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.OffsetBytes < last {
			t.Fatalf("offsets go down: %d after %d", r.OffsetBytes, last)
		}
		raw, last = append(raw, string(r.RowKey)), r.OffsetBytes
	}
	if !slices.Equal(raw, []string{"h", "q", ""}) {
		t.Fatalf("raw samples: %q", raw)
	}

	// DropRowRange by prefix, then everything.
	m := bigtable.NewMutation()
	m.Set("cf", "c", 1000, []byte("x"))
	for _, k := range []string{"mm", "ma", "m\xff", "n"} {
		e.apply(tbl, k, m)
	}
	if err := e.admin.DropRowRange(ctx, "sets", "m"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.readKeys(tbl, bigtable.NewRange("l", "o")), ","); got != "l,n" {
		t.Fatalf("after dropping prefix m: %q", got)
	}
	if err := e.admin.DropAllRows(ctx, "sets"); err != nil {
		t.Fatal(err)
	}
	if got := e.readKeys(tbl, bigtable.InfiniteRange("")); len(got) != 0 {
		t.Fatalf("after dropping all rows: %v", got)
	}
	wantCode(t, "drop rows of a missing table", e.admin.DropAllRows(ctx, "missing"), codes.NotFound)
}

func TestBigtableClientConditionalAndReadModifyWrite(t *testing.T) {
	e := newBigtableEnv(t)
	ctx := e.ctx
	tbl := e.createTable("cond", "cf", "n")

	// No predicate: true when the row has any cell.
	setX := bigtable.NewMutation()
	setX.Set("cf", "x", 1000, []byte("set"))
	setY := bigtable.NewMutation()
	setY.Set("cf", "y", 1000, []byte("set"))
	var matched bool
	if err := tbl.Apply(ctx, "c1", bigtable.NewCondMutation(nil, setX, setY), bigtable.GetCondMutationResult(&matched)); err != nil || matched {
		t.Fatalf("no predicate, empty row: matched %v, %v", matched, err)
	}
	if err := tbl.Apply(ctx, "c1", bigtable.NewCondMutation(nil, setX, setY), bigtable.GetCondMutationResult(&matched)); err != nil || !matched {
		t.Fatalf("no predicate, row with a cell: matched %v, %v", matched, err)
	}
	r, _ := tbl.ReadRow(ctx, "c1")
	if got := cellsOf(r); !slices.Equal(got, []string{"cf:x@1000=set", "cf:y@1000=set"}) {
		t.Fatalf("after two conditional mutations: %v", got)
	}
	// A predicate filter that runs on the tablet server.
	del := bigtable.NewMutation()
	del.DeleteCellsInColumn("cf", "x")
	pred := bigtable.ChainFilters(bigtable.ColumnFilter("y"), bigtable.ValueFilter("se."))
	if err := tbl.Apply(ctx, "c1", bigtable.NewCondMutation(pred, del, nil), bigtable.GetCondMutationResult(&matched)); err != nil || !matched {
		t.Fatalf("predicate on cf:y: matched %v, %v", matched, err)
	}
	pred = bigtable.ValueFilter("nothing")
	if err := tbl.Apply(ctx, "c1", bigtable.NewCondMutation(pred, setY, del), bigtable.GetCondMutationResult(&matched)); err != nil || matched {
		t.Fatalf("a predicate that matches nothing: matched %v, %v", matched, err)
	}
	r, _ = tbl.ReadRow(ctx, "c1")
	if got := cellsOf(r); !slices.Equal(got, []string{"cf:y@1000=set"}) {
		t.Fatalf("after the predicate deleted cf:x: %v", got)
	}
	_, err := e.raw.CheckAndMutateRow(ctx, &btpb.CheckAndMutateRowRequest{TableName: e.tableName("cond"), RowKey: []byte("c1"),
		TrueMutations: []*btpb.Mutation{setCell("cf", "z", 999, "x")}})
	wantCode(t, "a bad timestamp in a branch", err, codes.InvalidArgument)

	// ReadModifyWrite: append and increment, with the new cells answered.
	rmw := bigtable.NewReadModifyWrite()
	rmw.AppendValue("cf", "log", []byte("ab"))
	rmw.Increment("n", "count", 5)
	r, err = tbl.ApplyReadModifyWrite(ctx, "ctr", rmw)
	if err != nil {
		t.Fatal(err)
	}
	rmw = bigtable.NewReadModifyWrite()
	rmw.AppendValue("cf", "log", []byte("cd"))
	rmw.Increment("n", "count", -7)
	if r, err = tbl.ApplyReadModifyWrite(ctx, "ctr", rmw); err != nil {
		t.Fatal(err)
	}
	if len(r["cf"]) != 1 || string(r["cf"][0].Value) != "abcd" || len(r["n"]) != 1 || int64(binary.BigEndian.Uint64(r["n"][0].Value)) != -2 ||
		r["n"][0].Timestamp%1000 != 0 || r["n"][0].Row != "ctr" {
		t.Fatalf("read-modify-write result: %v", r)
	}
	rmw = bigtable.NewReadModifyWrite()
	rmw.Increment("cf", "log", 1)
	_, err = tbl.ApplyReadModifyWrite(ctx, "ctr", rmw)
	wantCode(t, "increment of a 4-byte cell", err, codes.FailedPrecondition)
	rmw = bigtable.NewReadModifyWrite()
	rmw.Increment("nope", "c", 1)
	_, err = tbl.ApplyReadModifyWrite(ctx, "ctr", rmw)
	wantCode(t, "increment in a missing family", err, codes.NotFound)
}

// TestBigtableClientFilters runs the filter language through the client;
// the filters run on the tablet servers.
func TestBigtableClientFilters(t *testing.T) {
	e := newBigtableEnv(t)
	ctx := e.ctx
	tbl := e.createTable("filters", "cf", "meta")
	for _, row := range []struct {
		key   string
		cells [][4]string // family, qualifier, timestamp (ms), value
	}{
		{"r1", [][4]string{{"cf", "a", "1", "apple"}, {"cf", "a", "2", "apricot"}, {"cf", "b", "1", "banana"}, {"meta", "m", "3", "x"}}},
		{"r2", [][4]string{{"cf", "a", "5", "avocado"}, {"cf", "c", "1", "cherry"}}},
		{"s1", [][4]string{{"meta", "m", "1", "y"}}},
	} {
		m := bigtable.NewMutation()
		for _, c := range row.cells {
			var ms int64
			fmt.Sscan(c[2], &ms)
			m.Set(c[0], c[1], bigtable.Timestamp(ms*1000), []byte(c[3]))
		}
		e.apply(tbl, row.key, m)
	}
	read := func(f bigtable.Filter, opts ...bigtable.ReadOption) string {
		t.Helper()
		var rows []string
		opts = append(opts, bigtable.RowFilter(f))
		err := tbl.ReadRows(ctx, bigtable.InfiniteRange(""), func(r bigtable.Row) bool {
			rows = append(rows, r.Key()+":"+strings.Join(cellsOf(r), " "))
			return true
		}, opts...)
		if err != nil {
			t.Fatalf("filter %v: %v", f, err)
		}
		return strings.Join(rows, "; ")
	}
	for _, tc := range []struct {
		name   string
		filter bigtable.Filter
		want   string
	}{
		{"family", bigtable.FamilyFilter("meta"), "r1:meta:m@3000=x; s1:meta:m@1000=y"},
		{"column regex", bigtable.ColumnFilter("[bc]"), "r1:cf:b@1000=banana; r2:cf:c@1000=cherry"},
		{"value regex", bigtable.ValueFilter("a.*o.*"), "r1:cf:a@2000=apricot; r2:cf:a@5000=avocado"},
		{"row key regex", bigtable.RowKeyFilter("s.*"), "s1:meta:m@1000=y"},
		{"latest 1", bigtable.ChainFilters(bigtable.FamilyFilter("cf"), bigtable.LatestNFilter(1)), "r1:cf:a@2000=apricot cf:b@1000=banana; r2:cf:a@5000=avocado cf:c@1000=cherry"},
		{"cells per row limit", bigtable.CellsPerRowLimitFilter(1), "r1:cf:a@2000=apricot; r2:cf:a@5000=avocado; s1:meta:m@1000=y"},
		{"cells per row offset", bigtable.CellsPerRowOffsetFilter(3), "r1:meta:m@3000=x"},
		{"timestamp range", bigtable.TimestampRangeFilterMicros(2000, 4000), "r1:cf:a@2000=apricot meta:m@3000=x"},
		{"column range", bigtable.ColumnRangeFilter("cf", "b", "d"), "r1:cf:b@1000=banana; r2:cf:c@1000=cherry"},
		{"value range", bigtable.ValueRangeFilter([]byte("b"), []byte("d")), "r1:cf:b@1000=banana; r2:cf:c@1000=cherry"},
		{"strip value", bigtable.ChainFilters(bigtable.RowKeyFilter("s1"), bigtable.StripValueFilter()), "s1:meta:m@1000="},
		{"label", bigtable.ChainFilters(bigtable.RowKeyFilter("s1"), bigtable.LabelFilter("lbl")), "s1:meta:m@1000=y[lbl]"},
		{"interleave with duplicates", bigtable.ChainFilters(bigtable.RowKeyFilter("r2"), bigtable.InterleaveFilters(
			bigtable.ChainFilters(bigtable.ColumnFilter("a"), bigtable.LabelFilter("one")), bigtable.ChainFilters(bigtable.PassAllFilter(), bigtable.LabelFilter("two")))),
			"r2:cf:a@5000=avocado[one] cf:a@5000=avocado[two] cf:c@1000=cherry[two]"},
		{"condition", bigtable.ConditionFilter(bigtable.ValueFilter("cherry"), bigtable.FamilyFilter("cf"), bigtable.FamilyFilter("meta")),
			"r1:meta:m@3000=x; r2:cf:a@5000=avocado cf:c@1000=cherry; s1:meta:m@1000=y"},
		{"block all", bigtable.BlockAllFilter(), ""},
		{"pass all", bigtable.PassAllFilter(), "r1:cf:a@2000=apricot cf:a@1000=apple cf:b@1000=banana meta:m@3000=x; r2:cf:a@5000=avocado cf:c@1000=cherry; s1:meta:m@1000=y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := read(tc.filter); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	// A filter limits rows only by what it returns.
	if got := read(bigtable.FamilyFilter("meta"), bigtable.LimitRows(1)); got != "r1:meta:m@3000=x" {
		t.Fatalf("a filter with a limit: %q", got)
	}
	// Row sample: some rows of many, never all or none.
	sampled := e.createTable("sampled", "cf")
	var keys []string
	var muts []*bigtable.Mutation
	for i := range 400 {
		m := bigtable.NewMutation()
		m.Set("cf", "c", 1000, []byte("v"))
		keys, muts = append(keys, fmt.Sprintf("k%03d", i)), append(muts, m)
	}
	if errs, err := sampled.ApplyBulk(ctx, keys, muts); err != nil || errs != nil {
		t.Fatal(err, errs)
	}
	if n := len(e.readKeys(sampled, bigtable.InfiniteRange(""), bigtable.RowFilter(bigtable.RowSampleFilter(0.5)))); n < 100 || n > 300 {
		t.Fatalf("a 0.5 row sample of 400 rows kept %d", n)
	}

	// Filters the Go client cannot build: sink and value bitmask.
	rawRead := func(f *btpb.RowFilter) (string, error) {
		st, err := e.raw.ReadRows(ctx, &btpb.ReadRowsRequest{TableName: e.tableName("filters"), Filter: f})
		if err != nil {
			return "", err
		}
		var cells []string
		for {
			resp, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return strings.Join(cells, " "), nil
			}
			if err != nil {
				return strings.Join(cells, " "), err
			}
			for _, c := range resp.Chunks {
				s := fmt.Sprintf("%d=%s", c.TimestampMicros, c.Value)
				if len(c.Labels) > 0 {
					s += "[" + strings.Join(c.Labels, ",") + "]"
				}
				cells = append(cells, s)
			}
		}
	}
	chain := func(fs ...*btpb.RowFilter) *btpb.RowFilter {
		return &btpb.RowFilter{Filter: &btpb.RowFilter_Chain_{Chain: &btpb.RowFilter_Chain{Filters: fs}}}
	}
	key := func(re string) *btpb.RowFilter {
		return &btpb.RowFilter{Filter: &btpb.RowFilter_RowKeyRegexFilter{RowKeyRegexFilter: []byte(re)}}
	}
	label := func(l string) *btpb.RowFilter {
		return &btpb.RowFilter{Filter: &btpb.RowFilter_ApplyLabelTransformer{ApplyLabelTransformer: l}}
	}
	sink := &btpb.RowFilter{Filter: &btpb.RowFilter_Sink{Sink: true}}
	// The sink copies r2's cells with a label to the output, and the
	// chain's own output (block all) adds nothing.
	if got, err := rawRead(chain(key("r2"), label("s"), sink)); err != nil || got != "5000=avocado[s] 1000=cherry[s]" {
		t.Fatalf("sink: %q %v", got, err)
	}
	// 'y' (0x79) has every bit of 'x' (0x78) and one more: the mask 'y'
	// passes the one-byte value y and not x.
	mask := &btpb.RowFilter{Filter: &btpb.RowFilter_ValueBitmaskFilter{ValueBitmaskFilter: &btpb.ValueBitmask{Mask: []byte("y")}}}
	if got, err := rawRead(mask); err != nil || got != "1000=y" {
		t.Fatalf("value bitmask: %q %v", got, err)
	}
	// Invalid filters are InvalidArgument.
	for name, f := range map[string]*btpb.RowFilter{
		"a chain of one":      chain(key("r1")),
		"a bad regex":         key("("),
		"two labels in chain": chain(label("a"), label("b")),
		"a bad label":         label("UPPER"),
	} {
		if _, err := rawRead(f); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// interruptAfter fails the first ReadRows stream with Unavailable after
// it has sent n responses, and records every ReadRows request, so that a
// test sees the client resume with a narrowed request.
type interruptAfter struct {
	n        int
	mu       sync.Mutex
	requests []*btpb.ReadRowsRequest
	broken   bool
}

func (ia *interruptAfter) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !strings.HasSuffix(info.FullMethod, "/ReadRows") {
		return handler(srv, ss)
	}
	ia.mu.Lock()
	first := !ia.broken
	ia.broken = true
	ia.mu.Unlock()
	w := &countingStream{ServerStream: ss, ia: ia}
	if first {
		w.left = ia.n
	} else {
		w.left = -1
	}
	return handler(srv, w)
}

type countingStream struct {
	grpc.ServerStream
	ia   *interruptAfter
	left int // responses before the break; -1: never
}

func (s *countingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if req, ok := m.(*btpb.ReadRowsRequest); ok && err == nil {
		s.ia.mu.Lock()
		s.ia.requests = append(s.ia.requests, req)
		s.ia.mu.Unlock()
	}
	return err
}

func (s *countingStream) SendMsg(m any) error {
	if s.left == 0 {
		return status.Error(codes.Unavailable, "the test broke this stream")
	}
	if s.left > 0 {
		s.left--
	}
	return s.ServerStream.SendMsg(m)
}

// TestBigtableClientResumesBrokenStream: a ReadRows stream that breaks
// after some rows is resumed by the official client with the rest of the
// row set, and the rows arrive once each, in order, forward and
// reversed.
func TestBigtableClientResumesBrokenStream(t *testing.T) {
	c := newKVCluster(t, kvClusterConfig{servers: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	qkv := &querykv.KV{Client: c.kv, MasterAddr: c.msess.MasterAddr("")}
	defer qkv.Close()
	for _, reversed := range []bool{false, true} {
		t.Run(fmt.Sprintf("reversed=%v", reversed), func(t *testing.T) {
			ia := &interruptAfter{n: 3}
			// One row per response, so that the break falls between rows.
			e := startBigtableAPI(t, ctx, c, qkv, bigtableapi.Options{MaxResponseBytes: 1}, grpc.StreamInterceptor(ia.intercept))
			table := fmt.Sprintf("resume%v", reversed)
			tbl := e.createTable(table, "cf")
			e.fillRows(tbl)
			opts := []bigtable.ReadOption{bigtable.LimitRows(20)}
			want := "abcdefghijklmnopqrst"
			if reversed {
				opts = append(opts, bigtable.ReverseScan())
				want = "zyxwvutsrqponmlkjihg"
			}
			got := strings.Join(e.readKeys(tbl, bigtable.InfiniteRange(""), opts...), "")
			if got != want {
				t.Fatalf("rows after a broken stream: got %q, want %q", got, want)
			}
			ia.mu.Lock()
			defer ia.mu.Unlock()
			if len(ia.requests) != 2 {
				t.Fatalf("%d ReadRows requests, want 2 (the first and its resumption)", len(ia.requests))
			}
			resumed := ia.requests[1]
			rr := resumed.Rows.GetRowRanges()
			if resumed.RowsLimit != 17 || len(rr) != 1 {
				t.Fatalf("resumed request: %v", resumed)
			}
			if !reversed && string(rr[0].GetStartKeyOpen()) != "c" || reversed && string(rr[0].GetEndKeyOpen()) != "x" {
				t.Fatalf("resumed row range: %v", rr[0])
			}
		})
	}
}
