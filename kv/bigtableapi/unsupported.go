package bigtableapi

import (
	"context"

	adminpb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	iampb "cloud.google.com/go/iam/apiv1/iampb"
	longrunningpb "cloud.google.com/go/longrunning/autogen/longrunningpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The table admin calls below have no counterpart in cellar. Each answers
// Unimplemented naming the feature, rather than the generated stub's bare
// "method not implemented", so that a user of a client library learns
// what is missing.

func unsupported(feature string) error {
	return status.Errorf(codes.Unimplemented, "%s: not supported by cellar", feature)
}

func (a *adminService) CreateTableFromSnapshot(context.Context, *adminpb.CreateTableFromSnapshotRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("snapshots")
}

func (a *adminService) SnapshotTable(context.Context, *adminpb.SnapshotTableRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("snapshots")
}

func (a *adminService) GetSnapshot(context.Context, *adminpb.GetSnapshotRequest) (*adminpb.Snapshot, error) {
	return nil, unsupported("snapshots")
}

func (a *adminService) ListSnapshots(context.Context, *adminpb.ListSnapshotsRequest) (*adminpb.ListSnapshotsResponse, error) {
	return nil, unsupported("snapshots")
}

func (a *adminService) DeleteSnapshot(context.Context, *adminpb.DeleteSnapshotRequest) (*emptypb.Empty, error) {
	return nil, unsupported("snapshots")
}

func (a *adminService) UpdateTable(context.Context, *adminpb.UpdateTableRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("table updates (deletion protection, change streams, automated backups)")
}

func (a *adminService) UndeleteTable(context.Context, *adminpb.UndeleteTableRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("undeleting tables")
}

func (a *adminService) CreateAuthorizedView(context.Context, *adminpb.CreateAuthorizedViewRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("authorized views")
}

func (a *adminService) ListAuthorizedViews(context.Context, *adminpb.ListAuthorizedViewsRequest) (*adminpb.ListAuthorizedViewsResponse, error) {
	return nil, unsupported("authorized views")
}

func (a *adminService) GetAuthorizedView(context.Context, *adminpb.GetAuthorizedViewRequest) (*adminpb.AuthorizedView, error) {
	return nil, unsupported("authorized views")
}

func (a *adminService) UpdateAuthorizedView(context.Context, *adminpb.UpdateAuthorizedViewRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("authorized views")
}

func (a *adminService) DeleteAuthorizedView(context.Context, *adminpb.DeleteAuthorizedViewRequest) (*emptypb.Empty, error) {
	return nil, unsupported("authorized views")
}

func (a *adminService) CreateBackup(context.Context, *adminpb.CreateBackupRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("backups")
}

func (a *adminService) GetBackup(context.Context, *adminpb.GetBackupRequest) (*adminpb.Backup, error) {
	return nil, unsupported("backups")
}

func (a *adminService) UpdateBackup(context.Context, *adminpb.UpdateBackupRequest) (*adminpb.Backup, error) {
	return nil, unsupported("backups")
}

func (a *adminService) DeleteBackup(context.Context, *adminpb.DeleteBackupRequest) (*emptypb.Empty, error) {
	return nil, unsupported("backups")
}

func (a *adminService) ListBackups(context.Context, *adminpb.ListBackupsRequest) (*adminpb.ListBackupsResponse, error) {
	return nil, unsupported("backups")
}

func (a *adminService) RestoreTable(context.Context, *adminpb.RestoreTableRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("backups")
}

func (a *adminService) CopyBackup(context.Context, *adminpb.CopyBackupRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("backups")
}

func (a *adminService) GetIamPolicy(context.Context, *iampb.GetIamPolicyRequest) (*iampb.Policy, error) {
	return nil, unsupported("IAM policies")
}

func (a *adminService) SetIamPolicy(context.Context, *iampb.SetIamPolicyRequest) (*iampb.Policy, error) {
	return nil, unsupported("IAM policies")
}

func (a *adminService) TestIamPermissions(context.Context, *iampb.TestIamPermissionsRequest) (*iampb.TestIamPermissionsResponse, error) {
	return nil, unsupported("IAM policies")
}

func (a *adminService) CreateSchemaBundle(context.Context, *adminpb.CreateSchemaBundleRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("schema bundles")
}

func (a *adminService) UpdateSchemaBundle(context.Context, *adminpb.UpdateSchemaBundleRequest) (*longrunningpb.Operation, error) {
	return nil, unsupported("schema bundles")
}

func (a *adminService) GetSchemaBundle(context.Context, *adminpb.GetSchemaBundleRequest) (*adminpb.SchemaBundle, error) {
	return nil, unsupported("schema bundles")
}

func (a *adminService) ListSchemaBundles(context.Context, *adminpb.ListSchemaBundlesRequest) (*adminpb.ListSchemaBundlesResponse, error) {
	return nil, unsupported("schema bundles")
}

func (a *adminService) DeleteSchemaBundle(context.Context, *adminpb.DeleteSchemaBundleRequest) (*emptypb.Empty, error) {
	return nil, unsupported("schema bundles")
}
