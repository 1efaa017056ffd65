package bigtableapi

import (
	"bytes"
	"context"
	"slices"
	"strconv"

	adminpb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
)

// adminService implements google.bigtable.admin.v2.BigtableTableAdmin.
type adminService struct {
	adminpb.UnimplementedBigtableTableAdminServer
	opts Options
}

// maxGCNesting bounds the recursion over a GC rule's unions and
// intersections; real rules nest two or three levels.
const maxGCNesting = 32

// gcRuleFromProto turns a GcRule into kv/model's; an unset rule keeps
// every version. The result is validated with the schema.
func gcRuleFromProto(r *adminpb.GcRule, depth int) (model.GCRule, error) {
	if depth > maxGCNesting {
		return model.GCRule{}, invalidf("GC rule nests deeper than %d levels", maxGCNesting)
	}
	list := func(kind model.GCRuleKind, rules []*adminpb.GcRule) (model.GCRule, error) {
		out := model.GCRule{Kind: kind, Rules: make([]model.GCRule, len(rules))}
		for i, s := range rules {
			var err error
			if out.Rules[i], err = gcRuleFromProto(s, depth+1); err != nil {
				return model.GCRule{}, err
			}
		}
		return out, nil
	}
	switch v := r.GetRule().(type) {
	case nil:
		return model.GCRule{}, nil
	case *adminpb.GcRule_MaxNumVersions:
		return model.MaxVersionsRule(int(v.MaxNumVersions)), nil
	case *adminpb.GcRule_MaxAge:
		if err := v.MaxAge.CheckValid(); err != nil {
			return model.GCRule{}, invalidf("GC rule max_age: %v", err)
		}
		return model.MaxAgeRule(v.MaxAge.AsDuration()), nil
	case *adminpb.GcRule_Intersection_:
		return list(model.GCIntersection, v.Intersection.GetRules())
	case *adminpb.GcRule_Union_:
		return list(model.GCUnion, v.Union.GetRules())
	default:
		return model.GCRule{}, invalidf("unknown GC rule %T", v)
	}
}

// gcRuleProto is the GcRule of a kv/model rule; keeping every version is
// the empty rule, as the service shows it.
func gcRuleProto(r model.GCRule) *adminpb.GcRule {
	list := func(rules []model.GCRule) []*adminpb.GcRule {
		out := make([]*adminpb.GcRule, len(rules))
		for i, s := range rules {
			out[i] = gcRuleProto(s)
		}
		return out
	}
	switch r.Kind {
	case model.GCMaxVersions:
		return &adminpb.GcRule{Rule: &adminpb.GcRule_MaxNumVersions{MaxNumVersions: int32(r.MaxVersions)}}
	case model.GCMaxAge:
		return &adminpb.GcRule{Rule: &adminpb.GcRule_MaxAge{MaxAge: durationpb.New(r.MaxAge)}}
	case model.GCIntersection:
		return &adminpb.GcRule{Rule: &adminpb.GcRule_Intersection_{Intersection: &adminpb.GcRule_Intersection{Rules: list(r.Rules)}}}
	case model.GCUnion:
		return &adminpb.GcRule{Rule: &adminpb.GcRule_Union_{Union: &adminpb.GcRule_Union{Rules: list(r.Rules)}}}
	}
	return &adminpb.GcRule{}
}

// familyFromProto checks a column family of a request and returns its GC
// rule. Typed and aggregate families (value_type) have no counterpart in
// cellar.
func familyFromProto(id string, cf *adminpb.ColumnFamily) (model.GCRule, error) {
	if err := model.ValidateFamilyName(id); err != nil {
		return model.GCRule{}, toStatus(err)
	}
	if cf.GetValueType() != nil {
		return model.GCRule{}, status.Errorf(codes.Unimplemented, "column family %q: typed and aggregate column families (value_type) are not supported by cellar", id)
	}
	return gcRuleFromProto(cf.GetGcRule(), 0)
}

