package tabletserver

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// memACLs is an ACL store in memory, standing in for the lock service.
type memACLs struct {
	mu    sync.Mutex
	files map[string][]byte
	reads int
}

func (m *memACLs) ReadACL(ctx context.Context, table string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	b, ok := m.files[table]
	return b, ok, nil
}

func (m *memACLs) put(table string, a *model.ACL) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[table] = a.Marshal()
}

// as returns ctx with the metadata of a call with secret acting for
// principal ("" none).
func as(secret, principal string) context.Context {
	var kv []string
	if secret != "" {
		kv = append(kv, client.SecretKey, secret)
	}
	if principal != "" {
		kv = append(kv, client.PrincipalKey, principal)
	}
	return metadata.AppendToOutgoingContext(context.Background(), kv...)
}

func TestSecretRequired(t *testing.T) {
	ts := startServer(t, func(o *Options) { o.Secret = "s3cret" })
	for _, ctx := range []context.Context{as("", ""), as("wrong", ""), as("", "alice")} {
		if _, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("a")}); code(err) != codes.Unauthenticated {
			t.Fatalf("ReadRow without the secret: %v", err)
		}
		if _, err := ts.cli.ListTablets(ctx, &pb.ListTabletsRequest{}); code(err) != codes.Unauthenticated {
			t.Fatalf("ListTablets without the secret: %v", err)
		}
		st, err := ts.cli.Scan(ctx, &pb.ScanRequest{Table: "t"})
		if err == nil {
			_, err = st.Recv()
		}
		if code(err) != codes.Unauthenticated {
			t.Fatalf("Scan without the secret: %v", err)
		}
	}
	if _, err := ts.cli.MutateRow(as("s3cret", ""), &pb.MutateRowRequest{Table: "t", Row: []byte("a"), Mutations: []*pb.Mutation{set("f", "q", "v")}}); err != nil {
		t.Fatalf("MutateRow with the secret: %v", err)
	}
}

