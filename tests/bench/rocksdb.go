package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dbBenchPath finds RocksDB's db_bench when it should run: by default if it
// is on PATH, always with -rocksdb, never with -rocksdb=false.
func dbBenchPath(flag autoBool) (string, bool) {
	if flag.set && !flag.val {
		return "", false
	}
	path, err := exec.LookPath("db_bench")
	return path, err == nil
}

// dbBench runs RocksDB's db_bench as close to the Go engines' workloads as
// its flags allow. It cannot match them exactly: its keys are its own
// encoding, its multi-threaded fillseq has every thread write the same key
// sequence, and its fillrandom draws keys with replacement. The reads
// therefore run on a database loaded by filluniquerandom (every key once,
// unsynced, not measured).
type dbBench struct {
	path string
	cfg  config
	rep  *engineReport
	cpu  *cpuMeter
	// assertions is set when db_bench warns it was built with assertions,
	// as Debian's is, which slows it down.
	assertions bool
}

// runDBBench runs the selected workloads with db_bench in a fresh dir,
// which it removes afterwards.
func runDBBench(path string, cfg config, dir string) engineReport {
	rep := engineReport{Engine: "rocksdb", Version: "db_bench", Approximate: true}
	defer os.RemoveAll(dir)
	fmt.Fprintf(os.Stderr, "bench: running rocksdb (%s)\n", path)
	start := time.Now()
	b := &dbBench{path: path, cfg: cfg, rep: &rep, cpu: startCPUMeter()}
	// db_bench creates the database directory but not its parents.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		rep.Err = err.Error()
	} else if err := b.run(dir); err != nil {
		rep.Err = err.Error()
	}
	rep.OtherCores = b.cpu.otherCores()
	if b.assertions {
		rep.Version += ", built with assertions"
	}
	fmt.Fprintf(os.Stderr, "bench: rocksdb done in %v\n", time.Since(start).Round(time.Second))
	return rep
}

func (b *dbBench) run(dir string) error {
	c := b.cfg
	perWriter := strconv.Itoa((c.num + c.writers - 1) / c.writers)
	for _, fill := range []string{wFillseq, wFillrandom} {
		if !c.selected(fill) {
			continue
		}
		db := filepath.Join(dir, fill)
		if _, err := b.exec(db, []string{fill}, "--threads="+strconv.Itoa(c.writers), "--writes="+perWriter, "--sync=1"); err != nil {
			return err
		}
		size, err := dirUsage(db)
		if err != nil {
			return err
		}
		if fill == wFillseq {
			b.rep.DiskFillseq = size
		} else {
			b.rep.DiskFillrandom = size
		}
		if err := os.RemoveAll(db); err != nil {
			return fmt.Errorf("remove %s: %w", db, err)
		}
	}
	if !c.needsReadDB() {
		return nil
	}

	db := filepath.Join(dir, "read")
	if _, err := b.exec(db, []string{"filluniquerandom"}, "--threads=1", "--sync=0"); err != nil {
		return err
	}
	// db_bench's fillrandom holds only about 63% distinct keys, so the size
	// that compares with the Go engines' is that of the full load.
	size, err := dirUsage(db)
	if err != nil {
		return err
	}
	b.rep.DiskFillrandom = size

	reads := []string{
		"--use_existing_db=1",
		"--threads=" + strconv.Itoa(c.readers),
		"--duration=" + strconv.Itoa(max(1, int(c.duration.Round(time.Second).Seconds()))),
		"--seek_nexts=" + strconv.Itoa(scanLength-1), // the seek reads the first row
	}
	if c.reads > 0 {
		reads = append(reads, "--reads="+strconv.FormatInt((c.reads+int64(c.readers)-1)/int64(c.readers), 10))
	} else {
		reads = append(reads, "--reads=1000000000000") // -duration bounds it
	}
	var warm []string
	for _, w := range []string{wReadrandom, wScan, wReadmissing} {
		if c.selected(w) {
			warm = append(warm, w)
		}
	}
	if len(warm) > 0 {
		if _, err := b.exec(db, warm, reads...); err != nil {
			return err
		}
	}
	if !c.selected(wReadrandomCold) {
		return nil
	}
	if b.rep.ResidentAfterEvict, err = evictDir(db); err != nil {
		return err
	}
	_, err = b.exec(db, []string{wReadrandomCold}, reads...)
	return err
}

// dbBenchName maps the harness's workload names to db_bench's.
func dbBenchName(workload string) string {
	switch workload {
	case wScan:
		return "seekrandom"
	case wReadrandomCold:
		return "readrandom"
	}
	return workload
}

