package tests

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
)

// TestACLChangeReachesTabletServersByEvent: a tablet server drops its
// cached ACL when Chubby reports that the ACL file changed, well before
// the cache's TTL (5 s) would have.
func TestACLChangeReachesTabletServersByEvent(t *testing.T) {
	c := newKVCluster(t, kvClusterConfig{servers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	schema := model.Schema{Families: []model.Family{{Name: "f"}, {Name: "g"}}}
	if err := c.master.CreateTable(ctx, "t", schema, nil); err != nil {
		t.Fatal(err)
	}
	alice := model.WithPrincipal(ctx, model.Principal{Name: "alice"})
	write := func() error {
		return c.kv.Apply(alice, "t", &model.RowMutation{Row: []byte("r"), Mutations: []model.Mutation{model.SetCell("f", []byte("q"), model.ServerTimestamp, []byte("v"))}})
	}
	// Retry until the table's tablet is served; the server then caches
	// that t has no ACL.
	for {
		err := write()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("write to an open table: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	err := coordlock.ACLFiles{Session: c.msess}.UpdateACL(ctx, "t", func(a *model.ACL) (*model.ACL, error) {
		a = &model.ACL{}
		a.Grant("f", "alice", true, false)
		return a, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		err := write()
		if status.Code(err) == codes.PermissionDenied {
			break
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("3 s after the ACL changed alice still writes (%v): the event did not drop the cached ACL", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the new ACL held after %v", time.Since(start))
}
