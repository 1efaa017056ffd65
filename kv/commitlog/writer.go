package commitlog

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// Options configure a Writer.
type Options struct {
	// SegmentSize is the size at which the writer starts a new segment.
	// The paper's figure, 64 MiB, is the default.
	SegmentSize int64
	// MaxPendingBytes bounds what writers may buffer ahead of the disk;
	// Append blocks beyond it. Default 64 MiB.
	MaxPendingBytes int
	// NoPreallocation turns off preallocated segments: each segment is
	// then appended to, and each fsync also makes its new length durable.
	NoPreallocation bool
	// Events, if set, hears about rotations and write failures.
	Events Events
}

// Events are hooks for metrics and logs. Each may be nil.
type Events struct {
	// Rotated reports a new segment and why it was started.
	Rotated func(segment uint64, reason string)
	// WriteFailed reports a failed write or sync and whether the log
	// recovered from it by starting a new segment.
	WriteFailed func(err error, recovered bool)
	// Synced reports a group commit that became durable: how many
	// records its one write and fsync carried, and how long they took.
	// It runs on the flusher goroutine, so it must not block.
	Synced func(records int, d time.Duration)
}

// Defaults fills in zero fields.
func (o Options) Defaults() Options {
	if o.SegmentSize == 0 {
		o.SegmentSize = 64 << 20
	}
	if o.MaxPendingBytes == 0 {
		o.MaxPendingBytes = 64 << 20
	}
	return o
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.SegmentSize < 1<<10 {
		return fmt.Errorf("%w: commit log segment size %d below 1 KiB", model.ErrInvalidArgument, o.SegmentSize)
	}
	if o.MaxPendingBytes < 1<<10 {
		return fmt.Errorf("%w: commit log pending bytes %d below 1 KiB", model.ErrInvalidArgument, o.MaxPendingBytes)
	}
	return nil
}

// batch is the set of records one write and one fsync make durable.
type batch struct {
	done    chan struct{}
	err     error
	lastLSN uint64
	records int
}

// Commit is a handle on an appended record.
type Commit struct {
	b   *batch
	LSN uint64
}

// Wait blocks until the record is durable, or returns why it is not. It
// takes no context on purpose: once appended, a record may become durable
// at any moment, and the caller must learn the outcome to keep its memory
// state equal to the log.
func (c Commit) Wait() error {
	<-c.b.done
	return c.b.err
}

// Writer appends records to the log with group commit.
type Writer struct {
	fs   dfs.FS
	dir  string
	opts Options

	mu       sync.Mutex
	wake     *sync.Cond // the flusher waits for work
	room     *sync.Cond // appenders wait for buffer space
	buf      []byte
	cur      *batch
	nextLSN  uint64
	closing  bool
	closed   bool
	segments []SegmentInfo // the chain; the last is being written

	durableLSN atomic.Uint64
	flusherWG  sync.WaitGroup

	// Owned by the flusher goroutine after Open.
	f     dfs.File
	seg   uint64
	size  int64 // bytes in the current segment known to be durable
	spare []byte
	// pre: f is a preallocated segment, written in place (WriteAt).
	pre bool
	// preparing: a spare segment is being zero-filled or waits in
	// spares; flusher-owned.
	preparing bool

	spares   chan dfs.File // the preparer's finished spare (nil: cannot)
	noSpares atomic.Bool   // the FS's files cannot be written in place
	stopPrep chan struct{}
	prepWG   sync.WaitGroup
}

// Preallocated segments. PostgreSQL's WAL segments are zero-filled before
// use, so that a commit's fdatasync writes data blocks only. A segment
// appended to grows with every commit, and each fdatasync must also commit
// the new length (a file-system journal commit on ext4: on the 2-core
// machine of docs/benchmarks.md, 220-290 µs after a 16 KiB append against
// 200-212 µs after an overwrite). So once the current segment is half
// full, a goroutine zero-fills the next one, makes it durable and keeps it
// under spareName, which replay ignores; a rotation renames it into place
// and overwrites it from the start. Zeros after the last record read as a torn tail, which ends the
// last segment anyway, and an earlier segment's length is its successor's
// PrevValidLen, never the file's. Without a spare ready, or on a file
// system whose files cannot be written at an offset (the fault layer, a
// remote dfs), a segment is appended to as before.
const spareName = "spare.prealloc"

