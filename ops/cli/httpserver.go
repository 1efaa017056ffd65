package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/ops/coordlock"
	"github.com/cellardb/cellar/ops/faults"
	"github.com/cellardb/cellar/ops/status"
	"github.com/cellardb/cellar/pgwire"
)

// processHTTP is a process's HTTP server: the status pages of the roles
// it runs, /healthz and /readyz. Mux takes further endpoints.
type processHTTP struct {
	Mux    *http.ServeMux
	srv    *http.Server
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
}

// serveHTTP serves the status pages of opts on ln, sampling the
// process's metrics registry for the charts until close.
func serveHTTP(ln net.Listener, opts status.Options) (*processHTTP, error) {
	h, err := status.New(opts)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	ctx, cancel := context.WithCancel(context.Background())
	p := &processHTTP{Mux: mux, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, addr: ln.Addr().String(),
		cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		h.Run(ctx)
	}()
	go p.srv.Serve(ln)
	return p, nil
}

// listenHTTP is serveHTTP on a new listener on addr; an empty addr turns
// the server off (nil, no error).
func listenHTTP(addr string, opts status.Options) (*processHTTP, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("status pages: %w", err)
	}
	p, err := serveHTTP(ln, opts)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return p, nil
}

// url is where the pages are, for the startup message.
func (p *processHTTP) url() string {
	if p == nil {
		return "off"
	}
	return "http://" + p.addr + "/   (/metrics, /healthz, /readyz)"
}

// close stops the server and the sampler; requests in flight get until
// ctx ends. A nil server does nothing.
func (p *processHTTP) close(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.cancel()
	err := p.srv.Shutdown(ctx)
	<-p.done
	return err
}

// The readiness conditions of the roles.

func chubbyReady(r *cell.Replica) status.Check {
	return status.Check{Name: fmt.Sprintf("chubby replica %d: the cell has a master", r.ID()),
		Ready: func(context.Context) error { return r.Ready() }}
}

// masterReady: the master holds the master lock, or is a standby whose
// Chubby session is valid, so that it can take over.
func masterReady(m *master.Master, sess *coordlock.Session) status.Check {
	return status.Check{Name: "master: active, or a standby with a Chubby session", Ready: func(ctx context.Context) error {
		if m.Active() {
			return nil
		}
		if err := sess.Ready(ctx); err != nil {
			return fmt.Errorf("standby: %w", err)
		}
		return nil
	}}
}

func tabletServerReady(ts *TabletServer) status.Check {
	return status.Check{Name: "tablet server " + ts.store.Name() + ": registered and serving",
		Ready: func(context.Context) error { return ts.srv.Ready() }}
}

// gatewayReady: the gateway's Chubby session is valid and its front
// doors listen (pg nil: it serves only the Bigtable API, which listens
// before the pages start).
func gatewayReady(sess *coordlock.Session, pg *pgwire.Server) status.Check {
	return status.Check{Name: "gateway: connected to the cluster and listening", Ready: func(ctx context.Context) error {
		if err := sess.Ready(ctx); err != nil {
			return err
		}
		if pg != nil && pg.Addr() == nil {
			return errors.New("the PostgreSQL gateway is not listening yet")
		}
		return nil
	}}
}

// statusReplicas turns replicas into the pages' view of them.
func statusReplicas(rs []*cell.Replica) []status.CellReplica {
	out := make([]status.CellReplica, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// demoStatus are the status pages of cellar demo: every role.
func demoStatus(env Env, reg prometheus.Gatherer, replicas []*cell.Replica, roles *demoRoles, gw *gatewayKV, pg *pgwire.Server) status.Options {
	opts := status.Options{Process: "cellar demo", Version: env.Version, Gatherer: reg, Chubby: statusReplicas(replicas),
		Master: roles.master, Gateway: pg, GatewayRole: true}
	for _, r := range replicas {
		opts.Ready = append(opts.Ready, chubbyReady(r))
	}
	opts.Ready = append(opts.Ready, masterReady(roles.master, roles.sess))
	for _, ts := range roles.ts {
		opts.TabletServers = append(opts.TabletServers, ts.store)
		opts.Ready = append(opts.Ready, tabletServerReady(ts))
	}
	opts.Ready = append(opts.Ready, gatewayReady(gw.sess, pg))
	return opts
}

// serveDemoHTTP serves cellar demo's pages on ln, with the master's
// server list as JSON (/servers) and Go's profiles (/debug/pprof/), which
// make bench reads.
func serveDemoHTTP(ln net.Listener, env Env, reg prometheus.Gatherer, replicas []*cell.Replica, roles *demoRoles, gw *gatewayKV, pg *pgwire.Server) (*processHTTP, error) {
	p, err := serveHTTP(ln, demoStatus(env, reg, replicas, roles, gw, pg))
	if err != nil {
		return nil, err
	}
	p.Mux.HandleFunc("/servers", serversHandler(roles.master))
	p.Mux.HandleFunc("/debug/pprof/", pprof.Index)
	p.Mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	p.Mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return p, nil
}

// httpFlagUsage is the usage of the roles' -http flag.
const httpFlagUsage = "address of the status pages, /metrics, /healthz and /readyz (port 0: any free port; empty: off)"

func chubbyStatus(env Env, reg prometheus.Gatherer, r *cell.Replica) status.Options {
	return status.Options{Process: "cellar chubby", Version: env.Version, Gatherer: reg, Chubby: statusReplicas([]*cell.Replica{r}),
		Ready: []status.Check{chubbyReady(r)}}
}

func masterStatus(env Env, reg prometheus.Gatherer, m *master.Master, sess *coordlock.Session) status.Options {
	return status.Options{Process: "cellar master", Version: env.Version, Gatherer: reg, Master: m,
		Ready: []status.Check{masterReady(m, sess)}}
}

func tabletServerStatus(env Env, reg prometheus.Gatherer, ts *TabletServer) status.Options {
	return status.Options{Process: "cellar tabletserver", Version: env.Version, Gatherer: reg,
		TabletServers: []status.TabletServer{ts.store}, Ready: []status.Check{tabletServerReady(ts)}}
}

// gatewayStatus: pg is nil when the gateway serves only the Bigtable API.
func gatewayStatus(env Env, reg prometheus.Gatherer, gw *gatewayKV, pg *pgwire.Server) status.Options {
	opts := status.Options{Process: "cellar gateway", Version: env.Version, Gatherer: reg, GatewayRole: true,
		Ready: []status.Check{gatewayReady(gw.sess, pg)}}
	if pg != nil {
		opts.Gateway = pg
	}
	return opts
}

// faultInjectionUsage is the -fault-injection flag's usage.
const faultInjectionUsage = "FOR TESTING ONLY: serve /debug/faults/ on -http, through which anyone who reaches it can fail fsyncs, cut unsynced data and kill the process, or skew its wall clock"

// mountFaults serves the fault endpoint on the process's HTTP server,
// which -fault-injection needs.
func mountFaults(web *processHTTP, opts faults.Options) error {
	if web == nil {
		return fmt.Errorf("-fault-injection needs the HTTP server: set -http")
	}
	faults.Mount(web.Mux, opts)
	return nil
}
