package master

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Assignment (Bigtable §5.2). After every scan of the servers the master
// reconciles METADATA with what the live servers report:
//
//  1. the root tablet, whose descriptor is the root file;
//  2. METADATA's other tablets, whose rows the root tablet holds;
//  3. the user tablets, whose rows those hold.
//
// A tablet is assigned when a live server reports it. Otherwise it is
// loaded on the least loaded live server, unless
//
//   - some live server serves a range that overlaps it (a split or merge
//     is half recorded; the server finishes it): assigning it would serve
//     rows twice, so the master never does;
//   - its row names a live server that answers and has been unserved for
//     fewer than missingScans scans (a load, move or split is in flight);
//   - its row names a server whose file is still locked but that does not
//     answer: it is not dead until the master can take its lock, and its
//     log may hold the tablet's last writes;
//   - its row names a server the master does not know but whose file
//     exists (a server that registered after the scan listed the
//     directory).
//
// A tablet whose row names a dead server is loaded with that server's
// log piece: the master first has one live server partition the dead
// server's log by tablet (PartitionLog), once per dead server.
//
// Rows of one table are read in key order (by end row). A row whose start
// lies below the previous row's end is clipped to start there: a server
// that died between the two writes of a split (lower child, then the
// parent's row as the upper child) or of a merge (the merged row, then the
// removal of the lower one) leaves such overlapping rows, and clipping
// gives each row exactly the part no newer row covers.

// missingScans is how many scans a tablet whose row names a live server
// may go unserved before the master loads it elsewhere.
const missingScans = 3

// tabletKey names a tablet by table and range.
func tabletKey(table string, start, end []byte) string {
	return table + "\x00" + strconv.Quote(string(start)) + "\x00" + strconv.Quote(string(end))
}

// served is the view of one reconcile round: the ranges live servers
// serve, by table, and the load of each server.
type served struct {
	byTable map[string][]servedRange
	load    map[string]int // server id -> tablets
	addr    map[string]string
	schemas map[string]schemaEntry // read once per round
}

type schemaEntry struct {
	schema model.Schema
	ok     bool
}

type servedRange struct {
	rng    model.RowRange
	server string
	id     uint64
	size   int64
}

func (m *Master) servedView() *served {
	v := &served{byTable: map[string][]servedRange{}, load: map[string]int{}, addr: map[string]string{}, schemas: map[string]schemaEntry{}}
	for _, s := range m.Servers() {
		if s.Misses > 0 {
			continue // not answering: do not load anything onto it
		}
		v.load[s.ID] = len(s.Tablets)
		v.addr[s.ID] = s.Addr
		for _, t := range s.Tablets {
			v.add(t.Table, model.RowRange{Start: t.Range.GetStart(), End: t.Range.GetEnd()}, s.ID, t.Id, t.SizeBytes)
		}
	}
	return v
}

func (v *served) add(table string, r model.RowRange, server string, id uint64, size int64) {
	v.byTable[table] = append(v.byTable[table], servedRange{rng: r, server: server, id: id, size: size})
}

// lookup returns the exact match of r and whether any served range
// overlaps r.
func (v *served) lookup(table string, r model.RowRange) (exact *servedRange, overlap bool) {
	for i, x := range v.byTable[table] {
		if bytes.Equal(x.rng.Start, r.Start) && bytes.Equal(x.rng.End, r.End) {
			return &v.byTable[table][i], true
		}
		if _, ok := x.rng.Intersect(r); ok {
			overlap = true
		}
	}
	return nil, overlap
}

// leastLoaded returns the live server with the fewest tablets.
func (v *served) leastLoaded() (string, bool) {
	ids := make([]string, 0, len(v.load))
	for id := range v.load {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return "", false
	}
	sort.Slice(ids, func(i, j int) bool {
		if v.load[ids[i]] != v.load[ids[j]] {
			return v.load[ids[i]] < v.load[ids[j]]
		}
		return ids[i] < ids[j]
	})
	return ids[0], true
}

