package sstable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/golang/snappy"
)

const (
	defaultBlockSize       = 64 << 10
	defaultRestartInterval = 16
	// dataRestartBytes bounds the bytes a seek in a data block scans
	// past its restart point: with large values, 16 entries are tens of
	// KiB, a cache miss each, where a binary search touches a few.
	dataRestartBytes         = 1 << 10
	defaultFalsePositiveRate = 0.01
	// maxBlockSize bounds WriterOptions.BlockSize; bigger blocks only make
	// point reads slower.
	maxBlockSize = 64 << 20
	// writeBufferSize batches small blocks into few large file writes.
	writeBufferSize = 256 << 10
)

// WriterOptions configure a Writer. Zero values mean the defaults.
type WriterOptions struct {
	// BlockSize is the uncompressed payload size at which a data block is
	// cut. Default 64 KiB.
	BlockSize int
	// RestartInterval is the number of entries between restart points.
	// Default 16.
	RestartInterval int
	// Compression of data and index blocks: model.CompressionSnappy (the
	// zero value) or model.CompressionNone.
	Compression model.Compression
	// BloomFilter adds a filter of row and column prefixes.
	BloomFilter bool
	// FalsePositiveRate of the filter. Default 0.01.
	FalsePositiveRate float64
	// ExpectedKeys estimates the entries the table will hold, to size the
	// filter. Undershooting raises the false-positive rate.
	ExpectedKeys int
}

// EnsureDefaults returns o with zero fields set to their defaults.
func (o WriterOptions) EnsureDefaults() WriterOptions {
	if o.BlockSize == 0 {
		o.BlockSize = defaultBlockSize
	}
	if o.RestartInterval == 0 {
		o.RestartInterval = defaultRestartInterval
	}
	if o.FalsePositiveRate == 0 {
		o.FalsePositiveRate = defaultFalsePositiveRate
	}
	return o
}

// Validate checks the options; zero fields are valid and mean the default.
func (o WriterOptions) Validate() error {
	switch {
	case o.BlockSize < 0 || o.BlockSize > maxBlockSize:
		return fmt.Errorf("%w: sstable block size %d out of range (max %d)", model.ErrInvalidArgument, o.BlockSize, maxBlockSize)
	case o.RestartInterval < 0:
		return fmt.Errorf("%w: sstable restart interval %d is negative", model.ErrInvalidArgument, o.RestartInterval)
	case o.Compression != model.CompressionSnappy && o.Compression != model.CompressionNone:
		return fmt.Errorf("%w: unknown sstable compression %d", model.ErrInvalidArgument, o.Compression)
	case !(o.FalsePositiveRate >= 0 && o.FalsePositiveRate < 1):
		return fmt.Errorf("%w: bloom false-positive rate %v not in (0, 1)", model.ErrInvalidArgument, o.FalsePositiveRate)
	case o.ExpectedKeys < 0:
		return fmt.Errorf("%w: expected keys %d is negative", model.ErrInvalidArgument, o.ExpectedKeys)
	}
	return nil
}

// Writer writes one table, front to back, in a single pass. It is not safe
// for concurrent use.
type Writer struct {
	f    dfs.File
	name string
	opts WriterOptions
	bw   *bufio.Writer
	// offset counts the bytes handed to bw.
	offset uint64

	data   blockWriter
	index  blockWriter
	filter *filterWriter
	props  Properties
	// haveSeq and haveTS say whether props holds a seq or timestamp range.
	haveSeq, haveTS bool
	// cbuf is reused for compressed blocks, hbuf for encoded handles.
	cbuf    []byte
	hbuf    []byte
	trailer [blockTrailerLen]byte

	err      error // sticky: the writer is unusable after an I/O error
	finished bool
}

// NewWriter returns a writer of a table to f, which must be empty. name
// labels errors. Invalid options make every call fail.
func NewWriter(f dfs.File, name string, opts WriterOptions) *Writer {
	w := &Writer{f: f, name: name}
	if err := opts.Validate(); err != nil {
		w.err = fmt.Errorf("sstable %s: %w", name, err)
		return w
	}
	w.opts = opts.EnsureDefaults()
	w.bw = bufio.NewWriterSize(f, writeBufferSize)
	w.data.restartInterval, w.data.restartBytes = w.opts.RestartInterval, dataRestartBytes
	// The index is decoded whole at open and never seeked on disk, so its
	// restart points matter little; the default keeps it prefix-compressed.
	w.index.restartInterval = defaultRestartInterval
	if w.opts.BloomFilter {
		w.filter = newFilterWriter(w.opts.ExpectedKeys, w.opts.FalsePositiveRate)
	}
	w.props.Compression = w.opts.Compression
	w.props.HasFilter = w.opts.BloomFilter
	return w
}

