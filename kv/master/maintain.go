package master

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Upkeep, once every tablet is assigned. Each round makes at most one
// change (a merge or a move), so the next round starts from a fresh scan.
//
// Moves use the paper's two minor compactions: the source compacts while
// serving, then holds writes and compacts what came meanwhile, and
// unloads; the target loads the tablet from its METADATA row with no log
// to replay. If the master dies between the two steps, the tablet's row
// names a live server that does not serve it, and the next master's
// reconcile loads it after missingScans scans.
//
// File GC is mark and sweep over the dfs:
//
//  1. the scan asked every live server for its low-water file number: its
//     files below it are recorded in METADATA or abandoned;
//  2. reconcile then read every descriptor (the root file and all of
//     METADATA), which marks the files in use; every live server then
//     lists the files its tablets use (ListFiles), which marks those too;
//  3. a file under sst/<server>/ that no descriptor names is deleted if
//     its server is live and the number is below the low water, or if its
//     server is dead (its lock file is gone, so it records nothing more).
//
// A dead server's log and log pieces go once no descriptor's redo point
// names that server.

// round is what the master does after each scan.
func (m *Master) round(ctx context.Context) {
	if m.acquire(ctx) != nil {
		return
	}
	defer m.release()
	lows := m.lowWaters() // before the descriptors are read
	complete, descs := m.reconcile(ctx)
	if !complete {
		return
	}
	if m.mergeSmall(ctx) || m.balance(ctx) {
		return
	}
	m.mu.Lock()
	m.rounds++
	gc := m.opts.FS != nil && m.rounds%m.opts.GCEvery == 0
	m.mu.Unlock()
	if gc {
		m.collect(ctx, descs, lows)
	}
}

// lowWaters returns the live servers' low-water file numbers; a server
// that did not answer the last scan gets 0, which protects all its files.
func (m *Master) lowWaters() map[string]uint64 {
	out := map[string]uint64{}
	for _, s := range m.Servers() {
		if s.Misses == 0 {
			out[s.ID] = s.LowWater
		} else {
			out[s.ID] = 0
		}
	}
	return out
}

// mergeSmall merges one pair of adjacent tablets of a table that one
// server serves and that are small together.
func (m *Master) mergeSmall(ctx context.Context) bool {
	if m.opts.MergeSize <= 0 {
		return false
	}
	for _, s := range m.Servers() {
		ts := append([]*pb.TabletInfo(nil), s.Tablets...)
		sort.Slice(ts, func(i, j int) bool {
			if ts[i].Table != ts[j].Table {
				return ts[i].Table < ts[j].Table
			}
			return bytes.Compare(ts[i].Range.GetStart(), ts[j].Range.GetStart()) < 0
		})
		for i := 0; i+1 < len(ts); i++ {
			a, b := ts[i], ts[i+1]
			if a.Table != b.Table || a.Table == client.MetaTable || len(a.Range.GetEnd()) == 0 ||
				!bytes.Equal(a.Range.GetEnd(), b.Range.GetStart()) || a.SizeBytes+b.SizeBytes >= m.opts.MergeSize {
				continue
			}
			if _, err := m.merge(ctx, s, a, b, "merged tablets"); err != nil {
				m.opts.Logger.Warn("merge tablets failed", slog.Uint64("tablet", a.Id), slog.Uint64("next", b.Id), slog.String("table", a.Table), slog.String("server", s.ID), slog.Any("err", err))
				return false
			}
			return true
		}
	}
	return false
}

// merge has server s merge its adjacent tablets a and b (a's end is b's
// start) into one, which it records in METADATA in place of both (the
// merged row replaces b's, a's row goes), and refreshes the master's view
// of s. The automatic merge (mergeSmall) and the forced one (MergeTablets)
// both go through here; the caller holds the upkeep token.
func (m *Master) merge(ctx context.Context, s Server, a, b *pb.TabletInfo, event string) (*pb.TabletInfo, error) {
	cli, err := m.stub(s.Addr)
	if err != nil {
		return nil, err
	}
	resp, err := cli.MergeTablets(ctx, &pb.MergeTabletsRequest{Table: a.Table, A: a.Id, B: b.Id})
	if err != nil {
		return nil, err
	}
	m.event(EventMerge, slog.LevelInfo, event, slog.String("first", fmt.Sprintf("[%q,%q)", a.Range.GetStart(), a.Range.GetEnd())),
		slog.String("second", fmt.Sprintf("[%q,%q)", b.Range.GetStart(), b.Range.GetEnd())), slog.String("table", a.Table), slog.String("server", s.ID))
	m.refresh(ctx, s.ID)
	return resp.Tablet, nil
}

// balance moves one user tablet from the most to the least loaded server
// when their tablet counts differ by more than one.
func (m *Master) balance(ctx context.Context) bool {
	if m.opts.NoBalance {
		return false
	}
	servers := m.Servers()
	var live []Server
	for _, s := range servers {
		if s.Misses == 0 {
			live = append(live, s)
		}
	}
	if len(live) < 2 {
		return false
	}
	sort.SliceStable(live, func(i, j int) bool { return len(live[i].Tablets) < len(live[j].Tablets) })
	from, to := live[len(live)-1], live[0]
	if len(from.Tablets)-len(to.Tablets) < 2 {
		return false
	}
	var pick *pb.TabletInfo
	for _, t := range from.Tablets {
		if t.Table != client.MetaTable && (pick == nil || t.SizeBytes < pick.SizeBytes) {
			pick = t
		}
	}
	if pick == nil {
		return false
	}
	if err := m.Move(ctx, from, to, pick); err != nil {
		m.opts.Logger.Warn("move tablet failed", slog.Uint64("tablet", pick.Id), slog.String("table", pick.Table), slog.String("from", from.ID), slog.String("to", to.ID), slog.Any("err", err))
		return false
	}
	return true
}

