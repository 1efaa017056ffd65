package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// engineReport is what one engine's run produced; children send it to the
// parent as JSON.
type engineReport struct {
	Engine  string   `json:"engine"`
	Version string   `json:"version"`
	Results []result `json:"results"`
	// DiskFillseq and DiskFillrandom are the database sizes right after
	// each fill, open: tables and logs.
	DiskFillseq    int64 `json:"disk_fillseq"`
	DiskFillrandom int64 `json:"disk_fillrandom"`
	// OpenColdSec is how long the reopen after the page-cache eviction
	// took, log replay included.
	OpenColdSec float64 `json:"open_cold_sec"`
	// ResidentAfterEvict is how much of the database mincore still found
	// in the page cache after the eviction.
	ResidentAfterEvict int64 `json:"resident_after_evict"`
	// MaxRSS is the child's peak resident set, from getrusage; the parent
	// fills it in.
	MaxRSS int64 `json:"max_rss"`
	// OtherCores is how many cores other processes on the machine kept
	// busy on average while the engine ran; the parent fills it in.
	OtherCores float64 `json:"other_cores"`
	// Approximate marks results from RocksDB's db_bench, whose key set and
	// workloads differ in detail from the Go engines' (see README.md).
	Approximate bool `json:"approximate,omitempty"`
	// Err is why the engine did not finish; the parent fills it in.
	Err string `json:"err,omitempty"`
}

// medianReport merges the runs of one engine: each workload's result is
// the run with the median ops/s, annotated with the range over all runs;
// sizes, RSS and load are the largest seen. Any failed run fails the
// engine, since a wrong answer in one run is a wrong answer.
func medianReport(runs []engineReport) engineReport {
	if len(runs) == 1 {
		return runs[0]
	}
	out := runs[0]
	out.Results = nil
	for _, r := range runs {
		if r.Err != "" {
			out.Err = r.Err
		}
		out.MaxRSS = max(out.MaxRSS, r.MaxRSS)
		out.OtherCores = max(out.OtherCores, r.OtherCores)
		out.DiskFillseq = max(out.DiskFillseq, r.DiskFillseq)
		out.DiskFillrandom = max(out.DiskFillrandom, r.DiskFillrandom)
		out.OpenColdSec = max(out.OpenColdSec, r.OpenColdSec)
		out.ResidentAfterEvict = max(out.ResidentAfterEvict, r.ResidentAfterEvict)
	}
	for _, w := range workloadNames() {
		var all []result
		for i := range runs {
			if res, ok := runs[i].result(w); ok {
				all = append(all, res)
			}
		}
		if len(all) == 0 {
			continue
		}
		slices.SortFunc(all, func(a, b result) int { return cmp.Compare(a.opsPerSec(), b.opsPerSec()) })
		med := all[len(all)/2]
		med.Note = strings.TrimSpace(fmt.Sprintf("%s median of %d: %.0f-%.0f", med.Note, len(all), all[0].opsPerSec(), all[len(all)-1].opsPerSec()))
		out.Results = append(out.Results, med)
	}
	return out
}

func (r *engineReport) result(workload string) (result, bool) {
	for _, res := range r.Results {
		if res.Workload == workload && res.Seconds > 0 {
			return res, true
		}
	}
	return result{}, false
}

// label is the engine's name in the tables; approximate ones get a star.
func (r *engineReport) label() string {
	if r.Approximate {
		return r.Engine + "*"
	}
	return r.Engine
}

// runInfo is everything the report shows.
type runInfo struct {
	cfg     config
	started time.Time
	dir     string
	fsType  string
	reports []engineReport
}

// target is the least cellar/peer throughput ratio cellar aims for on a
// workload, if it has one: at least goleveldb everywhere, and at least
// 0.7x Pebble on fillrandom and (warm) readrandom.
func target(peer, workload string) (float64, bool) {
	switch {
	case peer == "goleveldb":
		return 1, true
	case peer == "pebble" && (workload == wFillrandom || workload == wReadrandom):
		return 0.7, true
	}
	return 0, false
}

// table is a header and rows of cells, rendered as text or Markdown.
type table struct {
	header []string
	rows   [][]string
}

// resultsTable has one row per workload and engine, with cellar's
// throughput as a ratio of that engine's and the target, if any.
func (ri *runInfo) resultsTable() (table, []string) {
	t := table{header: []string{"workload", "engine", "ops/s", "MB/s", "cellar/engine", "target", "disk write amp"}}
	var verdicts []string
	cellar := ri.report("cellar")
	for _, w := range workloadNames() {
		var cres result
		hasCellar := false
		if cellar != nil {
			cres, hasCellar = cellar.result(w)
		}
		first := true
		for i := range ri.reports {
			rep := &ri.reports[i]
			res, ok := rep.result(w)
			if !ok {
				continue
			}
			name := w
			if !first {
				name = ""
			}
			first = false
			ratio, goal := "", ""
			if rep.Engine != "cellar" && hasCellar {
				x := cres.opsPerSec() / res.opsPerSec()
				ratio = fmt.Sprintf("%.2fx", x)
				if least, ok := target(rep.Engine, w); ok {
					verdict := "met"
					if x < least {
						verdict = "MISSED"
					}
					goal = fmt.Sprintf(">=%.1fx %s", least, verdict)
					verdicts = append(verdicts, fmt.Sprintf("%s: cellar/%s %.2fx, target >=%.1fx: %s", w, rep.Engine, x, least, verdict))
				}
			}
			mbs := fmt.Sprintf("%.1f", res.mbPerSec())
			if res.Bytes == 0 {
				mbs = "-"
			}
			ops := fmt.Sprintf("%.0f", res.opsPerSec())
			if res.Note != "" {
				ops += " (" + res.Note + ")"
			}
			amp := ""
			if res.DiskWrites > 0 && res.Bytes > 0 {
				amp = fmt.Sprintf("%.1fx", float64(res.DiskWrites)/float64(res.Bytes))
			}
			t.rows = append(t.rows, []string{name, rep.label(), ops, mbs, ratio, goal, amp})
		}
	}
	return t, verdicts
}

