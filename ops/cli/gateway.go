package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/coord/client"
	"github.com/cellardb/cellar/kv/bigtableapi"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/ops/coordlock"
	"github.com/cellardb/cellar/ops/querykv"
	"github.com/cellardb/cellar/ops/rawtcp"
	"github.com/cellardb/cellar/pgwire"
	"github.com/cellardb/cellar/query"
)

// DefaultBigtableAddr is where cellar demo and cellar gateway serve the
// Bigtable API: the port Google's emulator uses.
const DefaultBigtableAddr = "127.0.0.1:8086"

// runGateway runs the front doors of a cluster that runs elsewhere: the
// PostgreSQL protocol gateway and the Bigtable API, either or both. It is
// a client of the cluster like any other: a Chubby session finds the root
// tablet and the master, and kv/client reaches the tablet servers. It
// keeps no state, so several gateways can serve one cluster.
func runGateway(args []string, env Env) int {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	chubby := fs.String("chubby", DefaultChubbyAddr, "client addresses of the Chubby cell's replicas, comma-separated; the gateway finds the root tablet and the master there")
	cellName := fs.String("cell", "", "the Chubby cell's name (default: the cell the replicas serve)")
	secret := fs.String("secret", "", "the cluster's shared secret (the Chubby cell's and the kv RPCs')")
	secretFile := fs.String("secret-file", "", secretFileUsage)
	pgAddr := fs.String("pgwire", "127.0.0.1:5433", "address of the PostgreSQL protocol gateway (psql, drivers); empty: off")
	btAddr := fs.String("bigtable", DefaultBigtableAddr, "address of the Bigtable gRPC API (clients connect with BIGTABLE_EMULATOR_HOST); empty: off")
	users := fs.String("users", filepath.Join("cellar-data", "users.json"), "a PostgreSQL users file (SCRAM), looked at after the users in Chubby; cellar admin user add -users FILE writes it")
	tlsCert := fs.String("tls-cert", "", "PEM certificate for the PostgreSQL gateway's TLS (with -tls-key); clients upgrade with sslmode=require")
	tlsKey := fs.String("tls-key", "", "PEM private key of -tls-cert")
	tlsRequired := fs.Bool("tls-required", false, "refuse PostgreSQL connections that do not use TLS")
	httpAddr := fs.String("http", "127.0.0.1:0", httpFlagUsage)
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM or SIGINT, how long running statements and calls may take to finish before they are cancelled")
	procFl := addProcessFlags(fs)
	pos, err := parseFlags(fs, args, env, "CELLAR_GATEWAY")
	if err != nil {
		return flagExit(err)
	}
	log, err := procFl.logger(env)
	if err != nil {
		return fail(env, "gateway", err)
	}
	if code := badSettings(env, "gateway", checkAddrList("chubby", *chubby), checkAddr("pgwire", *pgAddr, true),
		checkAddr("bigtable", *btAddr, true), checkPair("tls-cert", *tlsCert, "tls-key", *tlsKey), checkPositive("drain-timeout", *drain)); code != 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "cellar gateway: unexpected argument %q\n", pos[0])
		return 2
	}
	if *pgAddr == "" && *btAddr == "" {
		fmt.Fprintln(env.Stderr, "cellar gateway: both -pgwire and -bigtable are off; nothing to serve")
		return 2
	}
	if *secret, err = readSecret(*secret, *secretFile, false); err != nil {
		return fail(env, "gateway", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	pm, err := newRoleMetrics(gatewayServer)
	if err != nil {
		return fail(env, "gateway", err)
	}
	var sqlTables *query.Tables // set before the gateway serves
	// The users in Chubby (once bound to the gateway's session), then the file's.
	clusterUsers := &coordlock.Users{Fallback: &pgwire.FileUsers{Path: *users}}
	pgOpts := pgwire.Options{
		StatementDone: pm.m.Statement(gatewayServer),
		NewSession: func(o query.SessionOptions) (pgwire.Session, error) {
			o.Tables = sqlTables
			return query.NewSession(o)
		},
		Users:       clusterUsers,
		TLSRequired: *tlsRequired,
		Logger:      log.With("role", "gateway"),
	}
	if *tlsCert != "" || *tlsKey != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fail(env, "gateway", fmt.Errorf("TLS: %w", err))
		}
		pgOpts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if *pgAddr != "" {
		if err := pgOpts.Validate(); err != nil {
			return fail(env, "gateway", err)
		}
	}

	svc := &coordlock.Service{Client: client.Options{Cell: *cellName, Addrs: splitList(*chubby), Principal: "gateway", Secret: *secret}}
	openCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	sess, err := svc.NewSession(openCtx)
	cancel()
	if err != nil {
		return fail(env, "gateway", fmt.Errorf("connect to the Chubby cell at %s: %w", *chubby, err))
	}
	clusterUsers.Bind(sess)
	kvc := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}, Secret: *secret})
	gw := &gatewayKV{sess: sess, kv: &querykv.KV{Client: kvc, MasterAddr: sess.MasterAddr(""), Secret: *secret, ACLs: coordlock.ACLFiles{Session: sess}}}

	fmt.Fprintf(env.Stdout, "cellar gateway %s: a client of the cluster in the Chubby cell at %s\n", env.Version, *chubby)
	var pg *pgwire.Server
	if *pgAddr != "" {
		ln, err := net.Listen("tcp", *pgAddr)
		if err != nil {
			gw.close(context.Background())
			return fail(env, "gateway", fmt.Errorf("pgwire: %w", err))
		}
		sqlTables = query.NewTables(gw.kv)
		pg = pgwire.New(pgOpts)
		if _, err := pm.m.AddPgwire(gatewayServer, pg); err != nil {
			ln.Close()
			gw.close(context.Background())
			return fail(env, "gateway", err)
		}
		go pg.Serve(rawtcp.Listener(ln))
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		fmt.Fprintf(env.Stdout, "  sql:      psql \"postgresql://cellar@%s:%s/cellar\"\n", host, port)
	}
	var bt *bigtableGateway
	if *btAddr != "" {
		if bt, err = startBigtable(*btAddr, gw.kv, coordlock.TokenFiles{Session: sess}, pm.m.BigtableServerOptions(gatewayServer)...); err != nil {
			if pg != nil {
				pg.Close(context.Background())
			}
			gw.close(context.Background())
			return fail(env, "gateway", err)
		}
		fmt.Fprintf(env.Stdout, "  bigtable: export BIGTABLE_EMULATOR_HOST=%s   (any project and instance)\n", bt.addr)
	}
	web, err := listenHTTP(*httpAddr, gatewayStatus(env, pm.reg, gw, pg))
	if err != nil {
		if pg != nil {
			pg.Close(context.Background())
		}
		bt.close(context.Background())
		gw.close(context.Background())
		return fail(env, "gateway", err)
	}
	if web != nil {
		pm.mount(web.Mux)
	}
	defer web.close(context.Background())
	fmt.Fprintf(env.Stdout, "  http:     %s\n", web.url())
	fmt.Fprintln(env.Stdout, "Press Ctrl-C to stop.")

	<-ctx.Done()
	fmt.Fprintln(env.Stdout, "\nstopping...")
	shut, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	var errs []error
	if pg != nil {
		errs = append(errs, pg.Close(shut))
	}
	bt.close(shut)
	errs = append(errs, gw.close(shut))
	if err := errors.Join(errs...); err != nil {
		return fail(env, "gateway", err)
	}
	fmt.Fprintln(env.Stdout, "stopped cleanly")
	return 0
}