// tableProto describes a table in a view. Every view but NAME_ONLY shows
// the families; the replication views show cellar's one cluster, always
// ready.
func tableProto(name tableName, s model.Schema, view adminpb.Table_View) *adminpb.Table {
	t := &adminpb.Table{Name: name.String()}
	if view == adminpb.Table_NAME_ONLY {
		return t
	}
	t.Granularity = adminpb.Table_MILLIS
	t.ColumnFamilies = make(map[string]*adminpb.ColumnFamily, len(s.Families))
	for _, f := range s.Families {
		t.ColumnFamilies[f.Name] = &adminpb.ColumnFamily{GcRule: gcRuleProto(f.GC)}
	}
	switch view {
	case adminpb.Table_REPLICATION_VIEW, adminpb.Table_ENCRYPTION_VIEW, adminpb.Table_FULL:
		t.ClusterStates = map[string]*adminpb.Table_ClusterState{"cellar": {ReplicationState: adminpb.Table_ClusterState_READY}}
	}
	return t
}

// unsupportedTable names a table setting cellar does not have, if the
// table asks for one: silently dropping it would mislead the caller.
func unsupportedTable(t *adminpb.Table) string {
	switch {
	case t.GetGranularity() == adminpb.Table_MICROS:
		return "microsecond timestamp granularity (cellar tables have millisecond granularity)"
	case t.GetDeletionProtection():
		return "deletion protection"
	case t.GetChangeStreamConfig() != nil:
		return "change streams"
	case t.GetAutomatedBackupPolicy() != nil:
		return "automated backups"
	case t.GetRowKeySchema() != nil:
		return "row key schemas"
	case t.GetTieredStorageConfig() != nil:
		return "tiered storage"
	}
	return ""
}

// CreateTable creates a table with its column families and initial
// splits.
func (a *adminService) CreateTable(ctx context.Context, req *adminpb.CreateTableRequest) (*adminpb.Table, error) {
	inst, err := parseInstance(req.Parent)
	if err != nil {
		return nil, err
	}
	if !validTableID(req.TableId) {
		return nil, invalidf("invalid table id %q: want 1 to 50 characters of [_a-zA-Z0-9][-_.a-zA-Z0-9]*", req.TableId)
	}
	name := tableName{instance: inst, table: req.TableId}
	if what := unsupportedTable(req.Table); what != "" {
		return nil, status.Errorf(codes.Unimplemented, "table %q: %s not supported by cellar", req.TableId, what)
	}
	var schema model.Schema
	ids := make([]string, 0, len(req.GetTable().GetColumnFamilies()))
	for id := range req.GetTable().GetColumnFamilies() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		gc, err := familyFromProto(id, req.Table.ColumnFamilies[id])
		if err != nil {
			return nil, err
		}
		schema.Families = append(schema.Families, model.Family{Name: id, GC: gc})
	}
	if err := schema.Validate(); err != nil {
		return nil, toStatus(err)
	}
	var splits [][]byte
	for i, s := range req.InitialSplits {
		if err := checkRowKey(s.GetKey()); err != nil {
			return nil, invalidf("initial split %d: %v", i, status.Convert(err).Message())
		}
		splits = append(splits, s.GetKey())
	}
	slices.SortFunc(splits, bytes.Compare)
	splits = slices.CompactFunc(splits, bytes.Equal)
	if err := a.opts.Admin.CreateTable(ctx, name.table, schema, splits); err != nil {
		return nil, toStatus(err)
	}
	return tableProto(name, schema, adminpb.Table_SCHEMA_VIEW), nil
}

// lookup returns a table's schema and whether the table exists.
func (a *adminService) lookup(ctx context.Context, table string) (model.Schema, bool, error) {
	all, err := a.opts.Admin.Tables(ctx)
	if err != nil {
		return model.Schema{}, false, err
	}
	s, ok := all[table]
	return s, ok, nil
}

// schemaOf returns an existing table's schema, NotFound if there is none.
func (a *adminService) schemaOf(ctx context.Context, table string) (model.Schema, error) {
	s, ok, err := a.lookup(ctx, table)
	if err != nil {
		return model.Schema{}, toStatus(err)
	}
	if !ok {
		return model.Schema{}, status.Errorf(codes.NotFound, "table %q not found", table)
	}
	return s, nil
}

