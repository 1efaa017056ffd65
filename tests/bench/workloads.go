package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The workloads, in the order they run. The reads run on the database
// fillrandom built: keys written in random order leave every engine with
// the multi-level (or multi-file) layout a real database has, where a
// sequential fill would leave trivially sorted, non-overlapping files.
const (
	wFillseq        = "fillseq"
	wFillrandom     = "fillrandom"
	wReadrandom     = "readrandom"
	wScan           = "scan1000"
	wReadmissing    = "readmissing"
	wReadrandomCold = "readrandom-cold"
)

// workloadNames lists the workloads -workloads accepts, in run order.
func workloadNames() []string {
	return []string{wFillseq, wFillrandom, wReadrandom, wScan, wReadmissing, wReadrandomCold}
}

// scanLength is how many rows scan1000 reads after its seek.
const scanLength = 1000

// keySize is the fixed key length: the zero-padded decimal index.
const keySize = 16

// appendKey appends the key of index i: 16 decimal digits, so keys sort in
// index order and every engine sees the same bytes.
func appendKey(dst []byte, i int) []byte {
	var b [keySize]byte
	for j := keySize - 1; j >= 0; j-- {
		b[j] = '0' + byte(i%10)
		i /= 10
	}
	return append(dst, b[:]...)
}

// appendMissingKey appends a key that no fill writes: key i with its last
// digit replaced by 'x'. It sorts between existing keys (after the ones
// that share its first 15 digits), so file key ranges cannot rule it out
// and an engine must consult its bloom filters or read a block.
func appendMissingKey(dst []byte, i int) []byte {
	dst = appendKey(dst, i)
	dst[len(dst)-1] = 'x'
	return dst
}

// dataset holds the values and the random write order every engine gets:
// the same bytes for the same seed.
type dataset struct {
	num       int
	valueSize int
	seed      uint64
	// values is compressible random data; the value of index i is a window
	// of it, like db_bench's RandomGenerator.
	values []byte
	// order is the permutation fillrandom writes in.
	order []int
}

func newDataset(num, valueSize int, seed uint64) *dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	// Like db_bench: each 100-byte piece is 50 random printable bytes
	// repeated, so snappy halves it, and the whole buffer is at least
	// 1 MiB so that neighbouring values do not repeat each other.
	n := max(1<<20, 64*valueSize) + valueSize
	values := make([]byte, 0, n+100)
	for len(values) < n {
		var raw [50]byte
		for i := range raw {
			raw[i] = ' ' + byte(rng.IntN(95))
		}
		values = append(values, raw[:]...)
		values = append(values, raw[:]...)
	}
	return &dataset{num: num, valueSize: valueSize, seed: seed, values: values, order: rng.Perm(num)}
}

// value returns the value of index i. The slice is capped so that no
// engine can append into the shared buffer.
func (d *dataset) value(i int) []byte {
	off := i * d.valueSize % (len(d.values) - 100 - d.valueSize)
	return d.values[off : off+d.valueSize : off+d.valueSize]
}

// result is one workload's measurement in one engine.
type result struct {
	Workload string  `json:"workload"`
	Ops      int64   `json:"ops"`
	Bytes    int64   `json:"bytes"` // keys and values written or read
	Seconds  float64 `json:"seconds"`
	// DiskWrites is what the process wrote to the block layer during the
	// workload (/proc/self/io write_bytes): logs, flushes and compactions.
	DiskWrites int64  `json:"disk_writes,omitempty"`
	Note       string `json:"note,omitempty"`
}

func (r result) opsPerSec() float64 { return float64(r.Ops) / r.Seconds }
func (r result) mbPerSec() float64  { return float64(r.Bytes) / r.Seconds / 1e6 }

// runner runs the workloads against one engine.
type runner struct {
	cfg  config
	ds   *dataset
	open openFunc
	// logf prints progress to stderr; the parent passes it through.
	logf func(format string, args ...any)
}

// profile runs fn under a CPU profile written to the -cpuprofile directory
// as <engine>-<workload>.pprof, so each workload's profile stands alone.
func (r *runner) profile(workload string, fn func() error) error {
	if r.cfg.cpuProfile == "" {
		return fn()
	}
	name := filepath.Join(r.cfg.cpuProfile, r.cfg.child+"-"+workload+".pprof")
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("start CPU profile: %w", err)
	}
	err = fn()
	pprof.StopCPUProfile()
	return errors.Join(err, f.Close())
}

