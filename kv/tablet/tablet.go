package tablet

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cellardb/cellar/kv/commitlog"
	"github.com/cellardb/cellar/kv/memtable"
	"github.com/cellardb/cellar/kv/model"
)

// numStripes is the number of row-lock stripes per tablet.
const numStripes = 256

// familyInfo is a compiled family declaration.
type familyInfo struct {
	name  string
	group int
	gc    model.GCRule
}

// schemaInfo is a compiled schema: family lookup by name and the order of
// locality groups that version.groups follows.
type schemaInfo struct {
	schema   model.Schema
	groups   []model.LocalityGroup
	families map[string]*familyInfo
}

func compileSchema(s model.Schema) (*schemaInfo, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	si := &schemaInfo{schema: s, groups: s.Groups(), families: map[string]*familyInfo{}}
	idx := map[string]int{}
	for i, g := range si.groups {
		idx[g.Name] = i
	}
	for _, f := range s.Families {
		si.families[f.Name] = &familyInfo{name: f.Name, group: idx[f.GroupOf()], gc: f.GC}
	}
	return si, nil
}

// family looks a family up by its name as bytes without allocating.
func (si *schemaInfo) family(name []byte) *familyInfo { return si.families[string(name)] }

// stripe is a row lock for read-modify-write. lastSeq is the last sequence
// number assigned to a write under this stripe, so a read-modify-write can
// wait until every earlier write to its row is visible.
type stripe struct {
	mu      sync.Mutex
	lastSeq uint64
}

// pendingWrite tracks a write from sequence assignment to publication.
type pendingWrite struct {
	last uint64
	done bool
}

// Tablet serves one row range of one table. It is created and owned by a
// Store.
type Tablet struct {
	s      *Store
	id     uint64
	table  string
	rng    model.RowRange
	schema atomic.Pointer[schemaInfo]

	stripes [numStripes]stripe
	seed    maphash.Seed

	// commitMu orders sequence numbers, log appends and memtable switches.
	commitMu  sync.Mutex
	nextSeq   uint64
	maxTS     int64
	activeMem *mem
	retired   atomic.Bool // split, merged, dropped or closed; set under commitMu

	// Publication: writes become visible in sequence order.
	pubMu   sync.Mutex
	pubCond *sync.Cond
	pending []*pendingWrite
	visible atomic.Uint64

	// mu guards cur and changed.
	mu      sync.Mutex
	cur     *version
	changed chan struct{}

	maint   sync.Mutex // one compaction, split or merge at a time
	flushMu sync.Mutex // one flush at a time
	editMu  sync.Mutex // in shared mode: one catalog record of the tablet at a time

	flushQueued   atomic.Bool
	compactQueued atomic.Bool
	lastMajor     atomic.Int64
	// progress is the compaction running now, for Stats.
	progress compactionProgress
	// bgErr is the error of the last flush, if it failed; stalled writers
	// return it instead of waiting for a flush that cannot succeed yet.
	bgErr atomic.Pointer[error]
}

func newTablet(s *Store, st *tabletState, si *schemaInfo) *Tablet {
	t := &Tablet{s: s, id: st.ID, table: st.Table, rng: st.rowRange(), seed: maphash.MakeSeed(),
		nextSeq: st.FlushedSeq + 1, maxTS: st.MaxTS, changed: make(chan struct{})}
	t.schema.Store(si)
	t.pubCond = sync.NewCond(&t.pubMu)
	t.visible.Store(st.FlushedSeq)
	t.activeMem = newMem()
	t.lastMajor.Store(st.LastMajor)
	return t
}

func newMem() *mem { return &mem{Memtable: memtable.New(memtable.Options{})} }

// ID returns the tablet's identifier.
func (t *Tablet) ID() uint64 { return t.id }

// Table returns the name of the tablet's table.
func (t *Tablet) Table() string { return t.table }

// Range returns the rows the tablet serves.
func (t *Tablet) Range() model.RowRange { return t.rng }

// Schema returns the tablet's current schema.
func (t *Tablet) Schema() model.Schema { return t.schema.Load().schema }

func (t *Tablet) notServing() error {
	return fmt.Errorf("%w: tablet %d of table %q %v", model.ErrNotServing, t.id, t.table, t.rng)
}