// reconcile assigns every unassigned tablet it can reach. It reports
// whether every tablet was found assigned (so moves, merges and the file
// GC may run) and the descriptors it read.
func (m *Master) reconcile(ctx context.Context) (bool, []*model.TabletDescriptor) {
	data, ok, err := m.opts.Coord.ReadFile(ctx, m.opts.Dir+"/root")
	if err != nil || !ok {
		return false, nil // no METADATA yet, or the lock service is away
	}
	root, err := model.ParseRootFile(data)
	if err != nil {
		m.opts.Logger.Warn("assignment", slog.Any("err", err))
		return false, nil
	}
	if root.Table == "" && len(root.End) == 0 && len(root.Files) == 0 && root.Server == "" {
		return false, nil // the bare address of an older layout
	}
	root.End = model.MetaRootEnd
	v := m.servedView()
	all := []*model.TabletDescriptor{root}
	complete := m.ensureServed(ctx, v, root)
	if !complete {
		return false, all
	}
	for _, part := range []model.RowRange{{End: model.MetaRootEnd}, {Start: model.MetaRootEnd}} {
		rows, damaged, err := m.metaRows(ctx, part)
		if err != nil {
			m.opts.Logger.Warn("read METADATA failed", slog.Any("part", part), slog.Any("err", err))
			return false, all
		}
		if damaged {
			complete = false
		}
		for _, d := range rows {
			if !m.ensureServed(ctx, v, d) {
				complete = false
			}
		}
		all = append(all, rows...)
		if !complete {
			return false, all // user rows need every METADATA tablet
		}
	}
	return complete, all
}

// metaRows reads the descriptors of a part of METADATA, clipping rows
// that overlap the row before them.
func (m *Master) metaRows(ctx context.Context, part model.RowRange) (rows []*model.TabletDescriptor, damaged bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*m.opts.ScanInterval)
	defer cancel()
	sc := m.kv().Scan(ctx, client.MetaTable, part, client.Filter{}, 0)
	var out []*model.TabletDescriptor
	for sc.Next() {
		d, err := model.ParseTabletDescriptor(sc.Row())
		if err != nil {
			// Assign the rest, but the round stays incomplete: the GC
			// must not run without the damaged row's files.
			m.opts.Logger.Warn("assignment", slog.Any("err", err))
			damaged = true
			continue
		}
		out = append(out, d)
	}
	return clipRows(out), damaged, sc.Err()
}

// clipRows gives each row, in key order, only the part of its range that
// the row before it (of the same table) does not cover. Rows whose range
// is then empty are dropped: a newer row covers all of it.
func clipRows(rows []*model.TabletDescriptor) []*model.TabletDescriptor {
	var out []*model.TabletDescriptor
	for _, d := range rows {
		if n := len(out); n > 0 && out[n-1].Table == d.Table && bytes.Compare(d.Start, out[n-1].End) < 0 {
			if len(d.End) > 0 && bytes.Compare(out[n-1].End, d.End) >= 0 {
				continue
			}
			d.Start = out[n-1].End
		}
		out = append(out, d)
	}
	return out
}

// ensureServed loads the tablet of d if no live server serves it and it is
// safe to. It reports whether the tablet is served at the end.
func (m *Master) ensureServed(ctx context.Context, v *served, d *model.TabletDescriptor) bool {
	table := d.Table
	if table == "" {
		table = client.MetaTable
	}
	rng := model.RowRange{Start: d.Start, End: d.End}
	key := tabletKey(table, d.Start, d.End)
	schema, exists, err := m.roundSchema(ctx, v, table)
	if err != nil {
		m.opts.Logger.Warn("read schema failed", slog.String("table", table), slog.Any("err", err))
		return false
	}
	exact, overlap := v.lookup(table, rng)
	if exact != nil {
		m.mu.Lock()
		delete(m.missing, key)
		m.mu.Unlock()
		if !exists {
			m.dropServed(ctx, v, table, exact.server)
			m.dropRow(ctx, d)
		}
		return true
	}
	if overlap {
		m.opts.Logger.Info("tablet overlaps a served tablet; waiting for its server to finish a split or merge", slog.Any("range", rng), slog.String("table", table))
		return false
	}
	recover := false
	if d.Server != "" {
		_, answering := v.load[d.Server]
		switch {
		case answering:
			// It answers and does not serve the tablet: it unloaded it
			// (which flushes everything) or a load or split is in flight.
			m.mu.Lock()
			m.missing[key]++
			n := m.missing[key]
			m.mu.Unlock()
			if n < missingScans {
				return false
			}
		case m.isLive(d.Server):
			return false // its file is locked but it does not answer: not dead yet
		default:
			if _, exists, err := m.opts.Coord.ReadFile(ctx, m.opts.Dir+"/servers/"+d.Server); err != nil || exists {
				return false // a server the master has not seen yet, or the lock service is away
			}
			recover = true // dead: its log may hold the tablet's last writes
		}
	}
	if !exists {
		m.dropRow(ctx, d)
		m.mu.Lock()
		delete(m.missing, key)
		m.mu.Unlock()
		return true
	}
	target, ok := v.leastLoaded()
	if !ok {
		return false
	}
	replay := ""
	event := "assigned"
	if recover {
		p, err := m.partition(ctx, v, d.Server)
		if err != nil {
			m.opts.Logger.Warn("partition the log of a dead server failed", slog.String("server", d.Server), slog.Any("err", err))
			return false
		}
		if p.tablets[d.LogTablet] {
			replay = p.dir + "/" + strconv.FormatUint(d.LogTablet, 10)
		}
		event = "recovered from dead server " + d.Server
	} else if d.Server != "" {
		event = "reassigned from " + d.Server
	}
	if err := m.load(ctx, v.addr[target], schema, d, replay, event); err != nil {
		m.opts.Logger.Warn("load tablet failed", slog.Any("range", rng), slog.String("table", table), slog.String("server", target), slog.Any("err", err))
		return false
	}
	m.event(EventAssign, slog.LevelInfo, "tablet loaded", slog.Any("range", rng), slog.String("table", table), slog.String("server", target), slog.Any("event", event))
	v.add(table, rng, target, 0, 0)
	v.load[target]++
	m.mu.Lock()
	delete(m.missing, key)
	m.mu.Unlock()
	return true
}

