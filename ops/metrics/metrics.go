// Package metrics turns cellar's hooks and Stats snapshots into
// Prometheus metrics on a registry it is given (never the default one).
//
// The lower packages know nothing of Prometheus: they offer func hooks in
// their Options (tablet.Events, tabletserver.Options.ObserveRPC,
// cell.Options.KeepAlive, pgwire.Options.StatementDone) and Stats()
// snapshots. New registers every cellar_ family once on the registry;
// the hooks this package hands out feed its histograms and counters, and
// its collectors read the snapshots of the sources added to them when the
// registry is scraped, so a gauge is never stale and costs nothing
// between scrapes. The master's and the Bigtable API's RPCs, whose gRPC
// servers ops builds, are observed by interceptors (ServerOptions).
//
// Every series carries a server label: a tablet server's incarnation, a
// Chubby replica's "chubby-<id>", "master", "gateway". cellar demo runs
// every role with one registry, and the label keeps its three tablet
// servers apart. docs/metrics.md lists the metrics.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/pgwire"
)

// durationBuckets span 50µs to 10s, the range of cellar's latencies from
// a cached point read to a large compaction.
var durationBuckets = prometheus.ExponentialBucketsRange(50e-6, 10, 16)

// Metrics holds cellar's metric families, registered on one registry.
type Metrics struct {
	tabletRPC    *prometheus.HistogramVec
	tabletRPCs   *prometheus.CounterVec
	masterRPC    *prometheus.HistogramVec
	masterRPCs   *prometheus.CounterVec
	bigtableRPC  *prometheus.HistogramVec
	bigtableRPCs *prometheus.CounterVec
	sqlDuration  *prometheus.HistogramVec
	sqlTotal     *prometheus.CounterVec
	compBytes    *prometheus.CounterVec
	compDuration *prometheus.HistogramVec
	fsync        *prometheus.HistogramVec
	groupSize    *prometheus.HistogramVec
	keepAlive    *prometheus.HistogramVec

	stores   *snapshots
	replicas *snapshots
	gateways *snapshots
}

// New registers cellar's metric families on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: no registry")
	}
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: durationBuckets}, append([]string{"server"}, labels...))
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"server"}, labels...))
	}
	m := &Metrics{
		tabletRPC:    hist("cellar_tablet_rpc_duration_seconds", "Time tablet servers took to answer RPCs, by method.", "rpc"),
		tabletRPCs:   counter("cellar_tablet_rpcs_total", "RPCs tablet servers answered, by method and gRPC code.", "rpc", "code"),
		masterRPC:    hist("cellar_master_rpc_duration_seconds", "Time the master took to answer admin RPCs, by method.", "rpc"),
		masterRPCs:   counter("cellar_master_rpcs_total", "Admin RPCs the master answered, by method and gRPC code.", "rpc", "code"),
		bigtableRPC:  hist("cellar_bigtable_rpc_duration_seconds", "Time the Bigtable API took to answer RPCs, by method.", "rpc"),
		bigtableRPCs: counter("cellar_bigtable_rpcs_total", "RPCs the Bigtable API answered, by method and gRPC code.", "rpc", "code"),
		sqlDuration:  hist("cellar_sql_statement_duration_seconds", "Time SQL statements ran, by statement type.", "statement"),
		sqlTotal:     counter("cellar_sql_statements_total", "SQL statements run, by type and outcome (ok or error).", "statement", "outcome"),
		compBytes:    counter("cellar_compaction_bytes_total", "Bytes of SSTables compactions wrote, by kind (minor, merging, major).", "kind"),
		compDuration: hist("cellar_compaction_duration_seconds", "Time compactions took, by kind (minor, merging, major).", "kind"),
		fsync:        hist("cellar_commitlog_fsync_duration_seconds", "Time each commit log group commit took to write and fsync."),
		groupSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cellar_commitlog_group_size",
			Help: "Records made durable by each commit log group commit (one write and fsync).", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}, []string{"server"}),
		keepAlive: hist("cellar_chubby_keepalive_duration_seconds", "Time the Chubby master took to answer KeepAlives, without the time it held them waiting for news."),
		stores:    newSnapshots(storeDescs),
		replicas:  newSnapshots(replicaDescs),
		gateways:  newSnapshots(gatewayDescs),
	}
	for _, c := range []prometheus.Collector{m.tabletRPC, m.tabletRPCs, m.masterRPC, m.masterRPCs, m.bigtableRPC, m.bigtableRPCs,
		m.sqlDuration, m.sqlTotal, m.compBytes, m.compDuration, m.fsync, m.groupSize, m.keepAlive, m.stores, m.replicas, m.gateways} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return m, nil
}