// acquire pins the current version.
func (t *Tablet) acquire() *version {
	t.mu.Lock()
	v := t.cur
	v.ref()
	t.mu.Unlock()
	return v
}

// install makes v current and wakes stalled writers. t.mu must be held.
func (t *Tablet) install(v *version) {
	old := t.cur
	t.cur = v
	close(t.changed)
	t.changed = make(chan struct{})
	if old != nil {
		old.unref()
	}
}

// validate checks a mutation against the tablet's range and schema.
func (t *Tablet) validate(m *model.RowMutation) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if !t.rng.Contains(m.Row) {
		return fmt.Errorf("%w: row %q is outside tablet %d %v", model.ErrNotServing, m.Row, t.id, t.rng)
	}
	si := t.schema.Load()
	for i := range m.Mutations {
		mu := &m.Mutations[i]
		if mu.Kind != model.KindDeleteRow && si.families[mu.Family] == nil {
			return fmt.Errorf("%w: family %q is not declared in table %q", model.ErrNotFound, mu.Family, t.table)
		}
	}
	return nil
}

func (t *Tablet) stripeFor(row []byte) *stripe {
	return &t.stripes[maphash.Bytes(t.seed, row)%numStripes]
}

// serverTimestamp returns a millisecond timestamp no lower than any the
// tablet holds. commitMu must be held.
func (t *Tablet) serverTimestamp() int64 {
	ts := t.s.opts.Clock().UnixMicro() / 1000 * 1000
	floor := t.maxTS
	if r := floor % 1000; r != 0 {
		floor += 1000 - r
	}
	const top = model.MaxTimestamp / 1000 * 1000
	return min(max(ts, floor), top)
}

// writeOp is a write between its log append and its publication.
type writeOp struct {
	commit commitlog.Commit
	mem    *mem
	pw     *pendingWrite
	row    []byte
	muts   []model.Mutation
	seq    uint64
}

// Apply writes a row mutation atomically: all of its mutations become
// visible together, and only after the commit log has made them durable.
func (t *Tablet) Apply(ctx context.Context, m *model.RowMutation) error {
	if err := t.validate(m); err != nil {
		return err
	}
	if err := t.waitForRoom(ctx); err != nil {
		return err
	}
	st := t.stripeFor(m.Row)
	st.mu.Lock()
	w, err := t.commit(ctx, m.Row, m.Mutations, st)
	st.mu.Unlock()
	if err != nil {
		return err
	}
	return t.finish(w)
}

// ApplyBatch writes several row mutations of this tablet: each row
// atomically, the batch as a whole not. It does the per-write work once
// for the batch (the wait for room, the commit mutex, the row locks), and
// one group commit covers it. Mutations of one row apply in their order.
// It returns one error per mutation.
func (t *Tablet) ApplyBatch(ctx context.Context, ms []*model.RowMutation) []error {
	errs := make([]error, len(ms))
	var valid []int
	for i, m := range ms {
		if errs[i] = t.validate(m); errs[i] == nil {
			valid = append(valid, i)
		}
	}
	if len(valid) == 0 {
		return errs
	}
	if err := t.waitForRoom(ctx); err != nil {
		for _, i := range valid {
			errs[i] = err
		}
		return errs
	}
	// Lock the rows' stripes in index order, each once.
	stripes := make([]int, 0, len(valid))
	for _, i := range valid {
		stripes = append(stripes, int(maphash.Bytes(t.seed, ms[i].Row)%numStripes))
	}
	locked := slices.Clone(stripes)
	slices.Sort(locked)
	locked = slices.Compact(locked)
	for _, k := range locked {
		t.stripes[k].mu.Lock()
	}
	ops := make([]*writeOp, len(ms))
	t.commitMu.Lock()
	for n, i := range valid {
		ops[i], errs[i] = t.commitLocked(ctx, ms[i].Row, ms[i].Mutations, &t.stripes[stripes[n]])
	}
	t.commitMu.Unlock()
	for _, k := range locked {
		t.stripes[k].mu.Unlock()
	}
	for _, i := range valid {
		if ops[i] != nil {
			errs[i] = t.finish(ops[i])
		}
	}
	return errs
}

// commit assigns sequence numbers and timestamps and appends the record to
// the log. The caller holds the row's stripe.
func (t *Tablet) commit(ctx context.Context, row []byte, muts []model.Mutation, st *stripe) (*writeOp, error) {
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	return t.commitLocked(ctx, row, muts, st)
}