// positional is a file written at offsets.
type positional interface {
	WriteAt(p []byte, off int64) (int, error)
}

// NewWriter returns a writer for the log in dir. It does no I/O; Open
// starts the log.
func NewWriter(fs dfs.FS, dir string, opts Options) *Writer {
	w := &Writer{fs: fs, dir: dir, opts: opts.Defaults()}
	w.wake = sync.NewCond(&w.mu)
	w.room = sync.NewCond(&w.mu)
	return w
}

// Open starts a new segment that continues the log Replay found, and the
// flusher. Every LSN it assigns is at least minLSN. Segments outside the
// chain are removed unless replay reported corruption; those are kept for
// inspection.
func (w *Writer) Open(ctx context.Context, st *State, minLSN uint64) error {
	if err := w.opts.Validate(); err != nil {
		return err
	}
	if err := w.fs.MkdirAll(w.dir); err != nil {
		return model.IOError("create commit log directory", err)
	}
	w.segments = append([]SegmentInfo(nil), st.Segments...)
	w.nextLSN = max(st.LastLSN+1, minLSN, 1)
	w.spares, w.stopPrep = make(chan dfs.File, 1), make(chan struct{})
	w.noSpares.Store(w.opts.NoPreallocation)
	// A spare left by a crash may be half filled; start over.
	if err := w.fs.Remove(dfs.Join(w.dir, spareName)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return model.IOError("remove the spare log segment", err)
	}
	if err := w.startSegment(max(st.maxNumber, st.End.Segment)+1, w.nextLSN, st.End, "open"); err != nil {
		return err
	}
	if st.Corruption == nil {
		for _, n := range st.Void {
			if err := w.fs.Remove(dfs.Join(w.dir, SegmentName(n))); err != nil {
				return model.IOError("remove void log segment", err)
			}
		}
	}
	w.durableLSN.Store(w.nextLSN - 1)
	w.cur = &batch{done: make(chan struct{})}
	w.flusherWG.Add(1)
	go w.flush()
	return ctx.Err()
}

// startSegment creates segment n whose header vouches for prev, makes it
// durable, and switches to it. Flusher-owned state only. firstLSN must not
// exceed the LSN of the first record the segment will hold, and must exceed
// every LSN that prev vouches for.
func (w *Writer) startSegment(n, firstLSN uint64, prev Position, reason string) error {
	name := dfs.Join(w.dir, SegmentName(n))
	f, pre, err := w.segmentFile(name)
	if err != nil {
		return model.IOError("create "+name, err)
	}
	h := segmentHeader{Number: n, FirstLSN: firstLSN, PrevSegment: prev.Segment, PrevValidLen: prev.Offset}
	if pre {
		_, err = f.(positional).WriteAt(h.encode(), 0)
	} else {
		_, err = f.Write(h.encode())
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = w.fs.SyncDir(w.dir)
	}
	if err != nil {
		f.Close()
		w.fs.Remove(name) // best effort; a torn header voids the file anyway
		return model.IOError("start "+name, err)
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.seg, w.size, w.pre = f, n, headerLen, pre
	w.mu.Lock()
	if k := len(w.segments); k > 0 && w.segments[k-1].Number == prev.Segment {
		w.segments[k-1].Size = prev.Offset
	}
	w.segments = append(w.segments, SegmentInfo{Number: n, FirstLSN: h.FirstLSN, Size: headerLen})
	w.mu.Unlock()
	if w.opts.Events.Rotated != nil {
		w.opts.Events.Rotated(n, reason)
	}
	return nil
}

// Append assigns rec an LSN, buffers it for the next group commit and
// returns at once; Commit.Wait reports durability. It blocks while more
// than MaxPendingBytes wait for the disk, until ctx ends.
func (w *Writer) Append(ctx context.Context, rec *Record) (Commit, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.buf) >= w.opts.MaxPendingBytes && !w.closing {
		if err := ctx.Err(); err != nil {
			return Commit{}, err
		}
		waitCond(ctx, w.room)
	}
	if w.closing {
		return Commit{}, fmt.Errorf("commit log: %w", model.ErrClosed)
	}
	rec.LSN = w.nextLSN
	w.nextLSN++
	w.buf = appendRecord(w.buf, rec)
	w.cur.lastLSN = rec.LSN
	w.cur.records++
	w.wake.Signal()
	return Commit{b: w.cur, LSN: rec.LSN}, nil
}