// parallel runs body on n goroutines and returns the first error; the
// others see stop become true and return early.
func parallel(n int, body func(worker int, stop *atomic.Bool) error) error {
	var (
		wg    sync.WaitGroup
		stop  atomic.Bool
		once  sync.Once
		first error
	)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := body(w, &stop); err != nil {
				once.Do(func() { first = err })
				stop.Store(true)
			}
		}()
	}
	wg.Wait()
	return first
}

// fill writes every index once with cfg.writers concurrent writers, each
// doing one synchronous put at a time: throughput comes only from the
// engine's own group commit, never from application-side batching.
func (r *runner) fill(e engine, workload string, order []int) (result, error) {
	var next, done atomic.Int64
	n := int64(r.ds.num)
	stopProgress := r.progress(workload, &done, n)
	written := diskWrites()
	start := time.Now()
	err := parallel(r.cfg.writers, func(_ int, stop *atomic.Bool) error {
		for !stop.Load() {
			pos := next.Add(1) - 1
			if pos >= n {
				return nil
			}
			i := int(pos)
			if order != nil {
				i = order[pos]
			}
			// A fresh key per put: an engine may keep the slice.
			if err := e.put(appendKey(nil, i), r.ds.value(i)); err != nil {
				return fmt.Errorf("%s: put key %d: %w", workload, i, err)
			}
			done.Add(1)
		}
		return nil
	})
	secs := time.Since(start).Seconds()
	written = diskWrites() - written
	stopProgress()
	if err != nil {
		return result{}, err
	}
	return result{Workload: workload, Ops: n, Bytes: n * int64(keySize+r.ds.valueSize), Seconds: secs, DiskWrites: written}, nil
}

// diskWrites reads how many bytes this process has caused to be written
// to storage, or 0 where /proc/self/io is missing. Dividing its growth
// over a fill by the bytes the fill wrote gives the write amplification
// the fill paid for while it ran.
func diskWrites() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// progress prints how far a long workload got every 10 seconds until the
// returned function is called.
func (r *runner) progress(workload string, done *atomic.Int64, total int64) func() {
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d := done.Load()
				r.logf("%s: %d/%d ops, %.0f ops/s so far", workload, d, total, float64(d)/time.Since(start).Seconds())
			}
		}
	}()
	return func() { close(stop); <-finished }
}

// verifySample reads back a seeded sample of keys and fails unless each
// returns the value written. It is not timed.
func (r *runner) verifySample(e engine, what string) error {
	rng := rand.New(rand.NewPCG(r.ds.seed, 2))
	for range min(r.ds.num, 2000) {
		i := rng.IntN(r.ds.num)
		if err := r.checkGet(e, appendKey(nil, i), i); err != nil {
			return fmt.Errorf("verify %s: %w", what, err)
		}
	}
	return nil
}