// commitLocked is commit with commitMu held.
func (t *Tablet) commitLocked(ctx context.Context, row []byte, muts []model.Mutation, st *stripe) (*writeOp, error) {
	if t.retired.Load() {
		return nil, t.notServing()
	}
	// Every server-timestamped cell of one mutation gets the same
	// timestamp; the caller's slice is left as it was.
	resolved := muts
	serverTS := int64(-1)
	for i := range muts {
		if muts[i].Kind == model.KindSetCell && muts[i].Timestamp == model.ServerTimestamp {
			if serverTS < 0 {
				serverTS = t.serverTimestamp()
				resolved = slices.Clone(muts)
			}
			resolved[i].Timestamp = serverTS
		}
	}
	maxTS := t.maxTS
	for i := range resolved {
		if resolved[i].Kind == model.KindSetCell {
			maxTS = max(maxTS, resolved[i].Timestamp)
		}
	}
	seq := t.nextSeq
	n := uint64(len(resolved))
	if seq+n > model.MaxSeq {
		return nil, fmt.Errorf("%w: tablet %d ran out of sequence numbers", model.ErrResourceExhausted, t.id)
	}
	rec := &commitlog.Record{Tablet: t.id, Table: t.table, Seq: seq, Mutation: model.RowMutation{Row: row, Mutations: resolved}}
	c, err := t.s.log.Append(ctx, rec)
	if err != nil {
		return nil, err
	}
	t.nextSeq += n
	t.maxTS = maxTS
	w := &writeOp{commit: c, mem: t.activeMem, pw: &pendingWrite{last: seq + n - 1}, row: row, muts: resolved, seq: seq}
	w.mem.writers.Add(1)
	st.lastSeq = w.pw.last
	t.pubMu.Lock()
	t.pending = append(t.pending, w.pw)
	t.pubMu.Unlock()
	return w, nil
}

// finish waits for durability, inserts the entries and publishes them.
func (t *Tablet) finish(w *writeOp) error {
	keys, values := entriesOf(w.row, w.muts, w.seq)
	err := w.commit.Wait()
	if err == nil {
		if aerr := w.mem.AddBatch(keys, values); aerr != nil {
			err = fmt.Errorf("tablet %d: memtable insert: %w", t.id, aerr)
		} else {
			cur := w.mem.ApproximateBytes()
			t.s.memBytes.Add(cur - w.mem.accounted.Swap(cur))
		}
	}
	w.mem.writers.Done()
	t.publish(w.pw)
	if err == nil && w.mem.ApproximateBytes() >= t.s.opts.MemtableSize {
		t.maybeFreeze()
	}
	return err
}

// entriesOf builds the internal keys and values of a resolved mutation
// whose first sequence number is seq.
func entriesOf(row []byte, muts []model.Mutation, seq uint64) (keys, values [][]byte) {
	keys = make([][]byte, len(muts))
	values = make([][]byte, len(muts))
	size := 0
	for i := range muts {
		size += 2*len(row) + len(muts[i].Family) + 2*len(muts[i].Qualifier) + model.TrailerLen + 8
	}
	buf := make([]byte, 0, size)
	for i := range muts {
		mu := &muts[i]
		start := len(buf)
		s := seq + uint64(i)
		switch mu.Kind {
		case model.KindSetCell:
			buf = model.AppendKey(buf, row, mu.Family, mu.Qualifier, mu.Timestamp, s, model.KindSetCell)
			values[i] = mu.Value
		case model.KindDeleteColumn:
			buf = model.AppendColumnMarker(buf, row, mu.Family, mu.Qualifier, mu.Range, s)
			values[i] = model.ColumnMarkerValue(mu.Range)
		case model.KindDeleteFamily:
			buf = model.AppendFamilyMarker(buf, row, mu.Family, s)
		case model.KindDeleteRow:
			buf = model.AppendRowMarker(buf, row, s)
		}
		keys[i] = buf[start:len(buf):len(buf)]
	}
	return keys, values
}

