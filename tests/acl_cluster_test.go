package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
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

// TestClusterSecretAcrossProcesses runs a cluster of separate processes
// that share a secret file (-secret-file, from the environment): the
// cluster works for a tool that has the secret, and the Chubby cell and
// the tablet servers refuse calls without it. (TestACLsAgainstDemo checks
// the master's admin RPCs.)
func TestClusterSecretAcrossProcesses(t *testing.T) {
	bin := buildCellar(t)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret-across-processes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"CELLAR_CHUBBY", "CELLAR_MASTER", "CELLAR_TABLETSERVER", "CELLAR"} {
		t.Setenv(prefix+"_SECRET_FILE", secretFile)
	}
	chubby := freeLoopbackPort(t)
	startProcess(t, bin, "clients:", "chubby", "-id", "1", "-peers", "1="+freeLoopbackPort(t)+"/"+chubby,
		"-data", filepath.Join(dir, "chubby"), "-lease", "2s", "-grace", "2s", "-rtt", "10ms")
	startProcess(t, bin, "active master", "master", "-listen", freeLoopbackPort(t), "-rpc", freeLoopbackPort(t), "-chubby", chubby,
		"-scan-interval", "100ms", "-dfs", filepath.Join(dir, "dfs"))
	_, _, line := startProcessLine(t, bin, "serving on", "tabletserver", "-id", "ts1", "-listen", "127.0.0.1:0",
		"-chubby", chubby, "-dfs", filepath.Join(dir, "dfs"))
	tsAddr := strings.TrimSuffix(strings.Fields(line[strings.Index(line, "serving on ")+len("serving on "):])[0], ",")

	cellar := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(args[:2:2], append([]string{"-chubby", chubby}, args[2:]...)...)...).CombinedOutput()
		return string(out), err
	}
	// retry runs a command until it works: the master sets METADATA up
	// once it sees the tablet server.
	retry := func(args ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := cellar(args...)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("cellar %s with the secret: %v\n%s", strings.Join(args, " "), err, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	retry("table", "create", "t", "f")
	retry("kv", "put", "t", "r", "f:q", "v")
	if out, err := cellar("kv", "get", "t", "r"); err != nil || !strings.Contains(out, "\tv\n") {
		t.Fatalf("kv get with the secret: %v\n%s", err, out)
	}
	// The Chubby cell refuses a wrong secret.
	if out, err := cellar("table", "ls", "-secret", "wrong"); err == nil || !strings.Contains(out, "wrong or missing cell secret") {
		t.Fatalf("table ls with a wrong secret: %v\n%s", err, out)
	}
	// So does the tablet server, called directly.
	conn, err := grpc.NewClient("passthrough:///"+tsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ts := pb.NewTabletServerClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ts.ListTablets(ctx, &pb.ListTabletsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListTablets without the secret: %v", err)
	}
	withSecret := metadata.AppendToOutgoingContext(ctx, kvclient.SecretKey, "s3cret-across-processes")
	if _, err := ts.ListTablets(withSecret, &pb.ListTabletsRequest{}); err != nil {
		t.Fatalf("ListTablets with the secret: %v", err)
	}
	// A principal is trusted only with the secret.
	asAlice := metadata.AppendToOutgoingContext(ctx, kvclient.PrincipalKey, "alice", kvclient.SuperuserKey, "1")
	if _, err := ts.ReadRow(asAlice, &pb.ReadRowRequest{Table: "t", Row: []byte("r")}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ReadRow naming a principal without the secret: %v", err)
	}
}