// RegisterProcess registers the Go runtime's and the process's collectors
// on reg with the server label and the cellar_ prefix (cellar_go_*,
// cellar_process_*). A process registers them once: in cellar demo every
// role shares one runtime, and its label is the process's, "demo".
func RegisterProcess(reg prometheus.Registerer, server string) error {
	r := prometheus.WrapRegistererWithPrefix("cellar_", prometheus.WrapRegistererWith(prometheus.Labels{"server": server}, reg))
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// code is the gRPC code of an RPC's error.
func code(err error) string {
	switch {
	case err == nil:
		return codes.OK.String()
	case errors.Is(err, context.Canceled):
		return codes.Canceled.String()
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded.String()
	}
	return status.Code(err).String()
}

// TabletRPC returns a tabletserver.Options.ObserveRPC hook for server.
func (m *Metrics) TabletRPC(server string) func(method string, d time.Duration, err error) {
	return newRPCSeries(server, m.tabletRPC, m.tabletRPCs).observe
}

// outcomeSeries observes one server's calls (RPCs, statements) by name
// into a histogram and a counter by outcome (a gRPC code, ok or error).
// It keeps each name's histogram and success counter at hand, since
// looking series up by their labels would cost every call two hashes.
type outcomeSeries struct {
	server  string
	hist    *prometheus.HistogramVec
	total   *prometheus.CounterVec
	ok      string
	outcome func(error) string // of a failed call
	names   sync.Map           // name -> *nameSeries
}

type nameSeries struct {
	hist prometheus.Observer
	ok   prometheus.Counter
}

// newRPCSeries counts RPCs by gRPC code.
func newRPCSeries(server string, hist *prometheus.HistogramVec, total *prometheus.CounterVec) *outcomeSeries {
	return &outcomeSeries{server: server, hist: hist, total: total, ok: codes.OK.String(), outcome: code}
}

func (o *outcomeSeries) observe(name string, d time.Duration, err error) {
	v, ok := o.names.Load(name)
	if !ok {
		v, _ = o.names.LoadOrStore(name, &nameSeries{hist: o.hist.WithLabelValues(o.server, name),
			ok: o.total.WithLabelValues(o.server, name, o.ok)})
	}
	s := v.(*nameSeries)
	s.hist.Observe(d.Seconds())
	if err == nil {
		s.ok.Inc()
		return
	}
	o.total.WithLabelValues(o.server, name, o.outcome(err)).Inc()
}

// TabletEvents returns ev with hooks added that count the compactions and
// the commit log's group commits of server's store; ev's own hooks still
// run first.
func (m *Metrics) TabletEvents(server string, ev tablet.Events) tablet.Events {
	flushEnd, compactionEnd, logSynced := ev.FlushEnd, ev.CompactionEnd, ev.LogSynced
	ev.FlushEnd = func(i tablet.FlushInfo) {
		if flushEnd != nil {
			flushEnd(i)
		}
		m.compaction(server, "minor", i.Bytes, i.Duration)
	}
	ev.CompactionEnd = func(i tablet.CompactionInfo) {
		if compactionEnd != nil {
			compactionEnd(i)
		}
		kind := "merging"
		if i.Major {
			kind = "major"
		}
		m.compaction(server, kind, i.OutputBytes, i.Duration)
	}
	ev.LogSynced = func(records int, d time.Duration) {
		if logSynced != nil {
			logSynced(records, d)
		}
		m.fsync.WithLabelValues(server).Observe(d.Seconds())
		m.groupSize.WithLabelValues(server).Observe(float64(records))
	}
	return ev
}

func (m *Metrics) compaction(server, kind string, bytes int64, d time.Duration) {
	m.compBytes.WithLabelValues(server, kind).Add(float64(bytes))
	m.compDuration.WithLabelValues(server, kind).Observe(d.Seconds())
}

// KeepAlive returns a cell.Options.KeepAlive hook for server.
func (m *Metrics) KeepAlive(server string) func(time.Duration) {
	h := m.keepAlive.WithLabelValues(server)
	return func(d time.Duration) { h.Observe(d.Seconds()) }
}

// Statement returns a pgwire.Options.StatementDone hook for server.
func (m *Metrics) Statement(server string) func(typ string, d time.Duration, err error) {
	o := &outcomeSeries{server: server, hist: m.sqlDuration, total: m.sqlTotal, ok: "ok", outcome: func(error) string { return "error" }}
	return o.observe
}

// StoreSource is a tablet server's store (*tablet.Store).
type StoreSource interface{ Stats() tablet.Stats }

// ReplicaSource is a Chubby replica (*cell.Replica).
type ReplicaSource interface{ Stats() cell.Stats }

// PgwireSource is a PostgreSQL gateway (*pgwire.Server).
type PgwireSource interface{ Stats() pgwire.Stats }

var (
	tabletsDesc       = prometheus.NewDesc("cellar_tablets", "Tablets the tablet server serves.", []string{"server"}, nil)
	memtableDesc      = prometheus.NewDesc("cellar_tablet_memtable_bytes", "Bytes in a tablet's memtables, the active one and those waiting to be flushed.", []string{"server", "tablet"}, nil)
	sstablesDesc      = prometheus.NewDesc("cellar_tablet_sstables", "SSTables of a tablet, over its locality groups.", []string{"server", "tablet"}, nil)
	sstableBytesDesc  = prometheus.NewDesc("cellar_tablet_sstable_bytes", "Bytes of a tablet's SSTables.", []string{"server", "tablet"}, nil)
	cacheHitsDesc     = prometheus.NewDesc("cellar_block_cache_hits_total", "SSTable block reads the block cache answered.", []string{"server"}, nil)
	cacheMissesDesc   = prometheus.NewDesc("cellar_block_cache_misses_total", "SSTable block reads the block cache missed.", []string{"server"}, nil)
	cacheBytesDesc    = prometheus.NewDesc("cellar_block_cache_bytes", "Bytes held in the block cache.", []string{"server"}, nil)
	bloomChecksDesc   = prometheus.NewDesc("cellar_bloom_checks_total", "Bloom filter probes of point reads.", []string{"server"}, nil)
	bloomUsefulDesc   = prometheus.NewDesc("cellar_bloom_useful_total", "Bloom filter probes that showed a file could not hold the row, sparing its read.", []string{"server"}, nil)
	logBytesDesc      = prometheus.NewDesc("cellar_commitlog_bytes", "Bytes of commit log the tablet server keeps.", []string{"server"}, nil)
	storeDescs        = []*prometheus.Desc{tabletsDesc, memtableDesc, sstablesDesc, sstableBytesDesc, cacheHitsDesc, cacheMissesDesc, cacheBytesDesc, bloomChecksDesc, bloomUsefulDesc, logBytesDesc}
	sessionsDesc      = prometheus.NewDesc("cellar_chubby_sessions", "Chubby sessions, in the replica's applied state.", []string{"server"}, nil)
	locksDesc         = prometheus.NewDesc("cellar_chubby_locks", "Chubby nodes whose lock is held, in the replica's applied state.", []string{"server"}, nil)
	leaderDesc        = prometheus.NewDesc("cellar_chubby_leader", "1 if the replica is the Raft leader and the cell's master, else 0.", []string{"server"}, nil)
	leaderIDDesc      = prometheus.NewDesc("cellar_chubby_raft_leader_id", "Replica id of the Raft leader as the replica knows it; 0 if none.", []string{"server"}, nil)
	replicaDescs      = []*prometheus.Desc{sessionsDesc, locksDesc, leaderDesc, leaderIDDesc}
	pgConnectionsDesc = prometheus.NewDesc("cellar_pgwire_connections", "Open PostgreSQL protocol connections.", []string{"server"}, nil)
	gatewayDescs      = []*prometheus.Desc{pgConnectionsDesc}
)

// AddStore adds a tablet server's store, read at each scrape. The
// returned func removes it, for a server that stops while the process
// goes on.
func (m *Metrics) AddStore(server string, s StoreSource) (remove func(), err error) {
	return m.stores.add(server, func(ch chan<- prometheus.Metric) {
		st := s.Stats()
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{server}, labels...)...)
		}
		counter := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), server)
		}
		gauge(tabletsDesc, float64(len(st.Tablets)))
		for _, t := range st.Tablets {
			id := strconv.FormatUint(t.ID, 10)
			var files int
			var bytes uint64
			for _, g := range t.Groups {
				files += len(g.Files)
				for _, f := range g.Files {
					bytes += f.Size
				}
			}
			gauge(memtableDesc, float64(t.MemtableBytes), id)
			gauge(sstablesDesc, float64(files), id)
			gauge(sstableBytesDesc, float64(bytes), id)
		}
		counter(cacheHitsDesc, st.BlockCache.Hits)
		counter(cacheMissesDesc, st.BlockCache.Misses)
		gauge(cacheBytesDesc, float64(st.BlockCache.Bytes))
		counter(bloomChecksDesc, st.Bloom.Checks)
		counter(bloomUsefulDesc, st.Bloom.Useful)
		gauge(logBytesDesc, float64(st.LogBytes))
	})
}

