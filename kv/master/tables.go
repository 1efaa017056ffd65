package master

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Tables: until tablets can move between servers (they need the shared
// file system), a table's tablets live on the server that created them.
// The master still writes every tablet's METADATA row, so clients find
// tablets through the hierarchy as they will when tablets move.

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
	return string(data), nil
}

// kv returns the master's client of the kv data path.
func (m *Master) kv() *client.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.client == nil {
		m.client = client.New(client.Options{Root: rootReader{m}})
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

// ensureMetadata creates the METADATA table, with its root tablet, and
// the root file if they do not exist yet. It is idempotent, so a master
// that died half-way is finished by the next.
func (m *Master) ensureMetadata(ctx context.Context) error {
	rootFile := m.opts.Dir + "/root"
	addr, ok, err := m.opts.Coord.ReadFile(ctx, rootFile)
	if err != nil {
		return err
	}
	server := Server{Addr: string(addr)}
	if !ok {
		if server, err = m.pickServer(); err != nil {
			return err
		}
		_, err := m.createTablets(ctx, server, client.MetaTable, model.MetaSchema(), [][]byte{model.MetaRootEnd})
		// A master that died after this step left the table in place.
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			return err
		}
		if err := m.opts.Coord.WriteFile(ctx, rootFile, []byte(server.Addr)); err != nil {
			return err
		}
		m.opts.Logf("master: METADATA created on server %s; the root tablet is at %s", server.ID, server.Addr)
	}
	// The root tablet's one row: METADATA's other tablet.
	kv := m.kv()
	if _, found, err := kv.ReadRow(ctx, client.MetaTable, model.MetaKey("", nil), client.Filter{}); err != nil || found {
		return err
	}
	d := model.TabletDescriptor{Table: "", Start: model.MetaRootEnd, Server: server.ID, Addr: server.Addr}
	mut, err := d.Mutation(model.ServerTimestamp)
	if err != nil {
		return err
	}
	return kv.Apply(ctx, client.MetaTable, mut)
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
	schemaFile := m.opts.Dir + "/schema/" + table
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
		return err
	}
	kv := m.kv()
	for _, t := range tablets {
		d := model.TabletDescriptor{Table: table, Start: t.Range.GetStart(), End: t.Range.GetEnd(), Server: server.ID, Addr: server.Addr}
		mut, err := d.Mutation(model.ServerTimestamp)
		if err != nil {
			return err
		}
		if err := kv.Apply(ctx, client.MetaTable, mut); err != nil {
			return fmt.Errorf("write the METADATA row of a tablet of %q: %w", table, err)
		}
	}
	m.opts.Logf("master: created table %q with %d tablets on server %s", table, len(tablets), server.ID)
	return nil
}
