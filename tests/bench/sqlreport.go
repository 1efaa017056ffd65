package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// sqlReport is what the sql suite prints and writes.
type sqlReport struct {
	cfg     sqlConfig
	tools   sqlTools
	sides   map[string]*sqlSide
	results map[string]map[string]sqlResult
	// spread is, per workload, the lowest and highest ratio of the rounds
	// taken one by one (each round runs both sides, one after the other),
	// when at least two rounds have both: how far the median can be
	// trusted on a noisy machine.
	spread map[string][2]float64
}

// roundSpread computes sqlReport.spread from each side's runs, in round
// order.
func roundSpread(all map[string]map[string][]sqlResult) map[string][2]float64 {
	out := map[string][2]float64{}
	for w, c := range all["cellar"] {
		p := all["postgres"][w]
		lo, hi, n := math.Inf(1), 0.0, 0
		for i := range min(len(c), len(p)) {
			if c[i].err != nil || p[i].err != nil || p[i].tps == 0 {
				continue
			}
			r := c[i].tps / p[i].tps
			lo, hi, n = min(lo, r), max(hi, r), n+1
		}
		if n >= 2 {
			out[w] = [2]float64{lo, hi}
		}
	}
	return out
}

// spreadOf is a workload's per-round ratios as "lo-hi", or "-".
func (r *sqlReport) spreadOf(w string) string {
	s, ok := r.spread[w]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f-%.2fx", s[0], s[1])
}

// sqlRow is one line of the results table.
type sqlRow struct {
	workload, clients string
	key               string // the workload's name in results
	cellar, postgres  sqlResult
}

func (r *sqlReport) rows() []sqlRow {
	out := []sqlRow{{workload: "load (rows/s)", key: "load", clients: fmt.Sprint(sqlLoaders),
		cellar: r.results["cellar"]["load"], postgres: r.results["postgres"]["load"]}}
	for _, w := range sqlWorkloadList(r.cfg.schema) {
		if _, ok := r.results["postgres"][w.name]; !ok {
			if _, ok := r.results["cellar"][w.name]; !ok {
				continue
			}
		}
		out = append(out, sqlRow{workload: w.name, key: w.name, clients: fmt.Sprint(w.clients(r.cfg)),
			cellar: r.results["cellar"][w.name], postgres: r.results["postgres"][w.name]})
	}
	return out
}

func (r *sqlReport) side(label string) *sqlSide {
	if s := r.sides[label]; s != nil {
		return s
	}
	return &sqlSide{label: label}
}

func (r *sqlReport) title() string {
	return fmt.Sprintf("%s vs %s, each alone on loopback, driven by pgbench %s", r.side("cellar").describe("cellar"), r.side("postgres").describe("PostgreSQL"), r.tools.pgbenchVersion)
}

// describe names what ran, with its version.
func (s *sqlSide) describe(def string) string {
	switch {
	case s.version == "":
		return orUnknown(s.kind, def)
	case s.kind != "PostgreSQL" && strings.HasPrefix(s.kind, "PostgreSQL"):
		return s.version + " " + strings.Trim(strings.TrimPrefix(s.kind, "PostgreSQL"), " ()")
	}
	return s.version
}

func (r *sqlReport) settings() string {
	mode := "-M prepared"
	if r.cfg.schema.upsertMode != "prepared" {
		mode += " (the upsert -M " + r.cfg.schema.upsertMode + ")"
	}
	s := fmt.Sprintf("%s with %d rows: 16-digit keys, %d-byte values, loaded in INSERTs of %d rows by %d psql sessions; pgbench %s, %v per workload, -j %d",
		strings.TrimPrefix(r.cfg.schema.create, "CREATE TABLE "), r.cfg.rows, r.cfg.valueSize, sqlLoadBatch, sqlLoaders, mode, r.cfg.duration.Round(time.Second), r.cfg.threads)
	if r.cfg.runs > 1 {
		s += fmt.Sprintf("; the median of %d alternating rounds", r.cfg.runs)
	}
	return s
}

