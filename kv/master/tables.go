package master

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Tables. A table's schema lives in the lock service
// (Dir/schema/<table>); its tablets' rows live in METADATA, written by the
// servers that serve them (kv/tabletserver's catalog). The master creates
// a table's tablets on one server (they spread by balancing), deletes
// tables, and pushes schema changes to the servers.

// rootReader reads the root tablet's location for the master's own client.
type rootReader struct{ m *Master }

func (r rootReader) Root(ctx context.Context) (string, error) {
	data, ok, err := r.m.opts.Coord.ReadFile(ctx, r.m.opts.Dir+"/root")
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errors.New("the root tablet is not assigned yet")
	}
	d, err := model.ParseRootFile(data)
	if err != nil {
		return "", err
	}
	return d.Addr, nil
}

// kv returns the master's client of the kv data path.
func (m *Master) kv() *client.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.client == nil {
		m.client = client.New(client.Options{Root: rootReader{m}, Secret: m.opts.Secret, DialOptions: client.SequencerDialOptions(m.sequencer)})
	}
	return m.client
}

// pickServer returns the live server with the fewest tablets.
func (m *Master) pickServer() (Server, error) {
	servers := m.Servers()
	if len(servers) == 0 {
		return Server{}, status.Error(codes.Unavailable, "no tablet server is registered yet")
	}
	sort.SliceStable(servers, func(i, j int) bool { return len(servers[i].Tablets) < len(servers[j].Tablets) })
	return servers[0], nil
}

// createTablets asks a server to create a table's tablets.
func (m *Master) createTablets(ctx context.Context, s Server, table string, schema model.Schema, splits [][]byte) ([]*pb.TabletInfo, error) {
	js, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	cli, err := m.stub(s.Addr)
	if err != nil {
		return nil, err
	}
	resp, err := cli.CreateTable(ctx, &pb.CreateTableRequest{Table: table, Schema: js, Splits: splits})
	if err != nil {
		return nil, fmt.Errorf("create %q on server %s: %w", table, s.ID, err)
	}
	return resp.Tablets, nil
}

// ensureMetadata creates the METADATA table, split at MetaRootEnd so that
// its first tablet is the root tablet, unless the root file exists. The
// server records the root tablet in the root file and the other tablet in
// the root tablet. A master that died half-way left no root file, and the
// next one creates METADATA again (on a server of its choice).
func (m *Master) ensureMetadata(ctx context.Context) error {
	if _, ok, err := m.opts.Coord.ReadFile(ctx, m.opts.Dir+"/root"); err != nil || ok {
		return err
	}
	server, err := m.pickServer()
	if err != nil {
		return err
	}
	if _, err := m.createTablets(ctx, server, client.MetaTable, model.MetaSchema(), [][]byte{model.MetaRootEnd}); err != nil {
		return err
	}
	m.opts.Logger.Info("METADATA created; the root tablet is on this server", slog.String("server", server.ID), slog.String("addr", server.Addr))
	m.refresh(ctx, server.ID)
	return nil
}

// CreateTable creates a table: its schema goes into the lock service, its
// tablets onto a server, and their rows into METADATA.
func (m *Master) CreateTable(ctx context.Context, table string, schema model.Schema, splits [][]byte) error {
	if table == "" || table == client.MetaTable || strings.ContainsAny(table, "/\x00") {
		return status.Errorf(codes.InvalidArgument, "bad table name %q", table)
	}
	if err := schema.Validate(); err != nil {
		return status.Errorf(codes.InvalidArgument, "schema of %q: %v", table, err)
	}
	if err := m.ensureMetadata(ctx); err != nil {
		return fmt.Errorf("METADATA: %w", err)
	}
	schemaFile := m.schemaPath(table)
	if _, exists, err := m.opts.Coord.ReadFile(ctx, schemaFile); err != nil {
		return err
	} else if exists {
		return status.Errorf(codes.AlreadyExists, "table %q already exists", table)
	}
	js, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	if err := m.opts.Coord.WriteFile(ctx, schemaFile, js); err != nil {
		return err
	}
	server, err := m.pickServer()
	if err != nil {
		return err
	}
	tablets, err := m.createTablets(ctx, server, table, schema, splits)
	if err != nil {
		// Undo: without its schema the table does not exist, and reconcile
		// drops the rows of any tablet the server recorded before failing.
		if derr := m.opts.Coord.DeleteFile(ctx, schemaFile); derr != nil {
			m.opts.Logger.Warn("remove the schema after a failed create", slog.String("table", table), slog.Any("err", derr))
		}
		if cli, serr := m.stub(server.Addr); serr == nil {
			cli.DropTable(ctx, &pb.DropTableRequest{Table: table})
		}
		return err
	}
	m.refresh(ctx, server.ID)
	m.event(EventTable, slog.LevelInfo, "created table", slog.String("table", table), slog.Int("tablets", len(tablets)), slog.String("server", server.ID))
	return nil
}

