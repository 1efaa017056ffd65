package commitlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"slices"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// Position is a place in the log.
type Position struct {
	Segment uint64
	Offset  int64
}

// SegmentInfo describes one segment of the chain.
type SegmentInfo struct {
	Number   uint64
	FirstLSN uint64
	// Size is the segment's valid length.
	Size int64
}

// State is what Replay learned about a log directory. Writer.Open continues
// the log from it.
type State struct {
	// Segments is the chain, oldest first.
	Segments []SegmentInfo
	// Void lists segment files outside the chain.
	Void []uint64
	// End is where the valid log ends; Segment is 0 for an empty log.
	End Position
	// LastLSN is the highest LSN the chain holds or held.
	LastLSN uint64
	// Corruption, if set, is where replay stopped before the end of
	// acknowledged data: a *model.CorruptionError naming file and offset.
	Corruption error
	// maxNumber is the highest segment number present, in the chain or not.
	maxNumber uint64
}

// Replay reads the log in dir and calls fn, in LSN order, for every record
// whose LSN is at least from. Segments that hold only smaller LSNs are not
// read. A torn tail ends replay quietly; corruption before it ends replay
// too and is reported in State.Corruption. The records passed to fn alias
// a buffer that is reused for the next segment.
func Replay(ctx context.Context, fs dfs.FS, dir string, from uint64, fn func(*Record) error) (*State, error) {
	st := &State{}
	nums, err := listSegments(fs, dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, model.IOError("list commit log", err)
	}
	if len(nums) == 0 {
		return st, nil
	}
	st.maxNumber = nums[len(nums)-1]
	headers := map[uint64]segmentHeader{}
	bad := map[uint64]error{}
	for _, n := range nums {
		h, err := readHeader(fs, dfs.Join(dir, SegmentName(n)))
		if err != nil {
			if errors.Is(err, model.ErrCorruption) {
				bad[n] = err
				continue
			}
			return nil, err
		}
		if h.Number != n {
			bad[n] = model.Corruptf(dfs.Join(dir, SegmentName(n)), 12, "header names segment %d", h.Number)
			continue
		}
		headers[n] = h
	}

	// Walk back from the newest segment with a good header. A newer one with a
	// bad header was torn while being created and never held a record.
	var chain []uint64
	var broken error
	for i := len(nums) - 1; i >= 0; i-- {
		if _, ok := headers[nums[i]]; ok {
			chain = append(chain, nums[i])
			break
		}
	}
	for len(chain) > 0 {
		p := headers[chain[len(chain)-1]].PrevSegment
		if p == 0 {
			break
		}
		if _, ok := headers[p]; ok {
			chain = append(chain, p)
			continue
		}
		if err, ok := bad[p]; ok {
			broken = err
		}
		break // deleted once it was no longer needed, or broken
	}
	slices.Reverse(chain)
	inChain := map[uint64]bool{}
	for _, n := range chain {
		inChain[n] = true
	}
	for _, n := range nums {
		if !inChain[n] {
			st.Void = append(st.Void, n)
		}
	}
	if len(chain) == 0 {
		return st, nil
	}
	for i, n := range chain {
		info := SegmentInfo{Number: n, FirstLSN: headers[n].FirstLSN, Size: -1}
		if i+1 < len(chain) {
			info.Size = headers[chain[i+1]].PrevValidLen
		}
		st.Segments = append(st.Segments, info)
	}
	if broken != nil && st.Segments[0].FirstLSN > from {
		// Records in [from, first LSN of the chain) sat in a segment whose
		// header is gone: stop before everything that follows it.
		st.Corruption = broken
		st.Void = append(st.Void, chain...)
		slices.Sort(st.Void)
		st.Segments = nil
		return st, nil
	}

	var buf []byte
	for i := range st.Segments {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seg := &st.Segments[i]
		last := i == len(st.Segments)-1
		st.LastLSN = max(st.LastLSN, seg.FirstLSN-1)
		if !last && st.Segments[i+1].FirstLSN <= from {
			continue // every record here is older than from
		}
		name := dfs.Join(dir, SegmentName(seg.Number))
		buf, err = readInto(fs, name, buf)
		if err != nil {
			return nil, err
		}
		limit := int64(len(buf))
		if !last {
			if seg.Size > limit {
				st.Corruption = model.Corruptf(name, limit, "segment is %d bytes but its successor vouches for %d", limit, seg.Size)
				st.stopAt(i, limit)
				return st, nil
			}
			limit = seg.Size
		}
		off := int64(headerLen)
		for off < limit {
			payload, n, err := nextRecord(buf[off:limit])
			if err != nil {
				if !last {
					st.Corruption = model.Corruptf(name, off, "%v", err)
				}
				break
			}
			rec, err := decodePayload(payload)
			if err == nil && rec.LSN <= st.LastLSN {
				err = fmt.Errorf("LSN %d does not follow %d", rec.LSN, st.LastLSN)
			}
			if err != nil {
				st.Corruption = model.Corruptf(name, off, "%v", err)
				break
			}
			st.LastLSN = rec.LSN
			if rec.LSN >= from {
				if err := fn(rec); err != nil {
					return nil, err
				}
			}
			off += int64(n)
		}
		if off < limit || last {
			st.stopAt(i, off)
			if off < limit {
				return st, nil
			}
		}
	}
	return st, nil
}

// stopAt ends the chain at segment i, offset off: later segments become
// void.
func (st *State) stopAt(i int, off int64) {
	for _, s := range st.Segments[i+1:] {
		st.Void = append(st.Void, s.Number)
	}
	slices.Sort(st.Void)
	st.Segments = st.Segments[:i+1]
	st.Segments[i].Size = off
	st.End = Position{Segment: st.Segments[i].Number, Offset: off}
}

func readHeader(fs dfs.FS, name string) (segmentHeader, error) {
	f, err := fs.Open(name)
	if err != nil {
		return segmentHeader{}, model.IOError("open "+name, err)
	}
	defer f.Close()
	b := make([]byte, headerLen)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return segmentHeader{}, model.IOError("read "+name, err)
	}
	h, err := decodeHeader(b[:n])
	if err != nil {
		return segmentHeader{}, model.Corruptf(name, 0, "segment header: %v", err)
	}
	return h, nil
}

func readInto(fs dfs.FS, name string, buf []byte) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, model.IOError("open "+name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, model.IOError("stat "+name, err)
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if n, err := f.ReadAt(buf, 0); err != nil && !(err == io.EOF && int64(n) == size) {
		return nil, model.IOError("read "+name, err)
	}
	return buf, nil
}