// Move moves a tablet between two live servers.
func (m *Master) Move(ctx context.Context, from, to Server, t *pb.TabletInfo) error {
	schema, ok, err := m.schemaOf(ctx, t.Table)
	if err != nil || !ok {
		return errors.Join(err, errors.New("the table has no schema"))
	}
	src, err := m.stub(from.Addr)
	if err != nil {
		return err
	}
	if _, err := src.UnloadTablet(ctx, &pb.UnloadTabletRequest{Table: t.Table, Id: t.Id}); err != nil {
		return err
	}
	m.refresh(ctx, from.ID)
	// The row now holds every write; load from it.
	table := t.Table
	row, found, err := m.kv().ReadRow(ctx, client.MetaTable, model.MetaKey(table, t.Range.GetEnd()), client.Filter{})
	if err != nil || !found {
		return errors.Join(err, errors.New("the moved tablet's METADATA row is missing; reconcile will load it"))
	}
	d, err := model.ParseTabletDescriptor(row)
	if err != nil {
		return err
	}
	d.Start = t.Range.GetStart()
	if err := m.load(ctx, to.Addr, schema, d, "", "moved from "+from.ID); err != nil {
		return err // reconcile loads it after missingScans scans
	}
	m.refresh(ctx, to.ID)
	m.event(EventMove, slog.LevelInfo, "moved tablet", slog.String("range", fmt.Sprintf("[%q,%q)", t.Range.GetStart(), t.Range.GetEnd())), slog.String("table", table), slog.String("from", from.ID), slog.String("to", to.ID))
	return nil
}

// collect deletes the files no descriptor names (see above).
func (m *Master) collect(ctx context.Context, descs []*model.TabletDescriptor, live map[string]uint64) {
	fs, root := m.opts.FS, m.opts.DFSRoot
	marked := map[string]bool{}
	logsInUse := map[string]bool{}
	for _, d := range descs {
		for _, files := range d.Files {
			for _, f := range files {
				marked[f.Path] = true
			}
		}
		for l := range d.Redo {
			logsInUse[l] = true
		}
		logsInUse[d.Server] = true
	}
	dead := func(server string) bool {
		if _, ok := live[server]; ok {
			return false
		}
		_, exists, err := m.opts.Coord.ReadFile(ctx, m.opts.Dir+"/servers/"+server)
		return err == nil && !exists
	}
	// Files the live servers have open or name in memory are in use too:
	// a record that failed after it landed leaves METADATA behind a
	// server's view until its next record. Without every answer, no GC.
	addrs := map[string]string{}
	for _, s := range m.Servers() {
		addrs[s.ID] = s.Addr
	}
	for server := range live {
		addr := addrs[server]
		cli, err := m.stub(addr)
		if err != nil || addr == "" {
			return
		}
		resp, err := cli.ListFiles(ctx, &pb.ListFilesRequest{})
		if err != nil {
			m.opts.Logger.Warn("file GC skipped: a server did not list its files", slog.String("server", server), slog.Any("err", err))
			return
		}
		for _, p := range resp.Paths {
			marked[p] = true
		}
	}
	sstRoot := dfs.Join(root, "sst")
	owners, err := fs.List(sstRoot)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		m.opts.Logger.Warn("file GC: list failed", slog.String("dir", sstRoot), slog.Any("err", err))
		return
	}
	deleted := 0
	for _, owner := range owners {
		dir := dfs.Join(sstRoot, owner)
		names, err := fs.List(dir)
		if err != nil {
			continue
		}
		lw, isLive := live[owner]
		ownerDead := !isLive && dead(owner)
		for _, n := range names {
			path := dfs.Join(dir, n)
			num, err := strconv.ParseUint(strings.TrimSuffix(n, ".sst"), 16, 64)
			if err != nil || !strings.HasSuffix(n, ".sst") || marked[path] {
				continue
			}
			if (isLive && num < lw) || ownerDead {
				if err := fs.Remove(path); err == nil {
					deleted++
				}
			}
		}
		if ownerDead && deleted > 0 {
			fs.SyncDir(dir)
		}
	}
	// Logs of dead servers that no tablet needs any more.
	logsRoot := dfs.Join(root, "logs")
	names, _ := fs.List(logsRoot)
	for _, n := range names {
		server := strings.TrimSuffix(n, ".lock")
		if logsInUse[server] || !dead(server) {
			continue
		}
		removeTree(fs, dfs.Join(logsRoot, n))
		removeTree(fs, dfs.Join(root, "recovery", server))
		removeTree(fs, dfs.Join(root, "recovery", server+".lock"))
		m.mu.Lock()
		delete(m.partitions, server)
		m.mu.Unlock()
	}
	if deleted > 0 {
		m.opts.Logger.Info("file GC deleted SSTables no tablet uses", slog.Int("deleted", deleted))
	}
}

// removeTree deletes a file or a directory and everything in it.
func removeTree(fs dfs.FS, name string) {
	if names, err := fs.List(name); err == nil {
		for _, n := range names {
			removeTree(fs, dfs.Join(name, n))
		}
	}
	fs.Remove(name)
}
