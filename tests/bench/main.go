// Command bench measures cellar's storage engine (kv/tablet) side by side
// with goleveldb and Pebble, and RocksDB's db_bench when it is installed,
// in one run, and prints cellar's throughput as a ratio of each peer's.
//
// The workloads follow LevelDB's db_bench: fillseq and fillrandom (every
// write synchronous, from many concurrent writers, so group commit
// matters), then on the fillrandom database readrandom, scan1000 and
// readmissing with the database warm, and readrandom-cold after a close,
// an eviction of its files from the page cache and a reopen.
//
// Each engine runs in its own child process (this binary re-executed with
// the hidden -child flag) on a fresh directory, so that peak RSS is per
// engine and no engine inherits another's heap or caches. Children print
// their results as JSON; the parent prints the table and writes it as
// Markdown to results/latest.md. See README.md.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// config is the parsed command line, shared by the parent and the children.
type config struct {
	num        int
	valueSize  int
	writers    int
	readers    int
	duration   time.Duration
	reads      int64
	seed       uint64
	workloads  []string
	engines    []string
	dir        string
	cpuProfile string
	out        string
	rocksdb    autoBool
	runs       int
	// blockSize is every engine's data block size.
	blockSize int
	stats     bool
	// child is the engine a child process runs; empty in the parent.
	child string
	// suites are the benchmark suites to run: storage, coord.
	suites []string
	coord  coordConfig
	kv     kvConfig
}

// childArgs is the command line that makes a child run engine in dir with
// the parent's settings.
func (c config) childArgs(engine, dir string) []string {
	return []string{
		"-child=" + engine,
		"-dir=" + dir,
		"-num=" + strconv.Itoa(c.num),
		"-value-size=" + strconv.Itoa(c.valueSize),
		"-writers=" + strconv.Itoa(c.writers),
		"-readers=" + strconv.Itoa(c.readers),
		"-duration=" + c.duration.String(),
		"-reads=" + strconv.FormatInt(c.reads, 10),
		"-seed=" + strconv.FormatUint(c.seed, 10),
		"-workloads=" + strings.Join(c.workloads, ","),
		"-cpuprofile=" + c.cpuProfile,
		"-stats=" + strconv.FormatBool(c.stats),
		"-block-size=" + strconv.Itoa(c.blockSize),
	}
}

// autoBool is a boolean flag that also remembers whether it was given, so
// -rocksdb can mean "run db_bench if it is installed" when absent.
type autoBool struct{ set, val bool }

func (a *autoBool) String() string {
	if a == nil || !a.set {
		return "auto"
	}
	return strconv.FormatBool(a.val)
}

func (a *autoBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	a.set, a.val = true, v
	return nil
}

func (a *autoBool) IsBoolFlag() bool { return true }