// waitCond waits on c (whose lock is held) and wakes early when ctx ends.
func waitCond(ctx context.Context, c *sync.Cond) {
	stop := context.AfterFunc(ctx, func() {
		c.L.Lock()
		c.Broadcast()
		c.L.Unlock()
	})
	c.Wait()
	stop()
}

// flush is the group-commit loop.
func (w *Writer) flush() {
	defer w.flusherWG.Done()
	for {
		w.mu.Lock()
		for len(w.buf) == 0 && !w.closing {
			w.wake.Wait()
		}
		if len(w.buf) == 0 && w.closing {
			w.mu.Unlock()
			return
		}
		data, b := w.buf, w.cur
		w.buf, w.cur = w.spare[:0], &batch{done: make(chan struct{})}
		w.room.Broadcast()
		w.mu.Unlock()

		synced := w.opts.Events.Synced
		var start time.Time
		if synced != nil {
			start = time.Now()
		}
		b.err = w.write(data)
		var took time.Duration
		if synced != nil {
			took = time.Since(start)
		}
		if b.err == nil {
			w.durableLSN.Store(b.lastLSN)
		}
		close(b.done)
		// After the waiters are released: the hook's cost is not theirs.
		if synced != nil && b.err == nil {
			synced(b.records, took)
		}
		w.spare = data
	}
}

// write makes data durable at the end of the current segment, rotating
// first when the segment is full. After a failure it voids what it wrote by
// starting a new segment that vouches only for the durable length; until
// that succeeds every batch fails.
func (w *Writer) write(data []byte) error {
	if w.f == nil {
		if err := w.recover(); err != nil {
			return err
		}
	}
	if w.size+int64(len(data)) > w.opts.SegmentSize && w.size > headerLen {
		if err := w.startSegment(w.seg+1, w.durableLSN.Load()+1, Position{w.seg, w.size}, "full"); err != nil {
			// The old segment is intact; keep writing to it.
			if w.opts.Events.WriteFailed != nil {
				w.opts.Events.WriteFailed(err, true)
			}
		}
	}
	var err error
	if w.pre {
		_, err = w.f.(positional).WriteAt(data, w.size)
	} else {
		_, err = w.f.Write(data)
	}
	if err == nil {
		err = w.f.Sync()
	}
	if err == nil {
		w.size += int64(len(data))
		if w.size > w.opts.SegmentSize/2 {
			// Half way through: the log is busy enough to rotate soon.
			// An idle server's log never gets a spare.
			w.prepareSpare()
		}
		w.mu.Lock()
		w.segments[len(w.segments)-1].Size = w.size
		w.mu.Unlock()
		return nil
	}
	err = model.IOError(fmt.Sprintf("commit log segment %s", SegmentName(w.seg)), err)
	rerr := w.recover()
	if w.opts.Events.WriteFailed != nil {
		w.opts.Events.WriteFailed(err, rerr == nil)
	}
	if rerr != nil {
		return fmt.Errorf("%w (and the log could not void the failed write: %v)", err, rerr)
	}
	return err
}

// recover voids everything in the current segment past its durable length
// by starting a successor that says so.
func (w *Writer) recover() error {
	prev := Position{Segment: w.seg, Offset: w.size}
	// Every record in the segment's durable part is at or below durableLSN;
	// the failed batch's LSNs are skipped, never reused.
	if err := w.startSegment(w.seg+1, w.durableLSN.Load()+1, prev, "after failed write"); err != nil {
		if w.f != nil {
			w.f.Close()
			w.f = nil
		}
		return err
	}
	return nil
}

