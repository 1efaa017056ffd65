// Package status serves a cellar process's HTML status pages, in the
// spirit of Bigtable's: an index at / that links to a page for each role
// the process runs (the Chubby replicas, the master, the tablet servers,
// the gateway), and the health endpoints /healthz and /readyz.
//
// The pages are plain server-rendered HTML that refreshes itself; their
// small charts are inline SVG, drawn on the server. The data comes from
// two places:
//
//   - read-only snapshots of the roles (cell.Replica.Status,
//     master.Master.Servers and Events, tablet.Store.Stats,
//     pgwire.Server.Sessions), read when a page is served;
//   - the process's Prometheus registry, which a Sampler reads every few
//     seconds to chart operations per second and p99 latency over the last
//     minutes, by the metric names the metrics package registers.
//
// Nothing here is global: a Handler is made per process from Options, and
// Run drives its sampler.
package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/tablet"
	"github.com/cellardb/cellar/pgwire"
)

// CellReplica is a Chubby replica (*cell.Replica).
type CellReplica interface {
	ID() uint64
	Status(ctx context.Context) (cell.Status, error)
}

// Master is the kv master (*master.Master).
type Master interface {
	Active() bool
	Servers() []master.Server
	Dead() []string
	Events() []master.Event
}

// TabletServer is a tablet server's store (*tablet.Store); Name is the
// server's incarnation, the server label of its metrics.
type TabletServer interface {
	Name() string
	Stats() tablet.Stats
}

// Gateway is the PostgreSQL gateway (*pgwire.Server).
type Gateway interface {
	Sessions() []pgwire.SessionInfo
}

// Check is one readiness condition of /readyz: Ready returns nil when the
// role is ready, otherwise why not.
type Check struct {
	Name  string
	Ready func(ctx context.Context) error
}

// Options configure a Handler. Roles left nil or empty are not run by the
// process and get no page.
type Options struct {
	// Process names the process in titles, e.g. "cellar demo".
	Process string
	Version string
	// Gatherer is the process's metrics registry; the charts sample it.
	Gatherer prometheus.Gatherer

	Chubby        []CellReplica
	Master        Master
	TabletServers []TabletServer
	// Gateway is the PostgreSQL gateway; with GatewayRole set and Gateway
	// nil (a gateway that serves only the Bigtable API) the gateway page
	// shows its charts without sessions.
	Gateway     Gateway
	GatewayRole bool

	// Ready are the conditions of /readyz; all must hold.
	Ready []Check

	// SampleInterval and Window are the sampler's (defaults 5 s, 10 min).
	SampleInterval, Window time.Duration
	// Clock is the time of pages and samples (default time.Now).
	Clock func() time.Time
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.Gatherer == nil {
		return errors.New("status: a Gatherer is required")
	}
	for _, c := range o.Ready {
		if c.Name == "" || c.Ready == nil {
			return errors.New("status: a readiness check needs a name and a function")
		}
	}
	return o.samplerOptions().Validate()
}

func (o Options) samplerOptions() SamplerOptions {
	return SamplerOptions{Gatherer: o.Gatherer, Interval: o.SampleInterval, Window: o.Window, Clock: o.Clock}
}

// Handler serves the pages. Run must run for the charts to fill.
type Handler struct {
	opts    Options
	sampler *Sampler
	tmpl    *template.Template
	mux     *http.ServeMux
}

// New returns a handler. It does no I/O.
func New(opts Options) (*Handler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Process == "" {
		opts.Process = "cellar"
	}
	h := &Handler{opts: opts, sampler: NewSampler(opts.samplerOptions())}
	tmpl, err := template.New("status").Funcs(template.FuncMap{
		"bytes": func(v any) string { return formatBytes(toFloat(v)) },
		"ago":   h.ago,
		"until": h.until,
		"key":   keyString,
		"clip":  clip,
	}).Parse(pageTemplates)
	if err != nil {
		return nil, fmt.Errorf("status: templates: %w", err)
	}
	h.tmpl = tmpl
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", h.readyz)
	mux.HandleFunc("GET /{$}", h.index)
	mux.HandleFunc("GET /chubby/{id}", h.chubby)
	mux.HandleFunc("GET /master", h.master)
	mux.HandleFunc("GET /tabletserver/{name}", h.tabletServer)
	mux.HandleFunc("GET /gateway", h.gateway)
	h.mux = mux
	return h, nil
}

// Run samples the metrics for the charts until ctx ends.
func (h *Handler) Run(ctx context.Context) error { return h.sampler.Run(ctx) }

