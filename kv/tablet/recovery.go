package tablet

import (
	"sort"
	"sync/atomic"
	"time"

	"github.com/cellardb/cellar/kv/model"
)

// RecoveryProgress describes a tablet that Load is recovering from a
// dead server's log: it serves once the replay and a flush are done.
type RecoveryProgress struct {
	Table string
	Range model.RowRange
	// Log is the partition of the dead server's log being replayed.
	Log string
	// Records is how many of the tablet's log records are replayed so far.
	Records int64
	Started time.Time
}

// recovery tracks one replay; its records advance as it goes.
type recovery struct {
	table   string
	rng     model.RowRange
	log     string
	started time.Time
	records atomic.Int64
}

// startRecovery lists a replay in Stats until the returned func runs.
func (s *Store) startRecovery(spec LoadSpec) (*recovery, func()) {
	r := &recovery{table: spec.Table, rng: spec.Range, log: spec.Replay, started: time.UnixMicro(s.nowMicros())}
	s.recovering.Store(r, struct{}{})
	return r, func() { s.recovering.Delete(r) }
}

// Recoveries returns the tablets being recovered from dead servers' logs
// now, oldest first.
func (s *Store) Recoveries() []RecoveryProgress {
	var out []RecoveryProgress
	s.recovering.Range(func(k, _ any) bool {
		r := k.(*recovery)
		out = append(out, RecoveryProgress{Table: r.table, Range: r.rng, Log: r.log, Records: r.records.Load(), Started: r.started})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}
