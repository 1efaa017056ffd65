package cli

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/cellardb/cellar/coord/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/ops/coordlock"
	"github.com/cellardb/cellar/ops/faults"
	"github.com/cellardb/cellar/ops/rawtcp"
)

// runTabletServer runs one tablet server until SIGINT or SIGTERM, or until
// its lock file in the Chubby cell is deleted.
func runTabletServer(args []string, env Env) int {
	fs := flag.NewFlagSet("tabletserver", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	host, _ := os.Hostname()
	id := fs.String("id", host, "this server's name; each start registers as <id>-<start time in hex ms>, in /ls/<cell>/cellar/servers/")
	listen := fs.String("listen", "127.0.0.1:9100", "address to serve the data RPCs on")
	advertise := fs.String("advertise", "", "address clients reach the server at (default: the listening address)")
	dfsRoot := fs.String("dfs", filepath.Join("cellar-data", "dfs"), "root of the shared file system that every tablet server of the cluster mounts: commit logs and SSTables")
	chubby := fs.String("chubby", DefaultChubbyAddr, "client addresses of the Chubby cell's replicas, comma-separated")
	cellName := fs.String("cell", "", "the Chubby cell's name (default: the cell the replicas serve)")
	secret := fs.String("secret", "", "the cluster's shared secret (the Chubby cell's and the kv RPCs')")
	secretFile := fs.String("secret-file", "", secretFileUsage)
	splitSize := fs.Int64("split-size", 128<<20, "size in bytes at which a tablet splits in two (0: never)")
	httpAddr := fs.String("http", "127.0.0.1:0", httpFlagUsage)
	faultInjection := fs.Bool("fault-injection", false, faultInjectionUsage)
	procFl := addProcessFlags(fs)
	pos, err := parseFlags(fs, args, env, "CELLAR_TABLETSERVER")
	if err != nil {
		return flagExit(err)
	}
	log, err := procFl.logger(env)
	if err != nil {
		return fail(env, "tabletserver", err)
	}
	if code := badSettings(env, "tabletserver", checkPath("id", *id), checkAddr("listen", *listen, false),
		checkAddr("advertise", *advertise, true), checkPath("dfs", *dfsRoot), checkAddrList("chubby", *chubby),
		checkNotNegative("split-size", *splitSize)); code != 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "cellar tabletserver: unexpected argument %q\n", pos[0])
		return 2
	}
	if *secret, err = readSecret(*secret, *secretFile, false); err != nil {
		return fail(env, "tabletserver", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if err := os.MkdirAll(*dfsRoot, 0o755); err != nil {
		return fail(env, "tabletserver", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(env, "tabletserver", err)
	}
	addr := *advertise
	if addr == "" {
		addr = ln.Addr().String()
	}
	fatal := make(chan error, 1)
	svc := &coordlock.Service{Client: client.Options{Cell: *cellName, Addrs: splitList(*chubby), Principal: "tabletserver:" + *id, Secret: *secret}}
	pm, err := newProcessMetrics()
	if err != nil {
		ln.Close()
		return fail(env, "tabletserver", err)
	}
	var store dfs.FS = dfs.NewLocal(*dfsRoot)
	var faulty *dfs.Faulty
	clock := &faults.Clock{}
	if *faultInjection {
		faulty = dfs.NewFaulty(store)
		store = faulty
	}
	openCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	role, err := StartTabletServer(openCtx, svc, TabletServerConfig{Name: *id, Addr: addr, FS: store, SplitSize: *splitSize,
		Logger: log.With("role", "tabletserver"), OnFatal: func(err error) { fatal <- err }, Metrics: pm.m, Secret: *secret, Clock: clock.Now})
	cancel()
	if err != nil {
		ln.Close()
		return fail(env, "tabletserver", fmt.Errorf("%w (Chubby at %s)", err, *chubby))
	}
	srv := role.srv
	go srv.Serve(rawtcp.Listener(ln))
	web, err := listenHTTP(*httpAddr, tabletServerStatus(env, pm.reg, role))
	if err == nil {
		err = pm.attach(web, role.store.Name())
	}
	if err == nil && *faultInjection {
		err = mountFaults(web, faults.Options{FS: faulty, Clock: clock, Logger: log.With("role", "tabletserver")})
	}
	if err != nil {
		web.close(context.Background())
		role.Close(context.Background())
		return fail(env, "tabletserver", err)
	}
	defer web.close(context.Background())
	fmt.Fprintf(env.Stdout, "cellar tabletserver %s: %s serving on %s, registered as %s\n", env.Version, *id, addr, srv.Path())
	fmt.Fprintf(env.Stdout, "  pid %s, dfs root %s\n", strconv.Itoa(os.Getpid()), *dfsRoot)
	fmt.Fprintf(env.Stdout, "  http:    %s\n", web.url())

	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := role.Close(shut); err != nil {
			return fail(env, "tabletserver", err)
		}
		fmt.Fprintln(env.Stdout, "stopped cleanly; the lock is released")
		return 0
	case err := <-fatal:
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		role.Close(shut)
		return fail(env, "tabletserver", fmt.Errorf("%w: the master has taken this server's tablets away; exiting", err))
	}
}