// Add appends an entry. Keys must be strictly increasing. The writer copies
// what it keeps, so key and value may be reused when Add returns.
func (w *Writer) Add(key, value []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.finished {
		return fmt.Errorf("%w: sstable %s: Add after Finish", model.ErrClosed, w.name)
	}
	if w.props.NumEntries > 0 && bytes.Compare(key, w.data.lastKey) <= 0 {
		return fmt.Errorf("%w: sstable %s: key %s is not greater than the previous key %s",
			model.ErrInvalidArgument, w.name, formatKey(key), formatKey(w.data.lastKey))
	}
	if len(key)+len(value) > maxEntryLen {
		return fmt.Errorf("%w: sstable %s: entry of %d bytes is too large", model.ErrInvalidArgument, w.name, len(key)+len(value))
	}
	bs := w.opts.BlockSize
	if w.data.nEntries > 0 {
		// Cut before an entry that would overflow a nearly full block, and
		// before one that needs a block to itself.
		cur, n := w.data.size(), entryLen(key, value)
		if cur+n > bs && (n >= bs || cur >= bs-bs/10) {
			if err := w.flushData(); err != nil {
				return err
			}
		}
	}
	if w.props.NumEntries == 0 {
		w.props.SmallestKey = append([]byte(nil), key...)
	}
	w.data.add(key, value)
	w.observe(key, value)
	if w.data.size() >= bs {
		return w.flushData()
	}
	return nil
}

// observe updates the properties and the filter.
func (w *Writer) observe(key, value []byte) {
	p := &w.props
	p.NumEntries++
	p.RawKeyBytes += uint64(len(key))
	p.RawValueBytes += uint64(len(value))
	if len(key) >= model.TrailerLen {
		ts, seq, kind := model.Trailer(key)
		if !w.haveSeq || seq < p.MinSeq {
			p.MinSeq = seq
		}
		if !w.haveSeq || seq > p.MaxSeq {
			p.MaxSeq = seq
		}
		w.haveSeq = true
		if kind == model.KindSetCell {
			if !w.haveTS || ts < p.MinTimestamp {
				p.MinTimestamp = ts
			}
			if !w.haveTS || ts > p.MaxTimestamp {
				p.MaxTimestamp = ts
			}
			w.haveTS = true
		} else {
			p.NumDeletions++
		}
	}
	if w.filter != nil {
		w.filter.add(key)
	}
}

// EstimatedSize returns the bytes written or buffered so far, including the
// data block under construction.
func (w *Writer) EstimatedSize() uint64 {
	if w.data.nEntries == 0 {
		return w.offset
	}
	return w.offset + uint64(w.data.size()) + blockTrailerLen
}

func (w *Writer) flushData() error {
	h, err := w.writeBlock(w.compress(w.data.finish(), w.opts.Compression))
	if err != nil {
		return err
	}
	w.hbuf = h.append(w.hbuf[:0])
	w.index.add(w.data.lastKey, w.hbuf)
	w.data.reset()
	w.props.NumDataBlocks++
	return nil
}

// compress returns the bytes to store for payload and their block type. The
// result may alias cbuf.
func (w *Writer) compress(payload []byte, c model.Compression) ([]byte, byte) {
	if c != model.CompressionSnappy {
		return payload, blockTypeNone
	}
	w.cbuf = snappy.Encode(w.cbuf[:cap(w.cbuf)], payload)
	// Below 12.5% savings decompression costs more than the bytes it saves.
	if len(w.cbuf) < len(payload)-len(payload)/8 {
		return w.cbuf, blockTypeSnappy
	}
	return payload, blockTypeNone
}

func (w *Writer) writeBlock(stored []byte, typ byte) (handle, error) {
	w.trailer[0] = typ
	binary.LittleEndian.PutUint32(w.trailer[1:], blockChecksum(stored, w.trailer[:1]))
	h := handle{offset: w.offset, length: uint64(len(stored))}
	if err := w.write(stored); err != nil {
		return handle{}, err
	}
	return h, w.write(w.trailer[:])
}

func (w *Writer) write(p []byte) error {
	if _, err := w.bw.Write(p); err != nil {
		w.err = model.IOError("sstable "+w.name, err)
		return w.err
	}
	w.offset += uint64(len(p))
	return nil
}

// Finish writes the last data block, the filter, properties, index and
// footer, then flushes and syncs the file. It does not close the file.
func (w *Writer) Finish() (Properties, error) {
	if w.err != nil {
		return Properties{}, w.err
	}
	if w.finished {
		return Properties{}, fmt.Errorf("%w: sstable %s: Finish called twice", model.ErrClosed, w.name)
	}
	w.finished = true
	if w.data.nEntries > 0 {
		if err := w.flushData(); err != nil {
			return Properties{}, err
		}
	}
	p := &w.props
	p.DataSize = w.offset
	if p.NumEntries > 0 {
		p.LargestKey = append([]byte(nil), w.data.lastKey...)
	}
	ft := footer{version: formatVersion}
	if w.filter != nil {
		b, err := w.filter.f.MarshalBinary()
		if err != nil {
			w.err = fmt.Errorf("sstable %s: encoding filter: %w", w.name, err)
			return Properties{}, w.err
		}
		if ft.filter, err = w.writeBlock(b, blockTypeNone); err != nil {
			return Properties{}, err
		}
		p.FilterSize = ft.filter.length + blockTrailerLen
	}
	// The index goes after the properties, which record its size.
	index, indexType := w.compress(w.index.finish(), w.opts.Compression)
	p.IndexSize = uint64(len(index)) + blockTrailerLen
	var err error
	if ft.props, err = w.writeBlock(p.encode(), blockTypeNone); err != nil {
		return Properties{}, err
	}
	if ft.index, err = w.writeBlock(index, indexType); err != nil {
		return Properties{}, err
	}
	if err := w.write(ft.encode()); err != nil {
		return Properties{}, err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = model.IOError("sstable "+w.name, err)
		return Properties{}, w.err
	}
	if err := w.f.Sync(); err != nil {
		w.err = model.IOError("sstable "+w.name, err)
		return Properties{}, w.err
	}
	return *p, nil
}