// enginesTable has one row per engine: version, memory and disk.
func (ri *runInfo) enginesTable() table {
	t := table{header: []string{"engine", "version", "peak RSS", "disk after fillseq", "disk after fillrandom", "reopen after eviction", "cached after eviction", "other CPU load", "status"}}
	for i := range ri.reports {
		rep := &ri.reports[i]
		status := "ok"
		if rep.Err != "" {
			// One line, so the tables stay tables.
			status = "FAILED: " + tail(strings.Join(strings.Fields(rep.Err), " "), 300)
		}
		t.rows = append(t.rows, []string{
			rep.label(), rep.Version, sizeOrDash(rep.MaxRSS), sizeOrDash(rep.DiskFillseq), sizeOrDash(rep.DiskFillrandom),
			secsOrDash(rep.OpenColdSec), residentOrDash(rep), fmt.Sprintf("%.2f cores", rep.OtherCores), status,
		})
	}
	return t
}

func (ri *runInfo) report(engine string) *engineReport {
	for i := range ri.reports {
		if ri.reports[i].Engine == engine && ri.reports[i].Err == "" {
			return &ri.reports[i]
		}
	}
	return nil
}

func sizeOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
}

// residentOrDash shows what an eviction left cached, or a dash if the run
// had no eviction.
func residentOrDash(rep *engineReport) string {
	if !slices.ContainsFunc(rep.Results, func(r result) bool { return r.Workload == wReadrandomCold }) {
		return "-"
	}
	if rep.ResidentAfterEvict == 0 {
		return "0"
	}
	return sizeOrDash(rep.ResidentAfterEvict)
}

func secsOrDash(s float64) string {
	if s <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fs", s)
}

// settings describes the run in a few lines, for both renderings.
func (ri *runInfo) settings() []string {
	c := ri.cfg
	lines := []string{
		fmt.Sprintf("%s, %s, %s/%s, %d CPUs, data on %s", ri.started.Format(time.RFC3339), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), ri.fsType),
		fmt.Sprintf("%d keys of %d bytes, values of %d bytes (about 50%% compressible), seed %d", c.num, keySize, c.valueSize, c.seed),
		fmt.Sprintf("fills: %d concurrent writers, every write synchronous (fsync before acknowledgment, group commit allowed)", c.writers),
		fmt.Sprintf("reads: %d concurrent readers, %v per workload, on the fillrandom database; scans read %d rows", c.readers, c.duration, scanLength),
		fmt.Sprintf("every engine: %d KiB data blocks, %d MiB memtable, %d MiB block cache, bloom filter %d bits/key, snappy; other options at each engine's defaults", c.blockSize>>10, memtableSize>>20, blockCacheSize>>20, bloomBitsKey),
	}
	if c.runs > 1 {
		lines = append(lines, fmt.Sprintf("each engine ran %d times, interleaved; each number is the median run, with the range of ops/s in parentheses", c.runs))
	}
	if c.reads > 0 {
		lines = append(lines, fmt.Sprintf("read workloads stop after %d operations if sooner", c.reads))
	}
	if slices.ContainsFunc(ri.reports, func(r engineReport) bool { return r.Approximate }) {
		lines = append(lines, "rocksdb* is RocksDB's db_bench with matching settings but its own keys and workload details (fillseq threads overwrite each other's keys, fillrandom draws keys with replacement, reads run on an unsynced filluniquerandom load): compare it loosely")
	}
	return lines
}

// writeText renders the report for the terminal.
func (ri *runInfo) writeText(w io.Writer) {
	results, verdicts := ri.resultsTable()
	fmt.Fprintln(w)
	for _, s := range ri.settings() {
		fmt.Fprintln(w, "# "+s)
	}
	fmt.Fprintln(w)
	writeTextTable(w, results)
	fmt.Fprintln(w)
	writeTextTable(w, ri.enginesTable())
	if len(verdicts) > 0 {
		fmt.Fprintln(w, "\ntargets:")
		for _, v := range verdicts {
			fmt.Fprintln(w, "  "+v)
		}
	}
	fmt.Fprintln(w)
}

func writeTextTable(w io.Writer, t table) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, row := range t.rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

// writeMarkdown renders the report for results/latest.md.
func (ri *runInfo) writeMarkdown(w io.Writer) {
	results, verdicts := ri.resultsTable()
	fmt.Fprintf(w, "# cellar storage engine benchmark\n\n")
	for _, s := range ri.settings() {
		fmt.Fprintf(w, "- %s\n", s)
	}
	fmt.Fprintf(w, "\n## Throughput\n\ncellar/engine is cellar's ops/s divided by the engine's: above 1 cellar is faster.\n\n")
	writeMarkdownTable(w, results)
	fmt.Fprintf(w, "\n## Engines\n\n")
	writeMarkdownTable(w, ri.enginesTable())
	if len(verdicts) > 0 {
		fmt.Fprintf(w, "\n## Targets\n\n")
		for _, v := range verdicts {
			fmt.Fprintf(w, "- %s\n", v)
		}
	}
}

func writeMarkdownTable(w io.Writer, t table) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.header, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(t.header)))
	for _, row := range t.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}