func TestACLs(t *testing.T) {
	acls := &memACLs{files: map[string][]byte{}}
	now := time.Unix(1000, 0)
	var clock sync.Mutex
	ts := startServer(t, func(o *Options) {
		o.Secret = "s"
		o.ACLs = acls
		o.ACLTTL = 10 * time.Second
		o.Now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	})
	alice, bob, member := as("s", "alice"), as("s", "bob"), as("s", "")
	write := func(ctx context.Context, fam string) error {
		_, err := ts.cli.MutateRow(ctx, &pb.MutateRowRequest{Table: "t", Row: []byte("r1"), Mutations: []*pb.Mutation{set(fam, "q", "v")}})
		return err
	}
	read := func(ctx context.Context, fams ...string) error {
		_, err := ts.cli.ReadRow(ctx, &pb.ReadRowRequest{Table: "t", Row: []byte("r1"), Filter: &pb.Filter{Families: fams}})
		return err
	}
	scan := func(ctx context.Context, fams ...string) error {
		st, err := ts.cli.Scan(ctx, &pb.ScanRequest{Table: "t", Filter: &pb.Filter{Families: fams}})
		for err == nil {
			_, err = st.Recv()
		}
		if err == io.EOF {
			return nil
		}
		return err
	}
	// No ACL: the table is open.
	if err := write(bob, "g"); err != nil {
		t.Fatalf("write to an open table: %v", err)
	}

	a := &model.ACL{}
	a.Grant("f", "alice", true, false)
	acls.put("t", a)
	ts.srv.Invalidate("t")

	if err := read(alice, "f"); err != nil {
		t.Fatalf("alice reads f: %v", err)
	}
	if err := scan(alice, "f"); err != nil {
		t.Fatalf("alice scans f: %v", err)
	}
	for name, err := range map[string]error{
		"read g": read(alice, "g"), "read every family": read(alice), "scan g": scan(alice, "g"),
		"scan every family": scan(alice), "write f": write(alice, "f"), "bob reads f": read(bob, "f"),
	} {
		if code(err) != codes.PermissionDenied {
			t.Fatalf("%s: %v, want PermissionDenied", name, err)
		}
	}
	if err := read(alice, "g"); !strings.Contains(err.Error(), `"alice"`) || !strings.Contains(err.Error(), `family "g" of table "t"`) {
		t.Fatalf("the denial does not name principal, family and table: %v", err)
	}
	// A row deletion writes every family.
	_, err := ts.cli.MutateRow(alice, &pb.MutateRowRequest{Table: "t", Row: []byte("r1"),
		Mutations: []*pb.Mutation{{Mutation: &pb.Mutation_DeleteRow_{DeleteRow: &pb.Mutation_DeleteRow{}}}}})
	if code(err) != codes.PermissionDenied {
		t.Fatalf("DeleteRow: %v", err)
	}
	// ReadModifyWrite reads and writes; MutateRows denies entry by entry.
	_, err = ts.cli.ReadModifyWrite(alice, &pb.ReadModifyWriteRequest{Table: "t", Row: []byte("r1"),
		Rules: []*pb.ReadModifyWriteRequest_Rule{{Family: "f", Qualifier: []byte("n"), Rule: &pb.ReadModifyWriteRequest_Rule_Increment{Increment: 1}}}})
	if code(err) != codes.PermissionDenied {
		t.Fatalf("ReadModifyWrite: %v", err)
	}
	resp, err := ts.cli.MutateRows(alice, &pb.MutateRowsRequest{Table: "t", Entries: []*pb.MutateRowsRequest_Entry{{Row: []byte("x"), Mutations: []*pb.Mutation{set("f", "q", "v")}}}})
	if err != nil || codes.Code(resp.Statuses[0].Code) != codes.PermissionDenied {
		t.Fatalf("MutateRows: %v %v", resp, err)
	}
	// A readable-only read of every family reads what alice may read, if
	// she may read the families it requires.
	if err := write(member, "f"); err != nil {
		t.Fatal(err)
	}
	resp2, err := ts.cli.ReadRow(alice, &pb.ReadRowRequest{Table: "t", Row: []byte("r1"), Filter: &pb.Filter{ReadableOnly: true, RequireFamilies: []string{"f"}}})
	if err != nil || !resp2.Found {
		t.Fatalf("readable-only read: %v %v", resp2, err)
	}
	for _, c := range resp2.Row.Cells {
		if c.Family != "f" {
			t.Fatalf("readable-only read returned a cell of %q", c.Family)
		}
	}
	if _, err := ts.cli.ReadRow(alice, &pb.ReadRowRequest{Table: "t", Row: []byte("r1"), Filter: &pb.Filter{ReadableOnly: true, RequireFamilies: []string{"g"}}}); code(err) != codes.PermissionDenied {
		t.Fatalf("readable-only read requiring g: %v", err)
	}
	if _, err := ts.cli.ReadRow(bob, &pb.ReadRowRequest{Table: "t", Row: []byte("r1"), Filter: &pb.Filter{ReadableOnly: true}}); code(err) != codes.PermissionDenied {
		t.Fatalf("readable-only read by bob, who may read nothing: %v", err)
	}
	// Cluster members and superusers bypass ACLs.
	if err := write(member, "g"); err != nil {
		t.Fatalf("a cluster member writes: %v", err)
	}
	su := metadata.AppendToOutgoingContext(alice, client.SuperuserKey, "1")
	if err := write(su, "g"); err != nil {
		t.Fatalf("a superuser writes: %v", err)
	}

	// A revoke: the cached ACL holds until its TTL ends or an
	// invalidation drops it.
	a.Revoke("f", "alice", true, false)
	a.Grant("g", "bob", false, true)
	acls.put("t", a)
	if err := read(alice, "f"); err != nil {
		t.Fatalf("within the TTL the cached ACL holds: %v", err)
	}
	clock.Lock()
	now = now.Add(10 * time.Second)
	clock.Unlock()
	if err := read(alice, "f"); code(err) != codes.PermissionDenied {
		t.Fatalf("after the TTL the revoke holds: %v", err)
	}
	if err := write(bob, "g"); err != nil {
		t.Fatalf("bob writes g after the grant: %v", err)
	}
	a.Revoke(model.AnyFamily, "bob", true, true)
	acls.put("t", a)
	ts.srv.Invalidate("t")
	if err := write(bob, "g"); code(err) != codes.PermissionDenied {
		t.Fatalf("after an invalidation the revoke holds: %v", err)
	}
}