func (m *Master) isLive(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.servers[id]
	return s != nil
}

// schemaOf reads a table's schema; ok is false if the table is deleted.
func (m *Master) schemaOf(ctx context.Context, table string) (model.Schema, bool, error) {
	if table == client.MetaTable {
		return model.MetaSchema(), true, nil
	}
	data, ok, err := m.opts.Coord.ReadFile(ctx, m.schemaPath(table))
	if err != nil || !ok {
		return model.Schema{}, false, err
	}
	var s model.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return model.Schema{}, false, fmt.Errorf("%w: schema file of %q: %v", model.ErrCorruption, table, err)
	}
	return s, true, nil
}

// roundSchema is schemaOf, read once per round.
func (m *Master) roundSchema(ctx context.Context, v *served, table string) (model.Schema, bool, error) {
	if e, ok := v.schemas[table]; ok {
		return e.schema, e.ok, nil
	}
	s, ok, err := m.schemaOf(ctx, table)
	if err == nil {
		v.schemas[table] = schemaEntry{s, ok}
	}
	return s, ok, err
}

// dropServed tells a server that missed a table's deletion to drop it.
func (m *Master) dropServed(ctx context.Context, v *served, table, server string) {
	cli, err := m.stub(v.addr[server])
	if err != nil {
		return
	}
	if _, err := cli.DropTable(ctx, &pb.DropTableRequest{Table: table}); err != nil {
		m.opts.Logger.Warn("drop deleted table failed", slog.String("table", table), slog.String("server", server), slog.Any("err", err))
		return
	}
	m.opts.Logger.Info("server still served a deleted table; dropped", slog.String("server", server), slog.String("table", table))
}

// dropRow removes the row of a tablet of a deleted table.
func (m *Master) dropRow(ctx context.Context, d *model.TabletDescriptor) {
	if d.Table == "" {
		return
	}
	mut := &model.RowMutation{Row: model.MetaKey(d.Table, d.End), Mutations: []model.Mutation{model.DeleteRow()}}
	if err := m.kv().Apply(ctx, client.MetaTable, mut); err != nil {
		m.opts.Logger.Warn("remove the row of a tablet of a deleted table failed", slog.String("table", d.Table), slog.Any("err", err))
	}
}

func (m *Master) load(ctx context.Context, addr string, schema model.Schema, d *model.TabletDescriptor, replay, event string) error {
	js, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	desc, err := json.Marshal(d)
	if err != nil {
		return err
	}
	cli, err := m.stub(addr)
	if err != nil {
		return err
	}
	_, err = cli.LoadTablet(ctx, &pb.LoadTabletRequest{Schema: js, Descriptor_: desc, Replay: replay, Event: event})
	return err
}

// partition is a dead server's log, split by tablet.
type partition struct {
	dir     string
	tablets map[uint64]bool
}

// partition has a live server split a dead server's log, once.
func (m *Master) partition(ctx context.Context, v *served, dead string) (*partition, error) {
	m.mu.Lock()
	p := m.partitions[dead]
	m.mu.Unlock()
	if p != nil {
		return p, nil
	}
	target, ok := v.leastLoaded()
	if !ok {
		return nil, errors.New("no live server")
	}
	cli, err := m.stub(v.addr[target])
	if err != nil {
		return nil, err
	}
	// No redo points: records below them are skipped at load, and the
	// rows of the dead server's tablets may not all be readable yet.
	resp, err := cli.PartitionLog(ctx, &pb.PartitionLogRequest{Server: dead})
	if err != nil {
		return nil, err
	}
	p = &partition{dir: resp.Dir, tablets: map[uint64]bool{}}
	for _, id := range resp.Tablets {
		p.tablets[id] = true
	}
	m.mu.Lock()
	m.partitions[dead] = p
	m.mu.Unlock()
	m.event(EventRecovery, slog.LevelInfo, "the log of a dead server is partitioned", slog.String("dead", dead), slog.String("server", target), slog.Int("tablets", len(resp.Tablets)))
	return p, nil
}
