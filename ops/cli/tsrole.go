package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/kv/tabletserver"
	"github.com/cellardb/cellar/ops/coordlock"
	"github.com/cellardb/cellar/ops/metrics"
)

// TabletServer is a tablet server wired to the cell and the shared dfs: its
// store (in shared mode, with METADATA as its catalog), its lock file,
// and a session through which it records its tablets in METADATA and
// reports splits to the master. cellar tabletserver and cellar demo both
// run them.
type TabletServer struct {
	srv   *tabletserver.Server
	store *tablet.Store
	sess  *coordlock.Session
	meta  *kvclient.Client
	log   *slog.Logger
	// unmetric stops the scrapes of the store.
	unmetric func()
	acls     *coordlock.ACLWatch // drops cached ACLs on Chubby's events
}

// Server returns the server, to serve RPCs on a listener.
func (r *TabletServer) Server() *tabletserver.Server { return r.srv }

// Store returns the server's store.
func (r *TabletServer) Store() *tablet.Store { return r.store }

// TabletServerConfig configures one tablet server.
type TabletServerConfig struct {
	// Name is the server's name; each start registers a new incarnation,
	// Name-<start time>, whose log no earlier run ever wrote.
	Name      string
	Addr      string
	FS        dfs.FS
	DFSRoot   string
	SplitSize int64
	// MemtableSize, if set, overrides the store's default.
	MemtableSize int64
	// Logger receives the server's events (nil: discarded); StartTabletServer
	// adds the incarnation as attribute "server".
	Logger  *slog.Logger
	OnFatal func(error)
	// Metrics, if set, receives the server's metrics, labelled with its
	// incarnation.
	Metrics *metrics.Metrics
	// Secret is the cluster's shared secret (secret.go).
	Secret string
	// Clock is the wall clock of server-assigned timestamps (default
	// time.Now); -fault-injection makes it skewable.
	Clock func() time.Time
}

// incarnation names one run of a server.
func incarnation(name string, now time.Time) string {
	return fmt.Sprintf("%s-%x", name, now.UnixMilli())
}

// splitForwarder is a store's split hook that reaches the server once it
// exists: the store must open before the server is made.
type splitForwarder struct {
	srv atomic.Pointer[tabletserver.Server]
}

func (f *splitForwarder) split(parent uint64, children [2]uint64, key []byte) {
	if s := f.srv.Load(); s != nil {
		s.SplitHook(parent, children, key)
	}
}

// storeOptions are the options of a tablet server's store.
func storeOptions(splitSize int64, f *splitForwarder, shared *tablet.Shared, log *slog.Logger) tablet.Options {
	return tablet.Options{SplitSize: splitSize, KeepWhole: tabletserver.KeepWhole, Shared: shared, Events: tablet.Events{
		BackgroundError: func(id uint64, err error) {
			log.Warn("background work failed (will retry)", slog.Uint64("tablet", id), slog.Any("err", err))
		},
		LogCorruption: func(err error) { log.Error("commit log: recovery stopped at corrupt data", slog.Any("err", err)) },
		LogWriteFailed: func(err error, recovered bool) {
			log.Error("commit log write failed; its writes were refused", slog.Bool("recovered_on_new_segment", recovered), slog.Any("err", err))
		},
		Split: f.split,
	}}
}

// StartTabletServer opens the server's session and store, and registers
// the server. cellar tabletserver, cellar demo and the cluster tests use
// it.
func StartTabletServer(ctx context.Context, svc *coordlock.Service, cfg TabletServerConfig) (*TabletServer, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	sess, err := svc.NewSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the Chubby cell: %w", err)
	}
	id := incarnation(cfg.Name, time.Now())
	log := cfg.Logger.With("server", id)
	root := coordlock.RootFile{Session: sess}
	meta := kvclient.New(kvclient.Options{Root: root, Secret: cfg.Secret})
	var catalog tabletserver.Catalog
	var splits splitForwarder
	shared := &tablet.Shared{Name: id, Catalog: &catalog, NoStall: func(t string) bool { return t == kvclient.MetaTable }}
	opts := storeOptions(cfg.SplitSize, &splits, shared, log)
	opts.MemtableSize = cfg.MemtableSize
	opts.Clock = cfg.Clock
	observeRPC := instrumentTabletServer(cfg.Metrics, id, &opts)
	store := tablet.New(cfg.FS, cfg.DFSRoot, opts)
	if err := store.Open(ctx); err != nil {
		meta.Close()
		sess.Close(context.Background())
		return nil, fmt.Errorf("open the store on the dfs at %s: %w", cfg.DFSRoot, err)
	}
	srv := tabletserver.New(tabletserver.Options{ID: id, Addr: cfg.Addr, Store: store, Logger: log, OnFatal: cfg.OnFatal,
		Meta: meta, Root: root, Catalog: &catalog, FS: cfg.FS, DFSRoot: cfg.DFSRoot,
		ReportSplit: master.SplitReporter(sess.MasterAddr(""), kvclient.AuthDialOptions(cfg.Secret)...), Coord: coordlock.ForTabletServer{Service: svc}, ObserveRPC: observeRPC,
		Secret: cfg.Secret, ACLs: coordlock.ACLFiles{Session: sess}, Sequencers: sess})
	splits.srv.Store(srv)
	unmetric, err := addStoreMetrics(cfg.Metrics, id, store)
	if err == nil {
		err = srv.Open(ctx)
	}
	if err != nil {
		if unmetric != nil {
			unmetric()
		}
		store.Close(context.Background())
		meta.Close()
		sess.Close(context.Background())
		return nil, err
	}
	return &TabletServer{srv: srv, store: store, sess: sess, meta: meta, log: log, unmetric: unmetric, acls: svc.WatchACLs(srv.Invalidate)}, nil
}

// Flush does the final minor compactions, so that the servers that take
// the tablets over replay little log. It needs METADATA's servers up.
func (r *TabletServer) Flush(ctx context.Context) error { return r.store.FlushAll(ctx) }

// Close flushes the tablets (best effort: what fails to flush stays in
// the log, which the next server replays), stops the server, releasing its
// lock so that the master reassigns its tablets at once, and closes the
// store and the session.
func (r *TabletServer) Close(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := r.store.FlushAll(fctx); err != nil {
		r.log.Warn("final flush failed (the log keeps the rest)", slog.Any("err", err))
	}
	cancel()
	return r.Abandon(ctx)
}

// Abandon stops the server without flushing its tablets, releasing its
// lock: the master then recovers the tablets from its log, as after a
// crash.
func (r *TabletServer) Abandon(ctx context.Context) error {
	r.unmetric()
	err := r.srv.Close(ctx)
	r.acls.Close()
	r.meta.Close()
	return errors.Join(err, r.store.Close(ctx), r.sess.Close(ctx))
}
