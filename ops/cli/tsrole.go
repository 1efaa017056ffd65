package cli

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/kv/tabletserver"
	"github.com/cellardb/cellar/ops/coordlock"
)

// tsRole is a tablet server wired to the cell: its lock file, and a
// session through which it records splits in METADATA and reports them to
// the master. cellar tabletserver and cellar demo both run one.
type tsRole struct {
	srv  *tabletserver.Server
	sess *coordlock.Session
	meta *kvclient.Client
}

// splitForwarder is a store's split hook that reaches the server once it
// exists: the store must open (and recover) before the server is made.
type splitForwarder struct {
	srv atomic.Pointer[tabletserver.Server]
}

func (f *splitForwarder) split(parent uint64, children [2]uint64, key []byte) {
	if s := f.srv.Load(); s != nil {
		s.SplitHook(parent, children, key)
	}
}

// storeOptions are the options of a tablet server's store.
func storeOptions(splitSize int64, f *splitForwarder, logf func(string, ...any)) tablet.Options {
	return tablet.Options{SplitSize: splitSize, KeepWhole: tabletserver.KeepWhole, Events: tablet.Events{
		BackgroundError: func(id uint64, err error) { logf("tablet %d: background work failed (will retry): %v", id, err) },
		LogCorruption:   func(err error) { logf("commit log: recovery stopped at corrupt data: %v", err) },
		Split:           f.split,
	}}
}

// startTSRole opens the server's session and registers the server.
func startTSRole(ctx context.Context, svc *coordlock.Service, store *tablet.Store, f *splitForwarder,
	id, addr string, logf func(string, ...any), onFatal func(error)) (*tsRole, error) {
	sess, err := svc.NewSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the Chubby cell: %w", err)
	}
	meta := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}})
	srv := tabletserver.New(tabletserver.Options{ID: id, Addr: addr, Store: store, Logf: logf, OnFatal: onFatal,
		Meta: meta, ReportSplit: master.SplitReporter(sess.MasterAddr("")), Coord: coordlock.ForTabletServer{Service: svc}})
	f.srv.Store(srv)
	if err := srv.Open(ctx); err != nil {
		meta.Close()
		sess.Close(context.Background())
		return nil, err
	}
	return &tsRole{srv: srv, sess: sess, meta: meta}, nil
}

// close stops the server, releasing its lock, and ends its session.
func (r *tsRole) close(ctx context.Context) error {
	err := r.srv.Close(ctx)
	r.meta.Close()
	return errors.Join(err, r.sess.Close(ctx))
}