// checkGet reads key and fails unless it holds the value of index i.
func (r *runner) checkGet(e engine, key []byte, i int) error {
	want := r.ds.value(i)
	found, err := e.get(key, func(v []byte) error {
		if !bytes.Equal(v, want) {
			return fmt.Errorf("key %s: got %d bytes %.20q..., want %.20q...", key, len(v), v, want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("get %s: %w", key, err)
	}
	if !found {
		return fmt.Errorf("key %s written but not found", key)
	}
	return nil
}

// timedReads runs op on cfg.readers goroutines for cfg.duration (or until
// cfg.reads operations, if set). Each reader has its own seeded RNG, so
// every engine gets the same key sequence per reader. op returns the bytes
// it read.
func (r *runner) timedReads(workload string, op func(rng *rand.Rand, buf []byte) (int, error)) (result, error) {
	var ops, nbytes, claimed atomic.Int64
	start := time.Now()
	deadline := start.Add(r.cfg.duration)
	err := parallel(r.cfg.readers, func(w int, stop *atomic.Bool) error {
		rng := rand.New(rand.NewPCG(r.ds.seed, uint64(100+w)))
		buf := make([]byte, 0, keySize)
		var myOps, myBytes int64
		defer func() { ops.Add(myOps); nbytes.Add(myBytes) }()
		for !stop.Load() {
			// Reading the clock every 16 operations keeps its cost out of
			// the measurement while overrunning the deadline by little.
			if myOps%16 == 0 && time.Now().After(deadline) {
				return nil
			}
			if r.cfg.reads > 0 && claimed.Add(1) > r.cfg.reads {
				return nil
			}
			n, err := op(rng, buf)
			if err != nil {
				return fmt.Errorf("%s: %w", workload, err)
			}
			myOps++
			myBytes += int64(n)
		}
		return nil
	})
	secs := time.Since(start).Seconds()
	if err != nil {
		return result{}, err
	}
	return result{Workload: workload, Ops: ops.Load(), Bytes: nbytes.Load(), Seconds: secs}, nil
}

// readRandom reads uniformly random existing keys and checks every value.
func (r *runner) readRandom(e engine, workload string) (result, error) {
	return r.timedReads(workload, func(rng *rand.Rand, buf []byte) (int, error) {
		i := rng.IntN(r.ds.num)
		if err := r.checkGet(e, appendKey(buf[:0], i), i); err != nil {
			return 0, err
		}
		return keySize + r.ds.valueSize, nil
	})
}

// readMissing reads keys that no fill wrote; any hit is a failure.
func (r *runner) readMissing(e engine) (result, error) {
	return r.timedReads(wReadmissing, func(rng *rand.Rand, buf []byte) (int, error) {
		key := appendMissingKey(buf[:0], rng.IntN(r.ds.num))
		found, err := e.get(key, func([]byte) error { return nil })
		if err != nil {
			return 0, fmt.Errorf("get %s: %w", key, err)
		}
		if found {
			return 0, fmt.Errorf("key %s was never written but was found", key)
		}
		return 0, nil
	})
}

// scan seeks to a random existing key and reads the next scanLength rows,
// checking that they are exactly the following indexes with their values.
func (r *runner) scan(e engine) (result, error) {
	rows := min(scanLength, r.ds.num)
	return r.timedReads(wScan, func(rng *rand.Rand, buf []byte) (int, error) {
		first := rng.IntN(r.ds.num - rows + 1)
		next := first
		var nbytes int
		want := make([]byte, 0, keySize)
		got, err := e.scan(appendKey(buf[:0], first), rows, func(k, v []byte) error {
			want = appendKey(want[:0], next)
			if !bytes.Equal(k, want) {
				return fmt.Errorf("scan from %d: row %d has key %q, want %q", first, next-first, k, want)
			}
			if !bytes.Equal(v, r.ds.value(next)) {
				return fmt.Errorf("scan from %d: key %s has the wrong value", first, k)
			}
			next++
			nbytes += len(k) + len(v)
			return nil
		})
		if err != nil {
			return 0, err
		}
		if got != rows {
			return 0, fmt.Errorf("scan from %d returned %d rows, want %d", first, got, rows)
		}
		return nbytes, nil
	})
}

// dirUsage is the disk space the files under dir occupy (allocated blocks,
// as du reports), so preallocated logs count as what they cost.
func dirUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return total, nil
}

// evictDir drops every file under dir from the OS page cache: fdatasync
// first, because the kernel does not drop dirty pages, then
// POSIX_FADV_DONTNEED. It returns how many bytes of the files mincore
// still finds resident afterwards, as evidence the eviction worked.
func evictDir(dir string) (resident int64, err error) {
	var files []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	for _, name := range files {
		if err := evictFile(name); err != nil {
			return 0, err
		}
	}
	for _, name := range files {
		n, err := residentBytes(name)
		if err != nil {
			return 0, err
		}
		resident += n
	}
	return resident, nil
}

func evictFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("evict %s: %w", name, err)
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.Fdatasync(fd); err != nil {
		return fmt.Errorf("fdatasync %s: %w", name, err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise %s: %w", name, err)
	}
	return nil
}

// residentBytes asks mincore how much of a file is in the page cache.
func residentBytes(name string) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, fmt.Errorf("mincore %s: %w", name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("mmap %s: %w", name, err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	// x/sys/unix has no Mincore wrapper.
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, fmt.Errorf("mincore %s: %w", name, errno)
	}
	var pages int64
	for _, v := range vec {
		pages += int64(v & 1)
	}
	return pages * int64(page), nil
}

// selected reports whether the run includes workload w.
func (c config) selected(w string) bool { return slices.Contains(c.workloads, w) }

// needsReadDB reports whether any selected workload reads the database
// fillrandom builds.
func (c config) needsReadDB() bool {
	return c.selected(wReadrandom) || c.selected(wScan) || c.selected(wReadmissing) || c.selected(wReadrandomCold)
}

// run runs the selected workloads in order: fillseq on its own database,
// then fillrandom on another, which the warm reads use while it is still
// open, then readrandom-cold after a close, an eviction and a reopen.
func (r *runner) run() (engineReport, error) {
	rep := engineReport{Engine: r.cfg.child, Version: moduleVersion(r.cfg.child)}
	if r.cfg.selected(wFillseq) {
		dir := filepath.Join(r.cfg.dir, wFillseq)
		e, res, err := r.fillDB(dir, wFillseq, nil)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, res)
		rep.DiskFillseq, err = dirUsage(dir)
		if cerr := e.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close after %s: %w", wFillseq, cerr))
		}
		if err != nil {
			return rep, err
		}
		// The reads never use this database; free the disk for the next.
		if err := os.RemoveAll(dir); err != nil {
			return rep, fmt.Errorf("remove %s: %w", dir, err)
		}
	}
	if !r.cfg.selected(wFillrandom) && !r.cfg.needsReadDB() {
		return rep, nil
	}
	dir := filepath.Join(r.cfg.dir, wFillrandom)
	e, res, err := r.fillDB(dir, wFillrandom, r.ds.order)
	if err != nil {
		return rep, err
	}
	if !r.cfg.selected(wFillrandom) {
		res.Note = "setup for the reads"
	}
	rep.Results = append(rep.Results, res)
	if rep.DiskFillrandom, err = dirUsage(dir); err != nil {
		return rep, errors.Join(err, e.close())
	}

	// The warm reads run on the database the fill left open: its files
	// are in the page cache, and its compactions, if it owes any, still
	// run, as they would on a server that just took a bulk load.
	warm := []struct {
		name string
		fn   func() (result, error)
	}{
		{wReadrandom, func() (result, error) { return r.readRandom(e, wReadrandom) }},
		{wScan, func() (result, error) { return r.scan(e) }},
		{wReadmissing, func() (result, error) { return r.readMissing(e) }},
	}
	for _, w := range warm {
		if !r.cfg.selected(w.name) {
			continue
		}
		res, err := r.measure(w.name, w.fn)
		if err != nil {
			return rep, errors.Join(err, e.close())
		}
		rep.Results = append(rep.Results, res)
	}
	if r.cfg.needsReadDB() {
		r.logStats(e, "after the warm reads")
	}
	if err := e.close(); err != nil {
		return rep, fmt.Errorf("close after %s and the warm reads: %w", wFillrandom, err)
	}

	if !r.cfg.selected(wReadrandomCold) {
		return rep, nil
	}
	if rep.ResidentAfterEvict, err = evictDir(dir); err != nil {
		return rep, err
	}
	start := time.Now()
	if e, err = r.open(dir); err != nil {
		return rep, err
	}
	rep.OpenColdSec = time.Since(start).Seconds()
	res, err = r.measure(wReadrandomCold, func() (result, error) { return r.readRandom(e, wReadrandomCold) })
	if err != nil {
		return rep, errors.Join(err, e.close())
	}
	rep.Results = append(rep.Results, res)
	if err := e.close(); err != nil {
		return rep, fmt.Errorf("close after the cold reads: %w", err)
	}
	return rep, nil
}