// publish marks a write as applied and advances the visible sequence
// number over every applied prefix. It returns once the write itself is
// visible, so a reader that starts after Apply returns sees it.
func (t *Tablet) publish(pw *pendingWrite) {
	t.pubMu.Lock()
	defer t.pubMu.Unlock()
	pw.done = true
	advanced := false
	i := 0
	for i < len(t.pending) && t.pending[i].done {
		i++
	}
	if i > 0 {
		t.visible.Store(t.pending[i-1].last)
		n := copy(t.pending, t.pending[i:])
		clear(t.pending[n:])
		t.pending = t.pending[:n]
		advanced = true
	}
	if advanced {
		t.pubCond.Broadcast()
	}
	for t.visible.Load() < pw.last {
		t.pubCond.Wait()
	}
}

// waitVisible blocks until every write with a sequence number up to seq is
// visible.
func (t *Tablet) waitVisible(seq uint64) {
	if t.visible.Load() >= seq {
		return
	}
	t.pubMu.Lock()
	for t.visible.Load() < seq {
		t.pubCond.Wait()
	}
	t.pubMu.Unlock()
}

// waitForRoom stalls a writer while the tablet or the store holds too much
// unflushed or uncompacted data.
func (t *Tablet) waitForRoom(ctx context.Context) error {
	o := &t.s.opts
	for {
		if t.retired.Load() {
			return t.notServing()
		}
		t.mu.Lock()
		v, changed := t.cur, t.changed
		t.mu.Unlock()
		reason := ""
		if v.active.ApproximateBytes() >= o.MemtableSize {
			if len(v.frozen) < o.MaxFrozenMemtables {
				t.maybeFreeze()
				continue
			}
			reason = "memtables waiting for flush"
		}
		for i, g := range v.groups {
			if len(g) >= o.StallRuns {
				if runs := len(sortedRuns(g)); runs >= o.StallRuns {
					reason = fmt.Sprintf("locality group %q holds %d overlapping runs of SSTables", t.schema.Load().groups[i].Name, runs)
				}
			}
		}
		var storeChanged <-chan struct{}
		if reason == "" && t.s.memBytes.Load() >= o.MemoryLimit && !t.noStall() {
			storeChanged = t.s.relieveMemory()
			reason = "store memory limit"
		}
		if reason == "" {
			return nil
		}
		if e := t.bgErr.Load(); e != nil {
			return fmt.Errorf("write stalled (%s) and the last flush failed: %w", reason, *e)
		}
		if o.Events.WriteStall != nil {
			o.Events.WriteStall(t.id, reason)
		}
		select {
		case <-changed:
		case <-storeChanged:
		case <-ctx.Done():
			return fmt.Errorf("write stalled (%s): %w", reason, ctx.Err())
		}
	}
}

// maybeFreeze freezes the active memtable if it is full and there is room
// for another frozen one, and schedules its flush.
func (t *Tablet) maybeFreeze() {
	if t.freeze(false) {
		t.s.scheduleFlush(t)
	}
}

// freeze makes the active memtable frozen and starts a new one. Unless
// force is set it does so only when the memtable is full and the frozen
// list has room.
func (t *Tablet) freeze(force bool) bool {
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	return t.freezeLocked(force)
}