// ListTables lists every table, in name order, a page at a time if asked.
// The page token is the name of the last table of the previous page.
func (a *adminService) ListTables(ctx context.Context, req *adminpb.ListTablesRequest) (*adminpb.ListTablesResponse, error) {
	inst, err := parseInstance(req.Parent)
	if err != nil {
		return nil, err
	}
	if req.PageSize < 0 {
		return nil, invalidf("page_size %d must not be negative", req.PageSize)
	}
	view := req.View
	if view == adminpb.Table_VIEW_UNSPECIFIED {
		view = adminpb.Table_NAME_ONLY
	}
	all, err := a.opts.Admin.Tables(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	names := make([]string, 0, len(all))
	for n := range all {
		if n > req.PageToken {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := &adminpb.ListTablesResponse{}
	if req.PageSize > 0 && len(names) > int(req.PageSize) {
		names = names[:req.PageSize]
		out.NextPageToken = names[len(names)-1]
	}
	for _, n := range names {
		out.Tables = append(out.Tables, tableProto(tableName{instance: inst, table: n}, all[n], view))
	}
	return out, nil
}

// GetTable describes one table (by default its schema).
func (a *adminService) GetTable(ctx context.Context, req *adminpb.GetTableRequest) (*adminpb.Table, error) {
	name, err := parseTable(req.Name)
	if err != nil {
		return nil, err
	}
	s, err := a.schemaOf(ctx, name.table)
	if err != nil {
		return nil, err
	}
	view := req.View
	if view == adminpb.Table_VIEW_UNSPECIFIED {
		view = adminpb.Table_SCHEMA_VIEW
	}
	return tableProto(name, s, view), nil
}

// DeleteTable deletes a table and its data.
func (a *adminService) DeleteTable(ctx context.Context, req *adminpb.DeleteTableRequest) (*emptypb.Empty, error) {
	name, err := parseTable(req.Name)
	if err != nil {
		return nil, err
	}
	if err := a.opts.Admin.DeleteTable(ctx, name.table); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// ModifyColumnFamilies creates, updates and drops families, in order, and
// writes the schema back in one change: all modifications apply or none.
// What the Bigtable API does not describe — locality groups, SQL's column
// types — is kept.
func (a *adminService) ModifyColumnFamilies(ctx context.Context, req *adminpb.ModifyColumnFamiliesRequest) (*adminpb.Table, error) {
	name, err := parseTable(req.Name)
	if err != nil {
		return nil, err
	}
	if len(req.Modifications) == 0 {
		return nil, invalidf("no modifications provided")
	}
	s, err := a.schemaOf(ctx, name.table)
	if err != nil {
		return nil, err
	}
	old := s // the changes below replace s.Families, never edit it
	fams := slices.Clone(s.Families)
	find := func(id string) int {
		return slices.IndexFunc(fams, func(f model.Family) bool { return f.Name == id })
	}
	for i, m := range req.Modifications {
		id := m.GetId()
		at := find(id)
		switch v := m.GetMod().(type) {
		case *adminpb.ModifyColumnFamiliesRequest_Modification_Create:
			if at >= 0 {
				return nil, status.Errorf(codes.AlreadyExists, "modification %d: family %q already exists", i, id)
			}
			gc, err := familyFromProto(id, v.Create)
			if err != nil {
				return nil, err
			}
			fams = append(fams, model.Family{Name: id, GC: gc})
		case *adminpb.ModifyColumnFamiliesRequest_Modification_Update:
			if at < 0 {
				return nil, status.Errorf(codes.NotFound, "modification %d: family %q not found", i, id)
			}
			if v.Update.GetValueType() != nil {
				return nil, status.Errorf(codes.Unimplemented, "modification %d: typed and aggregate column families (value_type) are not supported by cellar", i)
			}
			paths := m.GetUpdateMask().GetPaths()
			if len(paths) == 0 {
				paths = []string{"gc_rule"} // no mask: the whole family, whose only field here is its rule
			}
			for _, p := range paths {
				switch p {
				case "gc_rule":
					gc, err := gcRuleFromProto(v.Update.GetGcRule(), 0)
					if err != nil {
						return nil, err
					}
					fams[at].GC = gc
				case "value_type":
					// Only an unset value type gets here, which is what
					// cellar's families have.
				default:
					return nil, invalidf("modification %d: unknown update_mask path %q (want gc_rule or value_type)", i, p)
				}
			}
		case *adminpb.ModifyColumnFamiliesRequest_Modification_Drop:
			if !v.Drop {
				return nil, invalidf("modification %d: drop must be true if set", i)
			}
			if at < 0 {
				return nil, status.Errorf(codes.NotFound, "modification %d: family %q not found", i, id)
			}
			fams = slices.Delete(fams, at, at+1)
		default:
			return nil, invalidf("modification %d of family %q sets none of create, update and drop", i, id)
		}
	}
	s.Families = fams
	if err := s.Validate(); err != nil {
		return nil, toStatus(err)
	}
	if err := a.opts.Admin.UpdateSchema(ctx, name.table, &old, s); err != nil {
		return nil, toStatus(err)
	}
	return tableProto(name, s, adminpb.Table_SCHEMA_VIEW), nil
}

// DropRowRange deletes the rows with a key prefix, or every row. cellar
// has no range deletion in storage, so this scans the keys (a filter
// keeps one cell per row and strips its value) and deletes the rows in
// batches: O(rows) work, not atomic, under the caller's deadline.
func (a *adminService) DropRowRange(ctx context.Context, req *adminpb.DropRowRangeRequest) (*emptypb.Empty, error) {
	name, err := parseTable(req.Name)
	if err != nil {
		return nil, err
	}
	var rng model.RowRange
	switch v := req.Target.(type) {
	case *adminpb.DropRowRangeRequest_RowKeyPrefix:
		if len(v.RowKeyPrefix) == 0 {
			return nil, invalidf("row_key_prefix must not be empty; use delete_all_data_from_table")
		}
		if len(v.RowKeyPrefix) > model.MaxRowKeyLen {
			return nil, invalidf("row_key_prefix of %d bytes exceeds the limit of %d bytes", len(v.RowKeyPrefix), model.MaxRowKeyLen)
		}
		rng = model.RowRange{Start: v.RowKeyPrefix, End: prefixEnd(v.RowKeyPrefix)}
	case *adminpb.DropRowRangeRequest_DeleteAllDataFromTable:
		if !v.DeleteAllDataFromTable {
			return nil, invalidf("delete_all_data_from_table must be true if set")
		}
	default:
		return nil, invalidf("set row_key_prefix or delete_all_data_from_table")
	}
	keysOnly := client.Filter{MaxVersions: 1, RowFilter: &model.RowFilter{Kind: model.RowFilterChain, Filters: []model.RowFilter{
		{Kind: model.RowFilterCellsPerRowLimit, N: 1}, {Kind: model.RowFilterStripValue}}}}
	sc := a.opts.Rows.Scan(ctx, name.table, rng, keysOnly, 0)
	batch := make([]*model.RowMutation, 0, a.opts.DropBatch)
	deleteBatch := func() error {
		for _, err := range a.opts.Rows.ApplyBulk(ctx, name.table, batch) {
			if err != nil {
				return toStatus(err)
			}
		}
		batch = batch[:0]
		return nil
	}
	for sc.Next() {
		batch = append(batch, &model.RowMutation{Row: sc.Row().Key, Mutations: []model.Mutation{model.DeleteRow()}})
		if len(batch) == a.opts.DropBatch {
			if err := deleteBatch(); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, toStatus(err)
	}
	if len(batch) > 0 {
		if err := deleteBatch(); err != nil {
			return nil, err
		}
	}
	return &emptypb.Empty{}, nil
}

// prefixEnd is the first key after every key with the prefix p, or nil
// (the table's end) if there is none.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// GenerateConsistencyToken answers a token for CheckConsistency. cellar
// has one copy of each tablet, so every write acknowledged before the
// token is already visible to every reader; the token only names the
// table.
func (a *adminService) GenerateConsistencyToken(ctx context.Context, req *adminpb.GenerateConsistencyTokenRequest) (*adminpb.GenerateConsistencyTokenResponse, error) {
	name, err := parseTable(req.Name)
	if err != nil {
		return nil, err
	}
	if _, err := a.schemaOf(ctx, name.table); err != nil {
		return nil, err
	}
	return &adminpb.GenerateConsistencyTokenResponse{ConsistencyToken: strconv.Quote(name.table)}, nil
}

// CheckConsistency is always consistent for a token of the same table
// (see GenerateConsistencyToken).
func (a *adminService) CheckConsistency(ctx context.Context, req *adminpb.CheckConsistencyRequest) (*adminpb.CheckConsistencyResponse, error) {
	name, err := parseTable(req.Name)
	if err != nil {
		return nil, err
	}
	if _, err := a.schemaOf(ctx, name.table); err != nil {
		return nil, err
	}
	if req.ConsistencyToken != strconv.Quote(name.table) {
		return nil, invalidf("consistency token %q was not issued for table %q", req.ConsistencyToken, name.table)
	}
	return &adminpb.CheckConsistencyResponse{Consistent: true}, nil
}