// DurableLSN returns the highest LSN known durable.
func (w *Writer) DurableLSN() uint64 { return w.durableLSN.Load() }

// Segments returns the live segments, oldest first.
func (w *Writer) Segments() []SegmentInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]SegmentInfo(nil), w.segments...)
}

// Size returns the bytes the live segments hold.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for _, s := range w.segments {
		n += s.Size
	}
	return n
}

// Release deletes the segments whose every record has an LSN below lsn,
// the smallest redo point of any tablet that still needs the log. The
// current segment is never deleted.
func (w *Writer) Release(lsn uint64) error {
	w.mu.Lock()
	var drop []uint64
	for len(w.segments) > 1 && w.segments[1].FirstLSN <= lsn {
		drop = append(drop, w.segments[0].Number)
		w.segments = w.segments[1:]
	}
	w.mu.Unlock()
	var errs []error
	for _, n := range drop {
		if err := w.fs.Remove(dfs.Join(w.dir, SegmentName(n))); err != nil {
			errs = append(errs, model.IOError("remove log segment", err))
		}
	}
	return errors.Join(errs...)
}

// Close waits for buffered records to be written and stops the writer.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closing, w.closed = true, true
	w.wake.Broadcast()
	w.room.Broadcast()
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.flusherWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	w.closeSpare()
	if w.f != nil {
		return w.f.Close()
	}
	return nil
}

// segmentFile is a new segment's file: the spare, renamed into place, if
// one is ready (pre), else a new empty file.
func (w *Writer) segmentFile(name string) (f dfs.File, pre bool, err error) {
	select {
	case sp := <-w.spares:
		w.preparing = false
		if sp != nil {
			if err := w.fs.Rename(dfs.Join(w.dir, spareName), name); err == nil {
				return sp, true, nil
			}
			sp.Close()
		}
	default:
	}
	f, err = w.fs.Create(name)
	return f, false, err
}

// prepareSpare starts zero-filling the next segment, unless one is
// already under way or ready.
func (w *Writer) prepareSpare() {
	if w.preparing || w.noSpares.Load() || w.spares == nil {
		return
	}
	w.preparing = true
	w.prepWG.Add(1)
	go func() {
		defer w.prepWG.Done()
		w.spares <- w.fillSpare()
	}()
}

// fillSpare writes the spare: SegmentSize zero bytes, made durable. It
// returns nil if it could not (the next segment is appended to then) or
// was stopped.
func (w *Writer) fillSpare() dfs.File {
	name := dfs.Join(w.dir, spareName)
	f, err := w.fs.Create(name)
	if err != nil {
		return nil
	}
	fail := func() dfs.File {
		f.Close()
		w.fs.Remove(name)
		return nil
	}
	if _, ok := f.(positional); !ok {
		w.noSpares.Store(true)
		return fail()
	}
	zeros := make([]byte, 1<<20)
	for left := w.opts.SegmentSize; left > 0; left -= int64(len(zeros)) {
		select {
		case <-w.stopPrep:
			return fail()
		default:
		}
		if _, err := f.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
			return fail()
		}
	}
	if err := f.Sync(); err != nil {
		return fail()
	}
	return f
}

// closeSpare stops the preparer and removes its spare.
func (w *Writer) closeSpare() {
	if w.stopPrep == nil {
		return
	}
	close(w.stopPrep)
	w.prepWG.Wait()
	select {
	case sp := <-w.spares:
		if sp != nil {
			sp.Close()
			w.fs.Remove(dfs.Join(w.dir, spareName))
		}
	default:
	}
}

// NextLSN returns the LSN the next Append will assign. A caller that
// serializes its own appends can use it as a redo point: every record it
// appends later gets at least this LSN.
func (w *Writer) NextLSN() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nextLSN
}