// freezeLocked is freeze with commitMu held.
func (t *Tablet) freezeLocked(force bool) bool {
	m := t.activeMem
	if m.Empty() {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !force && (m.ApproximateBytes() < t.s.opts.MemtableSize || len(t.cur.frozen) >= t.s.opts.MaxFrozenMemtables) {
		return false
	}
	m.redoLSN = t.s.log.NextLSN()
	m.flushedSeq = t.nextSeq - 1
	m.maxTS = t.maxTS
	nm := newMem()
	nv := t.cur.clone()
	nv.active = nm
	nv.frozen = append([]*mem{m}, nv.frozen...)
	t.install(nv)
	t.activeMem = nm
	return true
}

// lockRow takes the row's stripe and waits until every write assigned to
// it so far is visible, so that a read under the lock sees the row's
// latest state.
func (t *Tablet) lockRow(row []byte) *stripe {
	st := t.stripeFor(row)
	st.mu.Lock()
	t.waitVisible(st.lastSeq)
	return st
}

// ReadModifyWrite atomically reads the latest cells of the named columns,
// appends to or increments them, writes the results with a server
// timestamp and returns the new cells. An increment of an absent cell
// starts from zero; an increment of a cell that is not 8 bytes fails.
func (t *Tablet) ReadModifyWrite(ctx context.Context, row []byte, rules []ReadModifyWriteRule) ([]model.Cell, error) {
	if len(rules) == 0 {
		return nil, fmt.Errorf("%w: read-modify-write without rules", model.ErrInvalidArgument)
	}
	probe := model.RowMutation{Row: row}
	for _, r := range rules {
		probe.Mutations = append(probe.Mutations, model.SetCell(r.Family, r.Qualifier, model.ServerTimestamp, r.Append))
	}
	if err := t.validate(&probe); err != nil {
		return nil, err
	}
	if err := t.waitForRoom(ctx); err != nil {
		return nil, err
	}
	st := t.lockRow(row)
	cur, _, err := t.ReadRow(ctx, row, ReadOptions{MaxVersions: 1})
	if err != nil {
		st.mu.Unlock()
		return nil, err
	}
	muts := make([]model.Mutation, len(rules))
	for i, r := range rules {
		var old []byte
		for _, c := range cur.Cells {
			if c.Family == r.Family && bytes.Equal(c.Qualifier, r.Qualifier) {
				old = c.Value
				break
			}
		}
		val, err := r.apply(old)
		if err != nil {
			st.mu.Unlock()
			return nil, err
		}
		muts[i] = model.SetCell(r.Family, r.Qualifier, model.ServerTimestamp, val)
	}
	w, err := t.commit(ctx, row, muts, st)
	st.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := t.finish(w); err != nil {
		return nil, err
	}
	out := make([]model.Cell, len(w.muts))
	for i, m := range w.muts {
		out[i] = model.Cell{Family: m.Family, Qualifier: m.Qualifier, Timestamp: m.Timestamp, Value: m.Value}
	}
	return out, nil
}

// CheckAndMutate atomically reads the row with read, evaluates pred on the
// cells, and applies ifTrue or ifFalse. It reports pred's result. A nil
// pred asks whether the read found any cell. An empty branch writes
// nothing.
func (t *Tablet) CheckAndMutate(ctx context.Context, row []byte, read ReadOptions, pred func(cells []model.Cell) bool, ifTrue, ifFalse []model.Mutation) (bool, error) {
	for _, muts := range [][]model.Mutation{ifTrue, ifFalse} {
		if len(muts) > 0 {
			if err := t.validate(&model.RowMutation{Row: row, Mutations: muts}); err != nil {
				return false, err
			}
		}
	}
	if !t.rng.Contains(row) {
		return false, t.notServing()
	}
	if err := t.waitForRoom(ctx); err != nil {
		return false, err
	}
	st := t.lockRow(row)
	cur, _, err := t.ReadRow(ctx, row, read)
	if err != nil {
		st.mu.Unlock()
		return false, err
	}
	matched := len(cur.Cells) > 0
	if pred != nil {
		matched = pred(cur.Cells)
	}
	muts := ifFalse
	if matched {
		muts = ifTrue
	}
	if len(muts) == 0 {
		st.mu.Unlock()
		return matched, nil
	}
	w, err := t.commit(ctx, row, muts, st)
	st.mu.Unlock()
	if err != nil {
		return false, err
	}
	return matched, t.finish(w)
}

// ReadModifyWriteRule appends to or increments one cell.
type ReadModifyWriteRule struct {
	Family    string
	Qualifier []byte
	// Append, if non-nil, is appended to the cell's value.
	Append []byte
	// Increment is added to the cell, read as an 8-byte big-endian int64,
	// when Append is nil.
	Increment int64
}

func (r ReadModifyWriteRule) apply(old []byte) ([]byte, error) {
	if r.Append != nil {
		out := make([]byte, 0, len(old)+len(r.Append))
		return append(append(out, old...), r.Append...), nil
	}
	var v int64
	switch len(old) {
	case 0:
	case 8:
		v = int64(uint64(old[0])<<56 | uint64(old[1])<<48 | uint64(old[2])<<40 | uint64(old[3])<<32 |
			uint64(old[4])<<24 | uint64(old[5])<<16 | uint64(old[6])<<8 | uint64(old[7]))
	default:
		return nil, fmt.Errorf("%w: cannot increment %s:%q: value has %d bytes, not 8", model.ErrFailedPrecondition, r.Family, r.Qualifier, len(old))
	}
	v += r.Increment
	u := uint64(v)
	return []byte{byte(u >> 56), byte(u >> 48), byte(u >> 40), byte(u >> 32), byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}, nil
}
