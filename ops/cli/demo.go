package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/tabletpb"
	"github.com/cellardb/cellar/ops/coordlock"
	"github.com/cellardb/cellar/ops/querykv"
	"github.com/cellardb/cellar/ops/rawtcp"
	"github.com/cellardb/cellar/pgwire"
	"github.com/cellardb/cellar/query"
)

// runDemo runs every part of cellar in one process: a Chubby cell of one
// or three replicas, three tablet servers over one dfs root, the master,
// the HTTP status endpoints, and the gateway's two front doors, the
// PostgreSQL protocol and the Bigtable API.
func runDemo(args []string, env Env) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	data := fs.String("data", "./cellar-data", "directory for all data; it survives restarts")
	httpAddr := fs.String("http", "127.0.0.1:8080", "address of the status pages, /metrics, /healthz and /readyz")
	chubbyAddr := fs.String("chubby", DefaultChubbyAddr, "client address of the Chubby cell's first replica; the others take the next ports, and Raft the ports 100 above")
	replicas := fs.Int("chubby-replicas", 1, "replicas in the Chubby cell: 1 or 3")
	tsAddr := fs.String("tabletserver", "127.0.0.1:9100", "address of the first tablet server's data RPCs; the others take the next ports (port 0: any free ports)")
	tsCount := fs.Int("tabletservers", 3, "tablet servers to run")
	masterAddr := fs.String("master", "127.0.0.1:9001", "address of the master's admin RPCs")
	pgAddr := fs.String("pgwire", "127.0.0.1:5433", "address of the PostgreSQL protocol gateway (psql, drivers)")
	btAddr := fs.String("bigtable", DefaultBigtableAddr, "address of the Bigtable gRPC API (clients connect with BIGTABLE_EMULATOR_HOST); empty: off")
	tlsCert := fs.String("tls-cert", "", "PEM certificate for the gateway's TLS (with -tls-key); clients upgrade with sslmode=require")
	tlsKey := fs.String("tls-key", "", "PEM private key of -tls-cert")
	tlsRequired := fs.Bool("tls-required", false, "refuse gateway connections that do not use TLS")
	procFl := addProcessFlags(fs)
	secret := fs.String("secret", "", "the cluster's shared secret for the kv RPCs (default: the one in DATA/secret, made on the first run)")
	secretFile := fs.String("secret-file", "", secretFileUsage)
	pos, err := parseFlags(fs, args, env, "CELLAR_DEMO")
	if err != nil {
		return flagExit(err)
	}
	log, err := procFl.logger(env)
	if err != nil {
		return fail(env, "demo", err)
	}
	if code := badSettings(env, "demo", checkPath("data", *data), checkAddr("http", *httpAddr, false), checkAddr("chubby", *chubbyAddr, false),
		checkAddr("tabletserver", *tsAddr, false), checkAddr("master", *masterAddr, false), checkAddr("pgwire", *pgAddr, false),
		checkAddr("bigtable", *btAddr, true), checkPair("tls-cert", *tlsCert, "tls-key", *tlsKey)); code != 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "cellar demo: unexpected argument %q\n", pos[0])
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *tsCount < 1 {
		fmt.Fprintf(env.Stderr, "cellar demo: -tabletservers %d: at least one is needed\n", *tsCount)
		return 2
	}
	lock, err := lockDir(*data, "cellar demo")
	if err != nil {
		return fail(env, "demo", err)
	}
	defer lock.Close()
	pm, err := newRoleMetrics("demo") // one registry for every role
	if err != nil {
		return fail(env, "demo", err)
	}
	// The gateway: loopback connections of user cellar to database cellar
	// are trusted; everyone else authenticates with SCRAM against the
	// users of `cellar admin user add`. Its options are checked before
	// anything starts.
	var sqlTables *query.Tables // set once the cluster runs, before the gateway serves
	// The users in Chubby (once bound to the gateway's session), then the file's.
	users := &coordlock.Users{Fallback: &pgwire.FileUsers{Path: filepath.Join(*data, "users.json")}}
	gwOpts := pgwire.Options{
		StatementDone: pm.m.Statement(gatewayServer),
		NewSession: func(o query.SessionOptions) (pgwire.Session, error) {
			o.Tables = sqlTables
			return query.NewSession(o)
		},
		Users:       users,
		TLSRequired: *tlsRequired,
		Logger:      log.With("role", "gateway"),
	}
	if *tlsCert != "" || *tlsKey != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fail(env, "demo", fmt.Errorf("gateway TLS: %w", err))
		}
		gwOpts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if err := gwOpts.Validate(); err != nil {
		return fail(env, "demo", err)
	}
	if *secret, err = readSecret(*secret, *secretFile, false); err == nil {
		*secret, err = demoSecret(*data, *secret)
	}
	if err != nil {
		return fail(env, "demo", err)
	}
	dfsRoot := filepath.Join(*data, "dfs")
	if err := os.MkdirAll(dfsRoot, 0o755); err != nil {
		return fail(env, "demo", err)
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return fail(env, "demo", fmt.Errorf("status pages: %w", err))
	}

	cellReplicas, err := startDemoCell(ctx, *data, *chubbyAddr, *replicas, env, log, pm)
	if err != nil {
		ln.Close()
		return fail(env, "demo", err)
	}
	roles, err := startDemoRoles(ctx, dfsRoot, *tsCount, cellReplicas, *tsAddr, *masterAddr, *secret, env, log, pm)
	if err != nil {
		ln.Close()
		closeReplicas(env, "demo", cellReplicas...)
		return fail(env, "demo", err)
	}
	gw, err := openGatewayKV(ctx, cellReplicas, roles)
	if err != nil {
		ln.Close()
		roles.close(context.Background())
		closeReplicas(env, "demo", cellReplicas...)
		return fail(env, "demo", err)
	}
	sqlTables = query.NewTables(gw.kv)
	users.Bind(gw.sess)
	pgln, err := net.Listen("tcp", *pgAddr)
	if err != nil {
		gw.close(context.Background())
		ln.Close()
		roles.close(context.Background())
		closeReplicas(env, "demo", cellReplicas...)
		return fail(env, "demo", fmt.Errorf("pgwire gateway: %w", err))
	}
	gateway := pgwire.New(gwOpts)
	if _, err := pm.m.AddPgwire(gatewayServer, gateway); err != nil {
		pgln.Close()
		gw.close(context.Background())
		ln.Close()
		roles.close(context.Background())
		closeReplicas(env, "demo", cellReplicas...)
		return fail(env, "demo", err)
	}
	go gateway.Serve(rawtcp.Listener(pgln))
	var bt *bigtableGateway
	if *btAddr != "" {
		if bt, err = startBigtable(*btAddr, gw.kv, coordlock.TokenFiles{Session: gw.sess}, pm.m.BigtableServerOptions(gatewayServer)...); err != nil {
			gateway.Close(context.Background())
			gw.close(context.Background())
			ln.Close()
			roles.close(context.Background())
			closeReplicas(env, "demo", cellReplicas...)
			return fail(env, "demo", err)
		}
	}
	web, err := serveDemoHTTP(ln, env, pm.reg, cellReplicas, roles, gw, gateway)
	if err != nil {
		bt.close(context.Background())
		gateway.Close(context.Background())
		gw.close(context.Background())
		ln.Close()
		roles.close(context.Background())
		closeReplicas(env, "demo", cellReplicas...)
		return fail(env, "demo", err)
	}
	pm.mount(web.Mux)

	fmt.Fprintf(env.Stdout, "cellar demo %s\n", env.Version)
	fmt.Fprintf(env.Stdout, "  data:    %s (the dfs root is %s)\n", *data, dfsRoot)
	fmt.Fprintf(env.Stdout, "  secret:  the kv RPCs' cluster secret is in %s (cellar table, kv and admin take -secret-file)\n", filepath.Join(*data, "secret"))
	fmt.Fprintf(env.Stdout, "  status:  http://%s/   (/metrics, /healthz, /readyz)\n", ln.Addr())
	fmt.Fprintf(env.Stdout, "  chubby:  cell %q, %d replica(s), clients on %s\n", DefaultCell, len(cellReplicas), cellReplicas[0].ClientAddr())
	lockFlag, chubbyFlag := "", ""
	if a := cellReplicas[0].ClientAddr(); a != DefaultChubbyAddr {
		lockFlag, chubbyFlag = "-addr "+a+" ", "-chubby "+a+" "
	}
	fmt.Fprintf(env.Stdout, "           try: cellar lock ls %s/ls/local/\n", lockFlag)
	for i, ts := range roles.ts {
		fmt.Fprintf(env.Stdout, "  tablet server: on %s, registered as %s\n", roles.tsAddrs[i], ts.srv.Path())
	}
	fmt.Fprintf(env.Stdout, "  master:  active, admin RPCs on %s; http://%s/servers lists the tablet servers\n", roles.masterAddr, ln.Addr())
	fmt.Fprintf(env.Stdout, "           try: cellar table create %susers profile\n", chubbyFlag)
	fmt.Fprintf(env.Stdout, "                cellar kv put %susers alice profile:name Alice\n", chubbyFlag)
	fmt.Fprintf(env.Stdout, "                cellar kv scan %susers\n", chubbyFlag)
	pgHost, pgPort, _ := net.SplitHostPort(pgln.Addr().String())
	fmt.Fprintf(env.Stdout, "  sql:     psql \"postgresql://cellar@%s:%s/cellar\"\n", pgHost, pgPort)
	if bt != nil {
		fmt.Fprintf(env.Stdout, "  bigtable: export BIGTABLE_EMULATOR_HOST=%s   (then any Bigtable client; any project and instance)\n", bt.addr)
	}
	fmt.Fprintln(env.Stdout, "Press Ctrl-C to stop.")

	<-ctx.Done()
	fmt.Fprintln(env.Stdout, "\nstopping...")
	shut, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bt.close(shut)
	err = errors.Join(gateway.Close(shut), gw.close(shut), web.close(shut), roles.close(shut))
	if closeReplicas(env, "demo", cellReplicas...) != 0 {
		return 1
	}
	if err != nil {
		return fail(env, "demo", err)
	}
	fmt.Fprintln(env.Stdout, "stopped cleanly")
	return 0
}