// Sampler returns the handler's sampler.
func (h *Handler) Sampler() *Sampler { return h.sampler }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// checkReady runs every check, each under a short deadline.
func (h *Handler) checkReady(ctx context.Context) []checkResult {
	var out []checkResult
	for _, c := range h.opts.Ready {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.Ready(cctx)
		cancel()
		out = append(out, checkResult{Name: c.Name, Err: err})
	}
	return out
}

type checkResult struct {
	Name string
	Err  error
}

func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	results := h.checkReady(r.Context())
	var b strings.Builder
	ready := true
	for _, c := range results {
		if c.Err != nil {
			ready = false
			fmt.Fprintf(&b, "not ready: %s: %v\n", c.Name, c.Err)
		} else {
			fmt.Fprintf(&b, "ready: %s\n", c.Name)
		}
	}
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	} else {
		b.WriteString("ok\n")
	}
	fmt.Fprint(w, b.String())
}

// page is what every page's template gets.
type page struct {
	Title   string
	Process string
	Version string
	Now     time.Time
	Nav     []link
	Charts  []template.HTML
	Data    any
}

type link struct{ Name, Href string }

func (h *Handler) nav() []link {
	l := []link{{"index", "/"}}
	for _, r := range h.opts.Chubby {
		id := strconv.FormatUint(r.ID(), 10)
		l = append(l, link{"chubby " + id, "/chubby/" + id})
	}
	if h.opts.Master != nil {
		l = append(l, link{"master", "/master"})
	}
	for _, ts := range h.opts.TabletServers {
		l = append(l, link{"tablet server " + ts.Name(), "/tabletserver/" + ts.Name()})
	}
	if h.opts.Gateway != nil || h.opts.GatewayRole {
		l = append(l, link{"gateway", "/gateway"})
	}
	return l
}

func (h *Handler) render(w http.ResponseWriter, name, title string, charts []template.HTML, data any) {
	p := page{Title: title, Process: h.opts.Process, Version: h.opts.Version, Now: h.opts.Clock(), Nav: h.nav(), Charts: charts, Data: data}
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, b.String())
}

// rateAndP99 are the two charts of one histogram metric of one server.
func (h *Handler) rateAndP99(what, metric, server string) []template.HTML {
	pts := h.sampler.Series(metric, server)
	now, win := h.opts.Clock(), h.sampler.opts.Window
	return []template.HTML{
		lineChart(what+": ops/s", pts, func(p Point) (float64, bool) { return p.OpsPerSec, true }, formatRate, win, now),
		lineChart(what+": p99 latency", pts, func(p Point) (float64, bool) { return p.P99, p.HasP99 }, formatSeconds, win, now),
	}
}

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	h.render(w, "index", h.opts.Process, nil, struct{ Checks []checkResult }{h.checkReady(r.Context())})
}