// DeleteTable deletes a table: first its schema (from then on no tablet of
// it is assigned, and reconcile drops the rows of any it meets), then its
// tablets on every live server, then its METADATA rows. Its files go to
// the file GC.
func (m *Master) DeleteTable(ctx context.Context, table string) error {
	if table == "" || table == client.MetaTable {
		return status.Errorf(codes.InvalidArgument, "bad table name %q", table)
	}
	schemaFile, err := m.existingTable(ctx, table)
	if err != nil {
		return err
	}
	if err := m.opts.Coord.DeleteFile(ctx, schemaFile); err != nil {
		return err
	}
	for _, s := range m.Servers() {
		cli, err := m.stub(s.Addr)
		if err != nil {
			return err
		}
		if _, err := cli.DropTable(ctx, &pb.DropTableRequest{Table: table}); err != nil {
			return fmt.Errorf("drop %q on server %s: %w", table, s.ID, err)
		}
		m.refresh(ctx, s.ID)
	}
	kv := m.kv()
	sc := kv.Scan(ctx, client.MetaTable, model.RowRange{Start: model.MetaKey(table, nil)[:len(table)+1], End: append([]byte(table), 1)}, client.Filter{}, 0)
	for sc.Next() {
		mut := &model.RowMutation{Row: sc.Row().Key, Mutations: []model.Mutation{model.DeleteRow()}}
		if err := kv.Apply(ctx, client.MetaTable, mut); err != nil {
			return fmt.Errorf("remove a METADATA row of %q: %w", table, err)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	m.event(EventTable, slog.LevelInfo, "deleted table", slog.String("table", table))
	return nil
}

// UpdateSchema replaces a table's schema (families added, dropped or given
// new GC rules) in the lock service and then on every live server. A
// server that loads a tablet later reads the new schema.
func (m *Master) UpdateSchema(ctx context.Context, table string, expected *model.Schema, schema model.Schema) error {
	if err := schema.Validate(); err != nil {
		return status.Errorf(codes.InvalidArgument, "schema of %q: %v", table, err)
	}
	m.schemaMu.Lock()
	defer m.schemaMu.Unlock()
	schemaFile := m.schemaPath(table)
	cur, exists, err := m.opts.Coord.ReadFile(ctx, schemaFile)
	if err != nil {
		return err
	}
	if !exists {
		return status.Errorf(codes.NotFound, "table %q does not exist", table)
	}
	if expected != nil {
		same, err := sameSchema(cur, *expected)
		if err != nil {
			return status.Errorf(codes.DataLoss, "schema of %q: %v", table, err)
		}
		if !same {
			return status.Errorf(codes.Aborted, "the schema of %q changed since it was read; read it again and redo the change", table)
		}
	}
	js, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	if err := m.opts.Coord.WriteFile(ctx, schemaFile, js); err != nil {
		return err
	}
	for _, s := range m.Servers() {
		cli, err := m.stub(s.Addr)
		if err != nil {
			return err
		}
		if _, err := cli.UpdateSchema(ctx, &pb.UpdateSchemaRequest{Table: table, Schema: js}); err != nil {
			return fmt.Errorf("change the schema of %q on server %s: %w", table, s.ID, err)
		}
	}
	m.event(EventTable, slog.LevelInfo, "changed the schema", slog.String("table", table))
	return nil
}

// sameSchema reports whether a stored schema (JSON) is s, comparing both
// as this version encodes them.
func sameSchema(stored []byte, s model.Schema) (bool, error) {
	var cur model.Schema
	if err := json.Unmarshal(stored, &cur); err != nil {
		return false, err
	}
	a, err := json.Marshal(cur)
	if err != nil {
		return false, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

// schemaPath is a table's schema file in the lock service.
func (m *Master) schemaPath(table string) string { return m.opts.Dir + "/schema/" + table }

// existingTable returns the schema file of a table, or NotFound.
func (m *Master) existingTable(ctx context.Context, table string) (string, error) {
	path := m.schemaPath(table)
	if _, exists, err := m.opts.Coord.ReadFile(ctx, path); err != nil {
		return "", err
	} else if !exists {
		return "", status.Errorf(codes.NotFound, "table %q does not exist", table)
	}
	return path, nil
}
