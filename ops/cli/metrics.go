package cli

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/ops/metrics"
)

// A process's metrics: one registry per process, made here and passed
// down, never Prometheus' default one. In cellar demo every role shares
// it; the server label keeps them apart (see ops/metrics).

// processMetrics is a process's registry and cellar's families on it.
type processMetrics struct {
	reg *prometheus.Registry
	m   *metrics.Metrics
}

// newProcessMetrics makes a process's registry.
func newProcessMetrics() (*processMetrics, error) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	return &processMetrics{reg: reg, m: m}, nil
}

// runtime adds the Go runtime's and the process's metrics, labelled with
// server, the process's name.
func (p *processMetrics) runtime(server string) error {
	return metrics.RegisterProcess(p.reg, server)
}

// mount serves the registry at /metrics on mux.
func (p *processMetrics) mount(mux *http.ServeMux) {
	mux.Handle("/metrics", promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{}))
}

// attach adds the Go runtime's and the process's metrics under server,
// for a process that learns its name only once it runs (a tablet server's
// incarnation), and serves /metrics beside the status pages of web (nil:
// the process serves no HTTP).
func (p *processMetrics) attach(web *processHTTP, server string) error {
	if err := p.runtime(server); err != nil {
		return err
	}
	if web != nil {
		p.mount(web.Mux)
	}
	return nil
}

// newRoleMetrics is the registry of a process whose server label is
// known at start: "master", gatewayServer, "demo" (whose registry every
// role shares).
func newRoleMetrics(server string) (*processMetrics, error) {
	p, err := newProcessMetrics()
	if err == nil {
		err = p.runtime(server)
	}
	return p, err
}

// gatewayServer is the server label of the front doors, the PostgreSQL
// gateway and the Bigtable API.
const gatewayServer = "gateway"

// chubbyServer is a Chubby replica's server label.
func chubbyServer(id uint64) string { return fmt.Sprintf("chubby-%d", id) }

// keepAliveHook is a replica's KeepAlive hook; nil without metrics.
func keepAliveHook(p *processMetrics, id uint64) func(time.Duration) {
	if p == nil {
		return nil
	}
	return p.m.KeepAlive(chubbyServer(id))
}

// addReplicaMetrics reads r's Stats at each scrape.
func addReplicaMetrics(p *processMetrics, r *cell.Replica) error {
	if p == nil {
		return nil
	}
	_, err := p.m.AddReplica(chubbyServer(r.ID()), r)
	return err
}

// instrumentTabletServer adds the metrics hooks to a tablet server's
// store options and returns its RPC hook; nil metrics add none.
func instrumentTabletServer(m *metrics.Metrics, id string, opts *tablet.Options) func(string, time.Duration, error) {
	if m == nil {
		return nil
	}
	opts.Events = m.TabletEvents(id, opts.Events)
	return m.TabletRPC(id)
}

// addStoreMetrics reads a tablet server's store at each scrape; the
// returned func stops that.
func addStoreMetrics(m *metrics.Metrics, id string, store *tablet.Store) (func(), error) {
	if m == nil {
		return func() {}, nil
	}
	return m.AddStore(id, store)
}