func (h *Handler) chubby(w http.ResponseWriter, r *http.Request) {
	var rep CellReplica
	for _, c := range h.opts.Chubby {
		if strconv.FormatUint(c.ID(), 10) == r.PathValue("id") {
			rep = c
		}
	}
	if rep == nil {
		http.Error(w, fmt.Sprintf("this process runs no Chubby replica %q", r.PathValue("id")), http.StatusNotFound)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := rep.Status(ctx)
	data := struct {
		Status cell.Status
		Err    error
	}{st, err}
	charts := h.rateAndP99("KeepAlives", "cellar_chubby_keepalive_duration_seconds", fmt.Sprintf("chubby-%d", rep.ID()))
	h.render(w, "chubby", fmt.Sprintf("Chubby replica %d", rep.ID()), charts, data)
}

type assignment struct {
	Table      string
	Start, End []byte
	ID         uint64
	Size       int64
	Server     string
}

func (h *Handler) master(w http.ResponseWriter, r *http.Request) {
	m := h.opts.Master
	if m == nil {
		http.Error(w, "this process runs no master", http.StatusNotFound)
		return
	}
	servers := m.Servers()
	var assigned []assignment
	var bars []Bar
	type serverRow struct {
		master.Server
		Bytes int64
	}
	var rows []serverRow
	for _, s := range servers {
		row := serverRow{Server: s}
		for _, t := range s.Tablets {
			a := assignment{Table: t.Table, Start: t.GetRange().GetStart(), End: t.GetRange().GetEnd(), ID: t.Id, Size: t.SizeBytes, Server: s.ID}
			assigned = append(assigned, a)
			row.Bytes += t.SizeBytes
			bars = append(bars, Bar{Label: fmt.Sprintf("%s %s", t.Table, keyString(a.Start)), Value: float64(t.SizeBytes)})
		}
		rows = append(rows, row)
	}
	sortAssignments(assigned)
	events := m.Events()
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	charts := append(h.rateAndP99("master RPCs", "cellar_master_rpc_duration_seconds", "master"),
		barChart("tablet sizes", bars, formatBytes))
	h.render(w, "master", "master", charts, struct {
		Active   bool
		Servers  []serverRow
		Assigned []assignment
		Dead     []string
		Events   []master.Event
	}{m.Active(), rows, assigned, m.Dead(), events})
}

func sortAssignments(a []assignment) {
	sort.Slice(a, func(i, j int) bool {
		if a[i].Table != a[j].Table {
			return a[i].Table < a[j].Table
		}
		return bytes.Compare(a[i].Start, a[j].Start) < 0
	})
}

func (h *Handler) tabletServer(w http.ResponseWriter, r *http.Request) {
	var ts TabletServer
	for _, s := range h.opts.TabletServers {
		if s.Name() == r.PathValue("name") {
			ts = s
		}
	}
	if ts == nil {
		http.Error(w, fmt.Sprintf("this process runs no tablet server %q", r.PathValue("name")), http.StatusNotFound)
		return
	}
	st := ts.Stats()
	type tabletRow struct {
		tablet.TabletStats
		SSTables     int
		SSTableBytes uint64
		Percent      int64
	}
	var rows []tabletRow
	var bars []Bar
	for _, t := range st.Tablets {
		row := tabletRow{TabletStats: t}
		for _, g := range t.Groups {
			row.SSTables += len(g.Files)
			for _, f := range g.Files {
				row.SSTableBytes += f.Size
			}
		}
		if c := t.Compaction; c != nil && c.TotalBytes > 0 {
			row.Percent = min(100, 100*c.DoneBytes/c.TotalBytes)
		}
		rows = append(rows, row)
		bars = append(bars, Bar{Label: fmt.Sprintf("%d %s %s", t.ID, t.Table, keyString(t.Range.Start)), Value: float64(row.SSTableBytes) + float64(t.MemtableBytes)})
	}
	charts := append(h.rateAndP99("tablet RPCs", "cellar_tablet_rpc_duration_seconds", ts.Name()),
		barChart("tablet sizes (SSTables + memtable)", bars, formatBytes))
	h.render(w, "tabletserver", "tablet server "+ts.Name(), charts, struct {
		Name    string
		Stats   tablet.Stats
		Tablets []tabletRow
	}{ts.Name(), st, rows})
}

func (h *Handler) gateway(w http.ResponseWriter, r *http.Request) {
	if h.opts.Gateway == nil && !h.opts.GatewayRole {
		http.Error(w, "this process runs no gateway", http.StatusNotFound)
		return
	}
	var sessions []pgwire.SessionInfo
	if h.opts.Gateway != nil {
		sessions = h.opts.Gateway.Sessions()
	}
	charts := append(h.rateAndP99("SQL statements", "cellar_sql_statement_duration_seconds", "gateway"),
		h.rateAndP99("Bigtable RPCs", "cellar_bigtable_rpc_duration_seconds", "gateway")...)
	h.render(w, "gateway", "gateway", charts, struct {
		PG       bool
		Sessions []pgwire.SessionInfo
	}{h.opts.Gateway != nil, sessions})
}

// ago formats a past time with its distance from now.
func (h *Handler) ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%s (%s ago)", t.Format("15:04:05"), h.opts.Clock().Sub(t).Round(100*time.Millisecond))
}

// until formats a future time with its distance from now.
func (h *Handler) until(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	d := t.Sub(h.opts.Clock()).Round(100 * time.Millisecond)
	if d < 0 {
		return fmt.Sprintf("%s (%s ago)", t.Format("15:04:05"), -d)
	}
	return fmt.Sprintf("%s (in %s)", t.Format("15:04:05"), d)
}

// maxStatement is how much of a statement's text the gateway page shows
// (PostgreSQL's pg_stat_activity keeps 1024 bytes by default).
const maxStatement = 1024

// clip shortens a statement's text for the page.
func clip(s string) string {
	if r := []rune(s); len(r) > maxStatement {
		return string(r[:maxStatement]) + "…"
	}
	return s
}

// keyString shows a row key: printable keys as they are, others quoted;
// the empty key as "" (a range's open start or end).
func keyString(b []byte) string {
	if len(b) == 0 {
		return `""`
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return strconv.Quote(string(b))
		}
	}
	return string(b)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
