package tablet

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	iofs "io/fs"
	"strconv"
	"strings"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

// The store's durable state lives in STATE-<generation> files: a small
// header and the JSON of storeState. Every change (a flush, a compaction, a
// split) writes a complete new generation to a temporary name, syncs it,
// renames it into place and syncs the directory, so a crash leaves either
// the old or the new state, never a mix. This is the local stand-in for the
// METADATA table's rows: each tabletState holds what METADATA holds for a
// tablet (its SSTables and its redo point).
//
//	header := magic (8) | version (4, LE) | length (4, LE) | crc32c of the JSON (4, LE)

const (
	stateMagic   = "CELLARST"
	stateVersion = 1
	statePrefix  = "STATE-"
	stateHdrLen  = 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// fileMeta describes one SSTable.
type fileMeta struct {
	Num uint64 `json:"num"`
	// Path is set in shared mode, where a file may belong to another
	// store; otherwise the file is sst/<Num>.sst.
	Path      string `json:"path,omitempty"`
	Size      uint64 `json:"size"`
	Entries   uint64 `json:"entries"`
	Deletions uint64 `json:"deletions"`
	MinSeq    uint64 `json:"min_seq"`
	MaxSeq    uint64 `json:"max_seq"`
	MaxTS     int64  `json:"max_ts"`
	Smallest  []byte `json:"smallest"`
	Largest   []byte `json:"largest"`
}

// tabletState is a tablet's durable description.
type tabletState struct {
	ID     uint64       `json:"id"`
	Table  string       `json:"table"`
	Start  []byte       `json:"start"`
	End    []byte       `json:"end"`
	Schema model.Schema `json:"schema"`
	// Groups maps a locality group to its SSTables, newest first.
	Groups map[string][]fileMeta `json:"groups"`
	// RedoLSN: log records of this tablet below it are all in SSTables.
	RedoLSN uint64 `json:"redo_lsn"`
	// FlushedSeq: every entry with a sequence number up to it is in an
	// SSTable; replay skips such records.
	FlushedSeq uint64 `json:"flushed_seq"`
	// MaxTS is the newest timestamp the tablet has held, so server
	// timestamps never go below it after a restart.
	MaxTS int64 `json:"max_ts"`
	// LastMajor is the clock time of the last major compaction, in µs.
	LastMajor int64 `json:"last_major"`
}

func (ts *tabletState) rowRange() model.RowRange { return model.RowRange{Start: ts.Start, End: ts.End} }

type storeState struct {
	NextTablet uint64        `json:"next_tablet"`
	NextFile   uint64        `json:"next_file"`
	Tablets    []tabletState `json:"tablets"`
}

func stateName(gen uint64) string { return fmt.Sprintf("%s%016x", statePrefix, gen) }

func parseStateName(name string) (uint64, bool) {
	if !strings.HasPrefix(name, statePrefix) || len(name) != len(statePrefix)+16 {
		return 0, false
	}
	g, err := strconv.ParseUint(name[len(statePrefix):], 16, 64)
	return g, err == nil
}

func encodeState(s *storeState) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	out := make([]byte, stateHdrLen, stateHdrLen+len(body))
	copy(out, stateMagic)
	binary.LittleEndian.PutUint32(out[8:], stateVersion)
	binary.LittleEndian.PutUint32(out[12:], uint32(len(body)))
	binary.LittleEndian.PutUint32(out[16:], crc32.Checksum(body, crcTable))
	return append(out, body...), nil
}

func decodeState(name string, b []byte) (*storeState, error) {
	if len(b) < stateHdrLen || string(b[:8]) != stateMagic {
		return nil, model.Corruptf(name, 0, "bad state header")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != stateVersion {
		return nil, model.Corruptf(name, 8, "unsupported state version %d", v)
	}
	n := binary.LittleEndian.Uint32(b[12:])
	if uint64(n) != uint64(len(b)-stateHdrLen) {
		return nil, model.Corruptf(name, 12, "state length %d, file holds %d", n, len(b)-stateHdrLen)
	}
	body := b[stateHdrLen:]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[16:]) {
		return nil, model.Corruptf(name, stateHdrLen, "state checksum mismatch")
	}
	s := &storeState{}
	if err := json.Unmarshal(body, s); err != nil {
		var se *json.SyntaxError
		off := int64(stateHdrLen)
		if errors.As(err, &se) {
			off += se.Offset
		}
		return nil, model.Corruptf(name, off, "state does not parse: %v", err)
	}
	return s, nil
}

// loadState reads the newest state generation in dir, or returns a fresh
// state (generation 0) if there is none.
func loadState(fs dfs.FS, dir string) (*storeState, uint64, error) {
	names, err := fs.List(dir)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return nil, 0, model.IOError("list "+dir, err)
	}
	var gen uint64
	found := false
	for _, n := range names {
		if g, ok := parseStateName(n); ok && (!found || g > gen) {
			gen, found = g, true
		}
	}
	if !found {
		return &storeState{NextTablet: 1, NextFile: 1}, 0, nil
	}
	name := dfs.Join(dir, stateName(gen))
	b, err := dfs.ReadFile(fs, name)
	if err != nil {
		return nil, 0, model.IOError("read "+name, err)
	}
	s, err := decodeState(name, b)
	if err != nil {
		return nil, 0, err
	}
	return s, gen, nil
}

// saveState writes generation gen and removes generations older than the
// previous one.
func saveState(fs dfs.FS, dir string, gen uint64, s *storeState) error {
	b, err := encodeState(s)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	name := dfs.Join(dir, stateName(gen))
	tmp := name + ".tmp"
	if err := dfs.WriteFile(fs, tmp, b); err != nil {
		return model.IOError("write "+tmp, err)
	}
	if err := fs.Rename(tmp, name); err != nil {
		return model.IOError("rename "+tmp, err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return model.IOError("sync "+dir, err)
	}
	if gen >= 2 {
		old := dfs.Join(dir, stateName(gen-2))
		if err := fs.Remove(old); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return model.IOError("remove "+old, err)
		}
	}
	return nil
}