// bigtableGateway serves the Bigtable API (kv/bigtableapi) over a
// cluster: rows through the kv client, schemas through the master, the
// same tables SQL sees.
type bigtableGateway struct {
	srv  *grpc.Server
	addr string
}

// startBigtable listens on addr and serves the Bigtable API over kv; the
// calls' tokens name their principals (kv/bigtableapi's auth.go), and
// opts (the metrics' interceptors) are added to its gRPC server's.
func startBigtable(addr string, kv *querykv.KV, tokens bigtableapi.Tokens, opts ...grpc.ServerOption) (*bigtableGateway, error) {
	api, err := bigtableapi.New(bigtableapi.Options{Rows: kv.Client, Admin: kv, Tokens: tokens})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bigtable API: %w", err)
	}
	// Stream workers keep their goroutines, and so their grown stacks:
	// a fresh goroutine per call grows its stack through the read path on
	// every request (a sixth of a read's CPU).
	srv := grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(bigtableapi.MaxRequestBytes), grpc.NumStreamWorkers(uint32(8*runtime.GOMAXPROCS(0))))...)
	api.Register(srv)
	go srv.Serve(rawtcp.Listener(ln))
	return &bigtableGateway{srv: srv, addr: ln.Addr().String()}, nil
}

// close lets the calls in flight finish until ctx ends, then cuts them
// off. A nil gateway (the API is off) does nothing.
func (b *bigtableGateway) close(ctx context.Context) {
	if b == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		b.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		b.srv.Stop()
		<-done
	}
}