// exec runs db_bench on db with the given workloads and records their
// results, named as the harness names them.
func (b *dbBench) exec(db string, workloads []string, extra ...string) ([]result, error) {
	c := b.cfg
	names := make([]string, len(workloads))
	for i, w := range workloads {
		names[i] = dbBenchName(w)
	}
	args := append([]string{
		"--db=" + db,
		"--benchmarks=" + strings.Join(names, ","),
		"--num=" + strconv.Itoa(c.num),
		"--key_size=" + strconv.Itoa(keySize),
		"--value_size=" + strconv.Itoa(c.valueSize),
		"--compression_type=snappy",
		"--compression_ratio=0.5",
		"--write_buffer_size=" + strconv.Itoa(memtableSize),
		"--cache_size=" + strconv.Itoa(blockCacheSize),
		"--block_size=" + strconv.Itoa(c.blockSize),
		"--bloom_bits=" + strconv.Itoa(bloomBitsKey),
		"--seed=" + strconv.FormatUint(c.seed, 10),
		"--histogram=0",
		"--statistics=0",
	}, extra...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(b.path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	fmt.Fprintf(os.Stderr, "[rocksdb] db_bench --benchmarks=%s\n", strings.Join(names, ","))
	err := cmd.Run()
	b.cpu.addProcess(cmd.ProcessState)
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			b.rep.MaxRSS = max(b.rep.MaxRSS, ru.Maxrss<<10)
		}
	}
	out := stdout.String() + stderr.String()
	if err != nil {
		return nil, fmt.Errorf("db_bench %s: %w: %s", strings.Join(names, ","), err, tail(out, 600))
	}
	if strings.Contains(out, "Assertions are enabled") {
		b.assertions = true
	}
	if v := regexp.MustCompile(`RocksDB:\s+version (\S+)`).FindStringSubmatch(out); v != nil {
		b.rep.Version = "db_bench " + v[1]
	}

	// A result line looks like
	//
	//	readrandom   :       5.068 micros/op 789179 ops/sec 10.001 seconds 7892999 operations; 800.1 MB/s (1973249 of 1973249 found)
	resultLine := regexp.MustCompile(`^(\w+)\s*:\s*[\d.]+ micros/op\s+\d+ ops/sec\s+([\d.]+) seconds\s+(\d+) operations;.*?(?:\((\d+) of (\d+) found\))?\s*$`)
	var parsed []result
	for _, line := range strings.Split(stdout.String(), "\n") {
		m := resultLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		i := len(parsed)
		if i >= len(workloads) || m[1] != names[i] {
			return nil, fmt.Errorf("db_bench: unexpected result line %q", line)
		}
		res, err := b.result(workloads[i], m)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, res)
	}
	if len(parsed) != len(workloads) {
		return nil, fmt.Errorf("db_bench printed %d results for %d benchmarks: %s", len(parsed), len(workloads), tail(out, 600))
	}
	for _, res := range parsed {
		if res.Workload == "filluniquerandom" {
			continue // the read load, not a measurement
		}
		b.rep.Results = append(b.rep.Results, res)
		fmt.Fprintf(os.Stderr, "[rocksdb] %-16s %10.0f ops/s %8.1f MB/s (%d ops in %.1fs)\n", res.Workload, res.opsPerSec(), res.mbPerSec(), res.Ops, res.Seconds)
	}
	return parsed, nil
}

// result turns a matched result line into a result, counting bytes the
// way the Go engines' runs do, and checks the found counts: every read of
// the full load must find its key, and no missing key may be found.
func (b *dbBench) result(workload string, m []string) (result, error) {
	secs, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return result{}, fmt.Errorf("db_bench seconds %q: %w", m[2], err)
	}
	ops, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil {
		return result{}, fmt.Errorf("db_bench operations %q: %w", m[3], err)
	}
	row := int64(keySize + b.cfg.valueSize)
	res := result{Workload: workload, Ops: ops, Seconds: secs, Bytes: ops * row}
	switch workload {
	case wScan:
		res.Bytes = ops * scanLength * row
	case wReadmissing:
		res.Bytes = 0
	}
	if m[4] != "" {
		// db_bench reports one thread's counts.
		found, _ := strconv.ParseInt(m[4], 10, 64)
		of, _ := strconv.ParseInt(m[5], 10, 64)
		switch {
		case (workload == wReadrandom || workload == wReadrandomCold) && found != of:
			return result{}, fmt.Errorf("db_bench %s found %d of %d keys, want all", workload, found, of)
		case workload == wReadmissing && found != 0:
			return result{}, fmt.Errorf("db_bench readmissing found %d of %d keys, want none", found, of)
		}
	}
	return res, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