// fillDB creates a database in dir, fills it and checks a sample of it.
// It returns the database open; on error it closes it.
func (r *runner) fillDB(dir, workload string, order []int) (engine, result, error) {
	e, err := r.open(dir)
	if err != nil {
		return nil, result{}, err
	}
	res, err := r.measure(workload, func() (result, error) { return r.fill(e, workload, order) })
	if err == nil {
		r.logStats(e, "after "+workload)
		err = r.verifySample(e, workload)
	}
	if err != nil {
		return nil, result{}, errors.Join(err, e.close())
	}
	return e, res, nil
}

// measure runs one workload under the CPU profile, if any, and logs its
// result.
func (r *runner) measure(workload string, fn func() (result, error)) (result, error) {
	var res result
	err := r.profile(workload, func() error {
		var err error
		res, err = fn()
		return err
	})
	if err != nil {
		return result{}, err
	}
	r.logf("%-16s %10.0f ops/s %8.1f MB/s (%d ops in %.1fs)", workload, res.opsPerSec(), res.mbPerSec(), res.Ops, res.Seconds)
	return res, nil
}

// logStats prints the engine's own description of its state with -stats.
func (r *runner) logStats(e engine, when string) {
	if r.cfg.stats {
		r.logf("stats %s:\n%s", when, strings.TrimRight(e.stats(), "\n"))
	}
}
