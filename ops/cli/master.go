package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/ops/coordlock"
)

// runMaster runs a master: a standby until it takes the master lock, then
// the active master until SIGINT or SIGTERM, or until it loses the lock.
func runMaster(args []string, env Env) int {
	fs := flag.NewFlagSet("master", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	listen := fs.String("listen", "127.0.0.1:9000", "address of the master's status pages, /healthz, /readyz, /servers and /metrics")
	rpcAddr := fs.String("rpc", "127.0.0.1:9001", "address of the master's admin RPCs (table management); it goes into the master file")
	chubby := fs.String("chubby", DefaultChubbyAddr, "client addresses of the Chubby cell's replicas, comma-separated")
	cellName := fs.String("cell", "", "the Chubby cell's name (default: the cell the replicas serve)")
	secret := fs.String("secret", "", "the cluster's shared secret (the Chubby cell's and the kv RPCs')")
	secretFile := fs.String("secret-file", "", secretFileUsage)
	scan := fs.Duration("scan-interval", time.Second, "how often the master looks at the tablet servers")
	dfsRoot := fs.String("dfs", filepath.Join("cellar-data", "dfs"), "root of the tablet servers' shared file system (as they mount it), for the file GC; empty: no GC")
	mergeSize := fs.Int64("merge-size", 0, "merge two adjacent tablets on one server when their sizes add up to less than this many bytes (0: never)")
	noBalance := fs.Bool("no-balance", false, "do not move tablets to even out the servers' tablet counts")
	lockDelay := fs.Duration("lock-delay", coordlock.DefaultMasterLockDelay, "lock-delay of the master lock: after this master fails, no other may take over for this long; the tablet servers trust its checked sequencer for half of it (at most 1m)")
	procFl := addProcessFlags(fs)
	pos, err := parseFlags(fs, args, env, "CELLAR_MASTER")
	if err != nil {
		return flagExit(err)
	}
	log, err := procFl.logger(env)
	if err != nil {
		return fail(env, "master", err)
	}
	if code := badSettings(env, "master", checkAddr("listen", *listen, false), checkAddr("rpc", *rpcAddr, false),
		checkAddrList("chubby", *chubby), checkPositive("scan-interval", *scan), checkNotNegative("merge-size", *mergeSize), checkLockDelay("lock-delay", *lockDelay)); code != 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "cellar master: unexpected argument %q\n", pos[0])
		return 2
	}
	if *secret, err = readSecret(*secret, *secretFile, false); err != nil {
		return fail(env, "master", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(env, "master", err)
	}
	rpcLn, err := net.Listen("tcp", *rpcAddr)
	if err != nil {
		ln.Close()
		return fail(env, "master", err)
	}
	defer rpcLn.Close()
	svc := &coordlock.Service{Client: client.Options{Cell: *cellName, Addrs: splitList(*chubby), Principal: "master", Secret: *secret}}
	openCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	sess, err := svc.NewSession(openCtx)
	cancel()
	if err != nil {
		ln.Close()
		return fail(env, "master", fmt.Errorf("connect to the Chubby cell at %s: %w", *chubby, err))
	}
	defer sess.Close(context.Background())
	fatal := make(chan error, 1)
	opts := master.Options{Addr: rpcLn.Addr().String(), Coord: coordlock.ForMaster{Service: svc, Session: sess, LockDelay: *lockDelay},
		ScanInterval: *scan, Logger: log.With("role", "master"), OnFatal: func(err error) { fatal <- err }, MergeSize: *mergeSize, NoBalance: *noBalance, Secret: *secret}
	if *dfsRoot != "" {
		opts.FS = dfs.NewLocal(*dfsRoot)
	}
	m := master.New(opts)
	pm, err := newRoleMetrics("master")
	if err != nil {
		ln.Close()
		return fail(env, "master", err)
	}

	web, err := serveHTTP(ln, masterStatus(env, pm.reg, m, sess))
	if err != nil {
		ln.Close()
		return fail(env, "master", err)
	}
	web.Mux.HandleFunc("/servers", serversHandler(m))
	pm.mount(web.Mux)
	defer web.close(context.Background())

	fmt.Fprintf(env.Stdout, "cellar master %s on %s: standby, waiting for the master lock\n", env.Version, ln.Addr())
	if err := m.Open(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(env.Stdout, "stopped while standby")
			return 0
		}
		return fail(env, "master", err)
	}
	admin := grpc.NewServer(append(kvclient.ServerOptions(*secret), pm.m.MasterServerOptions("master")...)...)
	masterpb.RegisterMasterServer(admin, master.AdminServer{M: m})
	go admin.Serve(rpcLn)
	defer admin.Stop()
	fmt.Fprintf(env.Stdout, "active master: %d tablet servers; admin RPCs on %s\n", len(m.Servers()), rpcLn.Addr())
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(shut); err != nil {
			return fail(env, "master", err)
		}
		fmt.Fprintln(env.Stdout, "stopped cleanly; the master lock is released")
		return 0
	case err := <-fatal:
		m.Close(context.Background())
		return fail(env, "master", err)
	}
}

// checkLockDelay checks a lock-delay against the cell's limit.
func checkLockDelay(flagName string, d time.Duration) error {
	if d < 0 || d > time.Minute {
		return fmt.Errorf("-%s %v must be from 0 to 1m, the cell's limit", flagName, d)
	}
	return nil
}
