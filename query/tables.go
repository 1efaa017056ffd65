package query

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/catalog"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Tables is a gateway's view of the cluster's tables, shared by its
// sessions. Schemas live in Chubby behind the master; this caches them for
// at most MaxAge, and drops the cache at once after a DDL statement of
// this gateway or a KV error that says a table or family is gone, so a
// session sees its own DDL immediately and another gateway's within
// MaxAge.
type Tables struct {
	KV KV
	// MaxAge bounds how stale the cache may be; 0 means 2 s.
	MaxAge time.Duration
	// Now is the clock for MaxAge; default time.Now.
	Now func() time.Time

	mu      sync.Mutex
	at      time.Time
	schemas map[string]model.Schema
	defs    map[string]*catalog.Table
}

// NewTables returns a cache over kv.
func NewTables(kv KV) *Tables { return &Tables{KV: kv} }

func (t *Tables) load(ctx context.Context) error {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	maxAge := t.MaxAge
	if maxAge == 0 {
		maxAge = 2 * time.Second
	}
	t.mu.Lock()
	fresh := t.schemas != nil && now().Sub(t.at) < maxAge
	t.mu.Unlock()
	if fresh {
		return nil
	}
	schemas, err := t.KV.Tables(ctx)
	if err != nil {
		return kvError(err, false)
	}
	defs := make(map[string]*catalog.Table, len(schemas))
	for name, s := range schemas {
		d, err := catalog.FromSchema(name, s)
		if err != nil {
			return sqlstate.Errorf(codeDataCorrupted, "%v", err)
		}
		defs[name] = d
	}
	t.mu.Lock()
	t.schemas, t.defs, t.at = schemas, defs, now()
	t.mu.Unlock()
	return nil
}

// Invalidate drops the cache.
func (t *Tables) Invalidate() {
	t.mu.Lock()
	t.schemas, t.defs = nil, nil
	t.mu.Unlock()
}

// Get returns a table's definition and schema; an unknown table is 42P01.
func (t *Tables) Get(ctx context.Context, name string) (*catalog.Table, model.Schema, error) {
	if err := t.load(ctx); err != nil {
		return nil, model.Schema{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.defs[name]
	if !ok {
		t.mu.Unlock()
		// Another gateway, or the native API, may have just made it.
		if t.refresh(ctx) {
			t.mu.Lock()
			if d, ok = t.defs[name]; ok {
				return d, t.schemas[name], nil
			}
		} else {
			t.mu.Lock()
		}
		return nil, model.Schema{}, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation %q does not exist", name)
	}
	return d, t.schemas[name], nil
}

// refresh reloads the cache after a miss, unless it was loaded within
// the last 100 ms (so a stream of statements on a missing table does not
// become a stream of schema reads).
func (t *Tables) refresh(ctx context.Context) bool {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	t.mu.Lock()
	stale := now().Sub(t.at) > 100*time.Millisecond
	if stale {
		t.schemas, t.defs = nil, nil
	}
	t.mu.Unlock()
	return stale && t.load(ctx) == nil
}

// List returns every table's definition, by name.
func (t *Tables) List(ctx context.Context) ([]*catalog.Table, error) {
	if err := t.load(ctx); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*catalog.Table, 0, len(t.defs))
	for _, d := range t.defs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
