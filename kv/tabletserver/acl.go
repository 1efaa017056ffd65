package tabletserver

import (
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/model"
)

// ACLReader reads tables' ACL files from the lock service.
type ACLReader interface {
	// ReadACL returns the contents of table's ACL file and whether it
	// exists; a table without one is open to every principal.
	ReadACL(ctx context.Context, table string) ([]byte, bool, error)
}

// aclCache keeps parsed ACLs for at most ttl, so that a change in the lock
// service (a revoke) takes effect here within ttl.
type aclCache struct {
	src ACLReader
	ttl time.Duration
	now func() time.Time

	mu      sync.RWMutex
	entries map[string]aclEntry
	// gen counts invalidations: a read that an invalidation overtook is
	// used but not cached, since it may predate the change.
	gen uint64
}

type aclEntry struct {
	acl *model.ACL // nil: the table has none
	at  time.Time
}

func (c *aclCache) get(ctx context.Context, table string) (*model.ACL, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[table]
	gen := c.gen
	c.mu.RUnlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.acl, nil
	}
	data, found, err := c.src.ReadACL(ctx, table)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "read the ACL of table %q: %v", table, err)
	}
	e = aclEntry{at: now}
	if found {
		if e.acl, err = model.ParseACL(data); err != nil {
			return nil, status.Errorf(codes.Internal, "the ACL of table %q: %v", table, err)
		}
	}
	c.mu.Lock()
	if c.gen == gen {
		c.entries[table] = e
	}
	c.mu.Unlock()
	return e.acl, nil
}

// Invalidate drops the cached ACL of table (all tables if table is ""),
// as when the lock service says the file changed.
func (s *Server) Invalidate(table string) {
	c := s.acls
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if table == "" {
		c.entries = map[string]aclEntry{}
		return
	}
	delete(c.entries, table)
}

// access is what a request reads and writes of a table: the families
// (nil with all set: every family of the table).
type access struct {
	read, write       []string
	readAll, writeAll bool
}

// authorizeRead authorizes a read through f. A read of every family by a
// principal who may not read them all is narrowed to the readable ones
// if f is readableOnly and its required families are readable; else it
// is denied.
func (s *Server) authorizeRead(ctx context.Context, table string, row []byte, f *filter) error {
	a := readAccess(f)
	if !a.readAll || !f.readableOnly {
		return s.authorize(ctx, table, row, a)
	}
	who, acl, err := s.principalACL(ctx, table)
	if err != nil || acl == nil {
		return err
	}
	req := append(slices.Clone(f.require), f.conds.Families()...)
	if err := acl.Check(who, table, req, false); err != nil {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	all, err := s.families(table, row)
	if err != nil {
		return err
	}
	var readable []string
	for _, fam := range all {
		if acl.Allows(who, fam, false) {
			readable = append(readable, fam)
		}
	}
	if len(readable) == len(all) {
		return nil
	}
	if len(readable) == 0 {
		return status.Error(codes.PermissionDenied, acl.Check(who, table, all[:1], false).Error())
	}
	f.read.Families = readable
	return nil
}

// principalACL authenticates the call and returns its principal and the
// table's ACL; a nil ACL (and no error) means no check applies.
func (s *Server) principalACL(ctx context.Context, table string) (model.Principal, *model.ACL, error) {
	who, err := client.Authenticate(ctx, s.opts.Secret)
	if err != nil {
		return model.Principal{}, nil, err
	}
	if who.Member || who.Principal.Superuser || s.acls == nil || table == client.MetaTable {
		return who.Principal, nil, nil
	}
	acl, err := s.acls.get(ctx, table)
	return who.Principal, acl, err
}

// families are the families of table's schema, from its tablet of row.
func (s *Server) families(table string, row []byte) ([]string, error) {
	t, err := s.opts.Store.Locate(table, row)
	if err != nil {
		return nil, toStatus(err)
	}
	var all []string
	for _, f := range t.Schema().Families {
		all = append(all, f.Name)
	}
	return all, nil
}

// authorize checks the call's secret and, for a principal's call, the
// table's ACL for the families the request reads and writes. row locates
// the table's schema when a request touches every family.
func (s *Server) authorize(ctx context.Context, table string, row []byte, a access) error {
	who, acl, err := s.principalACL(ctx, table)
	if err != nil || acl == nil {
		return err
	}
	if a.readAll || a.writeAll {
		all, err := s.families(table, row)
		if err != nil {
			return err
		}
		if a.readAll {
			a.read = all
		}
		if a.writeAll {
			a.write = all
		}
	}
	if err := acl.Check(who, table, a.read, false); err != nil {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	if err := acl.Check(who, table, a.write, true); err != nil {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return nil
}

// readAccess is what a read through f takes.
func readAccess(f *filter) access {
	if f.read.Families == nil {
		return access{readAll: true}
	}
	return access{read: f.read.Families}
}

// mutationAccess adds what ms write to a; a row or family deletion with
// no family named writes every family.
func mutationAccess(a *access, ms []model.Mutation) {
	for _, m := range ms {
		if m.Family == "" {
			a.writeAll = true
			continue
		}
		a.write = append(a.write, m.Family)
	}
}

func (o Options) aclTTL() time.Duration {
	if o.ACLTTL > 0 {
		return o.ACLTTL
	}
	return 5 * time.Second
}

func newACLCache(o Options) *aclCache {
	if o.ACLs == nil {
		return nil
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &aclCache{src: o.ACLs, ttl: o.aclTTL(), now: now, entries: map[string]aclEntry{}}
}