func main() {
	var (
		cfg       config
		workloads string
		engines   string
		suites    string
		clients   string
	)
	flag.IntVar(&cfg.num, "num", 1_000_000, "number of keys each fill writes")
	flag.IntVar(&cfg.valueSize, "value-size", 1000, "value size in bytes (values compress to about half with snappy)")
	flag.IntVar(&cfg.writers, "writers", 32, "concurrent writers in the fills, each doing one synchronous write at a time")
	flag.IntVar(&cfg.readers, "readers", 4, "concurrent readers in the read workloads")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each read workload runs")
	flag.Int64Var(&cfg.reads, "reads", 0, "stop each read workload after this many operations, if sooner than -duration (0: no limit)")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the values, the fillrandom order and the read keys")
	flag.StringVar(&workloads, "workloads", strings.Join(workloadNames(), ","), "comma-separated workloads to run")
	flag.StringVar(&engines, "engines", "cellar,goleveldb,pebble", "comma-separated engines to run (cellar, goleveldb, pebble)")
	flag.IntVar(&cfg.runs, "runs", 1, "run every engine this many times, interleaved, and report the median of each workload")
	flag.StringVar(&cfg.dir, "dir", "", "directory for the databases; a fresh subdirectory is made and removed (default: under results/, on the disk of the source tree)")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of each engine's workloads to this directory as <engine>-<workload>.pprof")
	flag.BoolVar(&cfg.stats, "stats", false, "print each engine's internal statistics (levels, files, caches) after the fills and reads")
	flag.IntVar(&cfg.blockSize, "block-size", 64<<10, "data block size of every engine, in bytes (64 KiB: cellar's default and the Bigtable paper's; the peers default to 4 KiB)")
	flag.StringVar(&cfg.out, "out", filepath.Join("results", "latest.md"), "Markdown report to write")
	flag.Var(&cfg.rocksdb, "rocksdb", "run RocksDB's db_bench too (default: if db_bench is on PATH)")
	flag.StringVar(&cfg.child, "child", "", "internal: run one engine and print JSON results")
	flag.StringVar(&suites, "suites", "storage,coord,kv,sql,bigtable", "comma-separated suites: storage (cellar's tablet engine vs goleveldb, Pebble, RocksDB), coord (cellar's Chubby cell vs etcd), kv (one tablet server vs the Bigtable paper's Figure 6), sql (cellar's SQL gateway vs PostgreSQL 15 through pgbench), bigtable (cellar's Bigtable API vs bttest through the Go client)")
	flag.IntVar(&cfg.kv.rows, "kv-rows", 300_000, "kv: rows each write workload writes (1000-byte values)")
	flag.IntVar(&cfg.kv.memRows, "kv-mem-rows", 50_000, "kv: rows of the in-memory table")
	flag.IntVar(&cfg.kv.clients, "kv-clients", 16, "kv: concurrent clients")
	flag.IntVar(&cfg.kv.batch, "kv-batch", 100, "kv: rows per batched write")
	flag.DurationVar(&cfg.kv.duration, "kv-duration", 10*time.Second, "kv: how long each read workload runs")
	flag.DurationVar(&cfg.coord.duration, "coord-duration", 10*time.Second, "coord: how long each put and lock workload runs")
	flag.StringVar(&clients, "coord-clients", "1,64", "coord: comma-separated client counts of the put and lock workloads")
	flag.IntVar(&cfg.coord.sessions, "coord-sessions", 10000, "coord: sessions kept alive in the sessions workload")
	flag.DurationVar(&cfg.coord.window, "coord-window", 30*time.Second, "coord: how long the sessions workload measures CPU")
	flag.IntVar(&cfg.coord.valueSize, "coord-value-size", 100, "coord: bytes per write")
	flag.StringVar(&cfg.coord.etcd, "etcd", "etcd", "coord: the etcd server binary (Debian's etcd-server)")
	flag.Usage = usage
	flag.Parse()
	if btServe != "" {
		// The bigtable suite's bttest child.
		if err := serveBttest(btServe); err != nil {
			fmt.Fprintln(os.Stderr, "bench: bttest:", err)
			os.Exit(1)
		}
		return
	}
	cfg.workloads = splitList(workloads)
	cfg.engines = splitList(engines)
	cfg.suites = splitList(suites)
	cfg.coord.runs = cfg.runs
	for _, c := range splitList(clients) {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -coord-clients: %q is not a positive count\n", c)
			os.Exit(2)
		}
		cfg.coord.clients = append(cfg.coord.clients, n)
	}

	if err := validate(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	var err error
	if cfg.child != "" {
		err = runChild(cfg)
	} else {
		err = runParent(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// usage prints the flags except the internal -child.
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "usage: go run . [flags]   (or: make bench BENCHFLAGS='flags')\n\nflags:\n")
	flag.VisitAll(func(f *flag.Flag) {
		if f.Name == "child" || f.Name == "bt-serve-bttest" {
			return
		}
		def := ""
		if f.DefValue != "" && !strings.Contains(f.Usage, "(default") {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(out, "  -%s\n    \t%s%s\n", f.Name, f.Usage, def)
	})
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func validate(cfg config) error {
	switch {
	case cfg.num < 1 || cfg.num >= 1e15:
		return fmt.Errorf("-num %d outside [1, 1e15)", cfg.num)
	case cfg.valueSize < 1:
		return fmt.Errorf("-value-size %d below 1", cfg.valueSize)
	case cfg.writers < 1 || cfg.readers < 1:
		return errors.New("-writers and -readers must be at least 1")
	case cfg.blockSize < 512 || cfg.blockSize > 16<<20:
		return fmt.Errorf("-block-size %d outside [512, 16 MiB]", cfg.blockSize)
	case cfg.runs < 1:
		return errors.New("-runs must be at least 1")
	case cfg.duration <= 0:
		return errors.New("-duration must be positive")
	case len(cfg.workloads) == 0:
		return errors.New("no workloads selected")
	case cfg.coord.duration <= 0 || cfg.coord.window <= 0 || cfg.coord.sessions < 1 || cfg.coord.valueSize < 1:
		return errors.New("-coord-duration, -coord-window, -coord-sessions and -coord-value-size must be positive")
	}
	for _, s := range cfg.suites {
		if s != "storage" && s != "coord" && s != "kv" && s != "sql" && s != "bigtable" {
			return fmt.Errorf("unknown suite %q (have storage, coord, kv, sql, bigtable)", s)
		}
	}
	if cfg.kv.rows < cfg.kv.clients || cfg.kv.memRows < 1 || cfg.kv.clients < 1 || cfg.kv.batch < 1 || cfg.kv.duration <= 0 {
		return errors.New("-kv-rows (at least -kv-clients), -kv-mem-rows, -kv-clients, -kv-batch and -kv-duration must be positive")
	}
	for _, w := range cfg.workloads {
		if !slices.Contains(workloadNames(), w) {
			return fmt.Errorf("unknown workload %q (have %s)", w, strings.Join(workloadNames(), ", "))
		}
	}
	openers := engineOpeners(0)
	for _, e := range cfg.engines {
		if _, ok := openers[e]; !ok {
			return fmt.Errorf("unknown engine %q (have cellar, goleveldb, pebble; RocksDB is -rocksdb)", e)
		}
	}
	if cfg.child != "" && cfg.dir == "" {
		return errors.New("-child needs -dir")
	}
	return nil
}

// runChild runs every selected workload against one engine and prints the
// report as JSON on stdout.
func runChild(cfg config) error {
	r := &runner{
		cfg:  cfg,
		ds:   newDataset(cfg.num, cfg.valueSize, cfg.seed),
		open: engineOpeners(cfg.blockSize)[cfg.child],
		logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "[%s] %s\n", cfg.child, fmt.Sprintf(format, args...))
		},
	}
	rep, err := r.run()
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.child, err)
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// runParent runs each engine in a child process, one after another, then
// prints and writes the report.
func runParent(cfg config) (err error) {
	base, cleanup, err := dataDir(cfg.dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanup()) }()
	if cfg.cpuProfile != "" {
		if cfg.cpuProfile, err = filepath.Abs(cfg.cpuProfile); err != nil {
			return fmt.Errorf("profile directory: %w", err)
		}
		if err := os.MkdirAll(cfg.cpuProfile, 0o755); err != nil {
			return fmt.Errorf("profile directory: %w", err)
		}
	}
	var text, md bytes.Buffer
	var errs []error
	if slices.Contains(cfg.suites, "storage") {
		errs = append(errs, runStorageSuite(cfg, base, &text, &md))
	}
	if slices.Contains(cfg.suites, "coord") {
		t, m, err := runCoordSuite(cfg.coord, base)
		text.WriteString(t)
		md.WriteString(m)
		errs = append(errs, err)
	}
	if slices.Contains(cfg.suites, "kv") {
		cfg.kv.cpuProfile = cfg.cpuProfile
		t, m, err := runKVSuite(cfg.kv, base)
		text.WriteString(t)
		md.WriteString(m)
		errs = append(errs, err)
	}
	if slices.Contains(cfg.suites, "sql") {
		t, m, err := runSQLSuite(base, cfg.runs)
		text.WriteString(t)
		md.WriteString(m)
		errs = append(errs, err)
	}
	if slices.Contains(cfg.suites, "bigtable") {
		t, m, err := runBigtableSuite(base, cfg.runs, cfg.cpuProfile)
		text.WriteString(t)
		md.WriteString(m)
		errs = append(errs, err)
	}
	os.Stdout.Write(text.Bytes())
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(cfg.out, md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", cfg.out)
	return errors.Join(errs...)
}

// runStorageSuite runs each engine in a child process, one after another,
// and writes the report as text and Markdown.
func runStorageSuite(cfg config, base string, text, md *bytes.Buffer) error {
	run := runInfo{cfg: cfg, started: time.Now(), dir: base, fsType: fsType(base)}
	if run.fsType == "tmpfs" {
		fmt.Fprintln(os.Stderr, "bench: warning: the data directory is on tmpfs, where fsync costs nothing; fill numbers will not mean much")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: %d keys, %d-byte values, %d writers, %d readers, reads for %v; data in %s\n",
		cfg.num, cfg.valueSize, cfg.writers, cfg.readers, cfg.duration, base)

	dbBench, withRocksDB := dbBenchPath(cfg.rocksdb)
	if !withRocksDB && cfg.rocksdb.set && cfg.rocksdb.val {
		return errors.New("-rocksdb given but db_bench is not on PATH (apt-get install rocksdb-tools)")
	}
	// Rounds interleave the engines, so that a disturbance on a shared
	// machine lands on one round of every engine rather than on all the
	// rounds of one.
	runs := map[string][]engineReport{}
	for round := range cfg.runs {
		if cfg.runs > 1 {
			fmt.Fprintf(os.Stderr, "bench: round %d of %d\n", round+1, cfg.runs)
		}
		for _, name := range cfg.engines {
			runs[name] = append(runs[name], runEngineChild(self, cfg, name, filepath.Join(base, name)))
		}
		if withRocksDB {
			runs["rocksdb"] = append(runs["rocksdb"], runDBBench(dbBench, cfg, filepath.Join(base, "rocksdb")))
		}
	}
	names := slices.Clone(cfg.engines)
	if withRocksDB {
		names = append(names, "rocksdb")
	}
	var failed []string
	for _, name := range names {
		rep := medianReport(runs[name])
		if rep.Err != "" {
			failed = append(failed, name)
			fmt.Fprintf(os.Stderr, "bench: %s failed: %s\n", name, rep.Err)
		}
		run.reports = append(run.reports, rep)
	}

	run.writeText(text)
	run.writeMarkdown(md)
	if len(failed) > 0 {
		return fmt.Errorf("engines failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// dataDir makes the fresh directory the databases live in and returns a
// function that removes it. By default it is under results/ (gitignored)
// rather than $TMPDIR, which may be a tmpfs where fsync is free.
func dataDir(parent string) (string, func() error, error) {
	if parent == "" {
		parent = "results"
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, fmt.Errorf("data directory: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "data-")
	if err != nil {
		return "", nil, fmt.Errorf("data directory: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", nil, fmt.Errorf("data directory: %w", err)
	}
	return dir, func() error { return os.RemoveAll(dir) }, nil
}

// fsType names the file system under dir, as far as the report cares.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	switch st.Type {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	}
	return fmt.Sprintf("0x%x", st.Type)
}

// runEngineChild runs one engine's child process on a fresh dir, which it
// removes afterwards, and returns its report with the child's peak RSS.
// A failure is recorded in the report, so the other engines still run.
func runEngineChild(self string, cfg config, name, dir string) engineReport {
	rep := engineReport{Engine: name, Version: moduleVersion(name)}
	defer os.RemoveAll(dir)
	var stdout bytes.Buffer
	cmd := exec.Command(self, cfg.childArgs(name, dir)...)
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr // progress lines
	fmt.Fprintf(os.Stderr, "bench: running %s\n", name)
	start := time.Now()
	meter := startCPUMeter()
	err := cmd.Run()
	meter.addProcess(cmd.ProcessState)
	rep.OtherCores = meter.otherCores()
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rep.MaxRSS = ru.Maxrss << 10 // KiB on Linux
		}
	}
	if err != nil {
		rep.Err = fmt.Sprintf("child: %v", err)
		return rep
	}
	maxRSS, other := rep.MaxRSS, rep.OtherCores
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		rep.Err = fmt.Sprintf("decode child output: %v", err)
	}
	rep.MaxRSS, rep.OtherCores = maxRSS, other
	fmt.Fprintf(os.Stderr, "bench: %s done in %v\n", name, time.Since(start).Round(time.Second))
	return rep
}

// cpuMeter measures how much CPU other processes used while an engine ran,
// from the machine's busy time in /proc/stat minus the engine process's
// own: on a shared machine this tells whether a result was disturbed.
type cpuMeter struct {
	start    time.Time
	busy     time.Duration
	ownedCPU time.Duration
}

func startCPUMeter() *cpuMeter {
	return &cpuMeter{start: time.Now(), busy: machineBusy()}
}

// addProcess counts a finished engine process's CPU time as the engine's.
func (m *cpuMeter) addProcess(ps *os.ProcessState) {
	if ps != nil {
		m.ownedCPU += ps.UserTime() + ps.SystemTime()
	}
}

// otherCores is the average number of cores other processes kept busy.
func (m *cpuMeter) otherCores() float64 {
	wall := time.Since(m.start)
	other := machineBusy() - m.busy - m.ownedCPU
	if wall <= 0 || other < 0 {
		return 0
	}
	return other.Seconds() / wall.Seconds()
}

// machineBusy is the CPU time all cores spent on anything but idle and
// I/O wait since boot, or 0 if /proc/stat cannot be read.
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0
	}
	var ticks int64
	// user nice system idle iowait irq softirq steal: skip idle and iowait.
	for i, f := range fields[1:min(len(fields), 9)] {
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		ticks += n
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond
}