// startDemoCell starts the demo's Chubby cell: replica i serves clients on
// the port of addr plus i-1 and Raft 100 ports above that (free ports if
// addr's port is 0). Its data lives under data/chubby/<id>.
func startDemoCell(ctx context.Context, data, addr string, n int, env Env, log *slog.Logger, pm *processMetrics) ([]*cell.Replica, error) {
	if n != 1 && n != 3 {
		return nil, fmt.Errorf("-chubby-replicas %d: the demo runs a cell of 1 or 3 replicas", n)
	}
	dir := filepath.Join(data, "chubby")
	existing := 0
	for id := 1; id <= 3; id++ {
		if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(id))); err == nil {
			existing++
		}
	}
	if existing > 0 && existing != n {
		return nil, fmt.Errorf("%s holds a Chubby cell of %d replica(s), not %d; start the demo with -chubby-replicas %d or use another -data", dir, existing, n, existing)
	}
	// A replica keeps its Raft address for life, so the addresses chosen
	// at the first start (free ones, for port 0) are recorded and reused.
	peersFile := filepath.Join(dir, "peers")
	var peers map[uint64]cell.Peer
	if b, err := os.ReadFile(peersFile); err == nil {
		if peers, err = parsePeers(strings.TrimSpace(string(b))); err != nil {
			return nil, fmt.Errorf("%s: %w", peersFile, err)
		}
		if _, port, _ := net.SplitHostPort(addr); port != "0" && peers[1].ClientAddr != addr {
			return nil, fmt.Errorf("the Chubby cell in %s serves clients on %s, not %s; a replica keeps its addresses for life", dir, peers[1].ClientAddr, addr)
		}
	} else if existing > 0 {
		return nil, fmt.Errorf("%s is missing; the cell's addresses are unknown", peersFile)
	} else {
		if peers, err = demoPeers(addr, n); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(peersFile, []byte(formatPeers(peers)+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	var rs []*cell.Replica
	for id := uint64(1); id <= uint64(n); id++ {
		// A short grace: after a restart of the demo, the sessions of the
		// previous run (whose processes are gone) lapse within seconds.
		r := cell.New(cell.Options{Cell: DefaultCell, ReplicaID: id, Peers: peers, Grace: 5 * time.Second,
			Dir: filepath.Join(dir, strconv.FormatUint(id, 10)), Logger: log.With("role", "chubby"), KeepAlive: keepAliveHook(pm, id)})
		if err := r.Open(ctx); err != nil {
			closeReplicas(env, "demo", rs...)
			return nil, fmt.Errorf("chubby replica %d: %w", id, err)
		}
		if err := addReplicaMetrics(pm, r); err != nil {
			closeReplicas(env, "demo", append(rs, r)...)
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func demoPeers(addr string, n int) (map[uint64]cell.Peer, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-chubby %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port+102 > 65535 {
		return nil, fmt.Errorf("-chubby %q: bad port", addr)
	}
	peers := map[uint64]cell.Peer{}
	for id := 1; id <= n; id++ {
		client, raft := net.JoinHostPort(host, strconv.Itoa(port+id-1)), net.JoinHostPort(host, strconv.Itoa(port+id+99))
		if port == 0 {
			if client, err = freePort(host); err == nil {
				raft, err = freePort(host)
			}
			if err != nil {
				return nil, err
			}
		}
		peers[uint64(id)] = cell.Peer{RaftAddr: raft, ClientAddr: client}
	}
	return peers, nil
}

// freePort finds a port nobody listens on now, below Linux's ephemeral
// range so that no outgoing connection takes it first. Another process may
// still take it before the cell does; the cell then fails to start with a
// clear error.
func freePort(host string) (string, error) {
	for range 1000 {
		addr := net.JoinHostPort(host, strconv.Itoa(20000+rand.IntN(12000)))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr, nil
		}
	}
	return "", fmt.Errorf("no free port on %s", host)
}

// demoRoles are the kv processes the demo runs in-process.
type demoRoles struct {
	ts         []*TabletServer
	tsAddrs    []string
	master     *master.Master
	sess       *coordlock.Session // the master's
	admin      *grpc.Server
	masterAddr string
	secret     string // the cluster's, for the kv RPCs
}

// startDemoRoles registers the demo's tablet servers in the cell and
// starts the master, all as clients of the cell over loopback, as the
// separate processes would be.
func startDemoRoles(ctx context.Context, dfsRoot string, n int, replicas []*cell.Replica, tsAddr, masterAddr, secret string, env Env, log *slog.Logger, pm *processMetrics) (*demoRoles, error) {
	var addrs []string
	for _, r := range replicas {
		addrs = append(addrs, r.ClientAddr())
	}
	svc := func(principal string) *coordlock.Service {
		return &coordlock.Service{Client: client.Options{Addrs: addrs, Principal: principal}}
	}
	openCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	roles := &demoRoles{}
	host, port, err := net.SplitHostPort(tsAddr)
	if err != nil {
		return nil, fmt.Errorf("tablet server address %q: %w", tsAddr, err)
	}
	first, _ := strconv.Atoi(port)
	for i := range n {
		addr := tsAddr
		if first != 0 {
			addr = net.JoinHostPort(host, strconv.Itoa(first+i))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			roles.closeServers(context.Background())
			return nil, fmt.Errorf("tablet server: %w", err)
		}
		// Each run registers new incarnations; the previous run's are
		// buried by the master once their sessions lapse, and their
		// tablets recovered from their logs.
		name := fmt.Sprintf("demo%d", i+1)
		role, err := StartTabletServer(openCtx, svc("tabletserver:"+name), TabletServerConfig{Name: name, Addr: ln.Addr().String(),
			FS: dfs.NewLocal(dfsRoot), SplitSize: 128 << 20, Logger: log.With("role", "tabletserver"), Metrics: pm.m, Secret: secret})
		if err != nil {
			ln.Close()
			roles.closeServers(context.Background())
			return nil, err
		}
		go role.srv.Serve(rawtcp.Listener(ln))
		roles.ts = append(roles.ts, role)
		roles.tsAddrs = append(roles.tsAddrs, ln.Addr().String())
	}
	msvc := svc("master")
	sess, err := msvc.NewSession(openCtx)
	if err != nil {
		roles.closeServers(context.Background())
		return nil, err
	}
	mln, err := net.Listen("tcp", masterAddr)
	if err != nil {
		sess.Close(context.Background())
		roles.closeServers(context.Background())
		return nil, fmt.Errorf("master: %w", err)
	}
	m := master.New(master.Options{Addr: mln.Addr().String(), Coord: coordlock.ForMaster{Service: msvc, Session: sess, LockDelay: coordlock.DefaultMasterLockDelay}, Logger: log.With("role", "master"),
		FS: dfs.NewLocal(dfsRoot), Secret: secret})
	fmt.Fprintln(env.Stdout, "starting the master (after a crash of the previous run it waits, up to about 20 s, for that run's session to lapse)")
	if err := m.Open(openCtx); err != nil {
		mln.Close()
		sess.Close(context.Background())
		roles.closeServers(context.Background())
		return nil, err
	}
	admin := grpc.NewServer(append(kvclient.ServerOptions(secret), pm.m.MasterServerOptions("master")...)...)
	masterpb.RegisterMasterServer(admin, master.AdminServer{M: m})
	go admin.Serve(mln)
	roles.master, roles.sess, roles.admin, roles.masterAddr, roles.secret = m, sess, admin, mln.Addr().String(), secret
	return roles, nil
}

// gatewayKV is the SQL gateway's connection to the cluster: its own
// Chubby session (to find the root tablet and the master), a kv client
// and the master's admin RPCs.
type gatewayKV struct {
	sess *coordlock.Session
	kv   *querykv.KV
}

func openGatewayKV(ctx context.Context, replicas []*cell.Replica, roles *demoRoles) (*gatewayKV, error) {
	var addrs []string
	for _, r := range replicas {
		addrs = append(addrs, r.ClientAddr())
	}
	openCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	sess, err := (&coordlock.Service{Client: client.Options{Addrs: addrs, Principal: "gateway"}}).NewSession(openCtx)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// The demo's tablet servers share the gateway's process: it calls
	// them directly (kv/client's local stubs).
	local := map[string]*TabletServer{}
	for i, ts := range roles.ts {
		local[roles.tsAddrs[i]] = ts
	}
	kvc := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}, Local: func(addr string) (tabletpb.TabletServerServer, bool) {
		ts, ok := local[addr]
		if !ok {
			return nil, false
		}
		return ts.Server().Local(), true
	}, Secret: roles.secret})
	return &gatewayKV{sess: sess, kv: &querykv.KV{Client: kvc, MasterAddr: sess.MasterAddr(""), Secret: roles.secret, ACLs: coordlock.ACLFiles{Session: sess}}}, nil
}

func (g *gatewayKV) close(ctx context.Context) error {
	if g == nil {
		return nil
	}
	return errors.Join(g.kv.Close(), g.kv.Client.Close(), g.sess.Close(ctx))
}

func (r *demoRoles) closeServers(ctx context.Context) error {
	var errs []error
	// Every server flushes while all of them serve: a flush records in
	// METADATA, which may be on any of them.
	for _, ts := range r.ts {
		errs = append(errs, ts.Flush(ctx))
	}
	for _, ts := range r.ts {
		errs = append(errs, ts.Close(ctx))
	}
	return errors.Join(errs...)
}

// close stops the master first, so that it does not reassign the tablets
// of the servers as they stop.
func (r *demoRoles) close(ctx context.Context) error {
	r.admin.Stop()
	return errors.Join(r.master.Close(ctx), r.sess.Close(ctx), r.closeServers(ctx))
}

// serversHandler serves a master's view of the tablet servers as JSON.
func serversHandler(m *master.Master) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			Live []master.Server `json:"live"`
			Dead []string        `json:"dead"`
		}{m.Servers(), m.Dead()})
	}
}