// AddReplica adds a Chubby replica, read at each scrape.
func (m *Metrics) AddReplica(server string, r ReplicaSource) (remove func(), err error) {
	return m.replicas.add(server, func(ch chan<- prometheus.Metric) {
		st := r.Stats()
		leader := 0.0
		if st.IsMaster {
			leader = 1
		}
		for _, v := range []struct {
			d *prometheus.Desc
			v float64
		}{{sessionsDesc, float64(st.Sessions)}, {locksDesc, float64(st.Locks)}, {leaderDesc, leader}, {leaderIDDesc, float64(st.Leader)}} {
			ch <- prometheus.MustNewConstMetric(v.d, prometheus.GaugeValue, v.v, server)
		}
	})
}

// AddPgwire adds a PostgreSQL gateway, read at each scrape.
func (m *Metrics) AddPgwire(server string, p PgwireSource) (remove func(), err error) {
	return m.gateways.add(server, func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(pgConnectionsDesc, prometheus.GaugeValue, float64(p.Stats().Connections), server)
	})
}

// snapshots is a collector of the metrics its sources give at scrape
// time, one source per server.
type snapshots struct {
	descs []*prometheus.Desc
	mu    sync.Mutex
	srcs  map[string]func(chan<- prometheus.Metric)
}

func newSnapshots(descs []*prometheus.Desc) *snapshots {
	return &snapshots{descs: descs, srcs: map[string]func(chan<- prometheus.Metric){}}
}

func (s *snapshots) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d
	}
}

func (s *snapshots) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	fns := make([]func(chan<- prometheus.Metric), 0, len(s.srcs))
	for _, fn := range s.srcs {
		fns = append(fns, fn)
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(ch)
	}
}

// add adds server's source; a server has at most one, since two would
// give the same series twice.
func (s *snapshots) add(server string, fn func(chan<- prometheus.Metric)) (func(), error) {
	if server == "" {
		return nil, errors.New("metrics: a source needs a server name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.srcs[server]; ok {
		return nil, fmt.Errorf("metrics: server %q is already added", server)
	}
	s.srcs[server] = fn
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.srcs, server)
			s.mu.Unlock()
		})
	}, nil
}