func orUnknown(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sqlTPS(r sqlResult) string {
	if r.err != nil {
		return "failed"
	}
	return fmt.Sprintf("%.0f", r.tps)
}

func sqlLatency(r sqlResult) string {
	if r.err != nil {
		return "-"
	}
	return fmt.Sprintf("%.2fms", r.latency.Seconds()*1000)
}

// sqlCPU is the server's CPU per transaction (per row for the load).
func sqlCPU(r sqlResult) string {
	if r.err != nil || r.serverCPU < 0 || r.txns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fµs", r.serverCPU.Seconds()*1e6/float64(r.txns))
}

// otherLoad is the most other processes kept busy during any of a side's
// workloads.
func (r *sqlReport) otherLoad(label string) string {
	most, where := -1.0, ""
	for _, row := range r.rows() {
		res := row.cellar
		if label == "postgres" {
			res = row.postgres
		}
		if res.err == nil && res.otherCores > most {
			most, where = res.otherCores, row.workload
		}
	}
	if most < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f cores (%s)", most, where)
}

// sqlErrors is the row's errors, one line, side by side.
func sqlErrors(row sqlRow, n int) string {
	var errs []string
	if row.cellar.err != nil {
		errs = append(errs, "cellar: "+row.cellar.err.Error())
	}
	if row.postgres.err != nil {
		errs = append(errs, "postgres: "+row.postgres.err.Error())
	}
	return shorten(strings.Join(errs, "; "), n)
}

func (r *sqlReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nsql: %s\n%s\n\n", r.title(), r.settings())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tclients\tcellar tps\tpostgres tps\tcellar/postgres\tper round\tcellar latency\tpostgres latency\tcellar CPU/txn\tpostgres CPU/txn\t")
	var failed []sqlRow
	for _, row := range r.rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", row.workload, row.clients, sqlTPS(row.cellar), sqlTPS(row.postgres),
			ratio(row.cellar.tps, row.postgres.tps, row.cellar.err, row.postgres.err), r.spreadOf(row.key), sqlLatency(row.cellar), sqlLatency(row.postgres),
			sqlCPU(row.cellar), sqlCPU(row.postgres))
		if e := sqlErrors(row, 160); e != "" {
			fmt.Fprintf(tw, "  %s", e)
			failed = append(failed, row)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, label := range []string{"cellar", "postgres"} {
		s := r.side(label)
		fmt.Fprintf(w, "%s: %s", label, orUnknown(s.kind, "did not start"))
		if s.diskAfterLoad > 0 {
			fmt.Fprintf(w, ", %s on disk after the load", sizeOrDash(s.diskAfterLoad))
		}
		fmt.Fprintf(w, "; other CPU load up to %s\n", r.otherLoad(label))
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "errors:")
		for _, row := range failed {
			fmt.Fprintf(w, "  %s: %s\n", row.workload, sqlErrors(row, 2000))
		}
	}
	fmt.Fprintln(w, sqlLegend)
}

const sqlLegend = "cellar/postgres is cellar's tps divided by PostgreSQL's: above 1 cellar is faster. Per round is the lowest and highest of the rounds' own ratios (with -runs 2 or more). Latency is pgbench's average per transaction (per INSERT for the load); " +
	"CPU/txn is the server's CPU time per transaction (per row for the load). Other CPU load is how many cores processes other than the server and its clients kept busy: well above 0, the side's numbers are suspect; rerun."

func (r *sqlReport) writeMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n## sql: cellar's SQL gateway vs PostgreSQL\n\n%s; %s.\n\n", r.title(), r.settings())
	fmt.Fprintln(w, "| workload | statement | clients | cellar tps | postgres tps | cellar/postgres | per round | cellar latency | postgres latency | cellar CPU/txn | postgres CPU/txn | error |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	what := map[string]string{"load (rows/s)": fmt.Sprintf("INSERT INTO bench (%s, %s) VALUES (…), … (%d rows)", r.cfg.schema.key, r.cfg.schema.val, sqlLoadBatch)}
	for _, wl := range sqlWorkloadList(r.cfg.schema) {
		what[wl.name] = wl.what
	}
	for _, row := range r.rows() {
		fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.workload, what[row.workload], row.clients,
			sqlTPS(row.cellar), sqlTPS(row.postgres), ratio(row.cellar.tps, row.postgres.tps, row.cellar.err, row.postgres.err), r.spreadOf(row.key),
			sqlLatency(row.cellar), sqlLatency(row.postgres), sqlCPU(row.cellar), sqlCPU(row.postgres), strings.ReplaceAll(sqlErrors(row, 600), "|", "\\|"))
	}
	fmt.Fprintln(w, "\n| side | what runs | version | disk after load | other CPU load, most |\n|---|---|---|---:|---:|")
	for _, label := range []string{"cellar", "postgres"} {
		s := r.side(label)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", label, orUnknown(s.kind, "did not start"), orUnknown(s.version, "-"), sizeOrDash(s.diskAfterLoad), r.otherLoad(label))
	}
	fmt.Fprintln(w, "\n"+sqlLegend)
}
