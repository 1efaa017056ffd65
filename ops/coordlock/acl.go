package coordlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/client"
	"github.com/cellardb/cellar/kv/model"
)

// ACLDir holds one ACL file per table (model.ACL as JSON), named after
// the table (path-escaped).
const ACLDir = "/ls/local/cellar/acl"

// ACLPath is table's ACL file.
func ACLPath(table string) string { return ACLDir + "/" + url.PathEscape(table) }

// ACLFiles reads and writes the tables' ACL files: the tablet servers read
// them (tabletserver.ACLReader), GRANT, REVOKE and cellar admin write them.
type ACLFiles struct{ Session *Session }

// ReadACL implements tabletserver.ACLReader.
func (a ACLFiles) ReadACL(ctx context.Context, table string) ([]byte, bool, error) {
	return a.Session.ReadFile(ctx, ACLPath(table))
}

// UpdateACL reads table's ACL (nil if it has none), applies update, and
// writes the result unless it is nil, as a compare-and-swap on the file's
// generation: a concurrent change makes it read and apply update again.
func (a ACLFiles) UpdateACL(ctx context.Context, table string, update func(*model.ACL) (*model.ACL, error)) error {
	return a.Session.UpdateFile(ctx, ACLPath(table), func(old []byte, exists bool) ([]byte, error) {
		var acl *model.ACL
		if exists {
			var err error
			if acl, err = model.ParseACL(old); err != nil {
				return nil, fmt.Errorf("%s: %w", ACLPath(table), err)
			}
		}
		acl, err := update(acl)
		if err != nil || acl == nil {
			return nil, err
		}
		return acl.Marshal(), nil
	})
}

// UpdateFile changes a file with f, which gets its contents and whether it
// exists and returns the new contents (nil: leave it as it is). The write
// is a compare-and-swap; if another write came between, f runs again.
func (s *Session) UpdateFile(ctx context.Context, path string, f func(old []byte, exists bool) ([]byte, error)) error {
	return s.do(ctx, func(c *client.Client) error {
		for {
			done, err := s.updateOnce(ctx, c, path, f)
			if done || err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	})
}

// updateOnce reports whether it finished; false: lost a race, try again.
func (s *Session) updateOnce(ctx context.Context, c *client.Client, path string, f func([]byte, bool) ([]byte, error)) (bool, error) {
	h, _, err := c.OpenNode(ctx, path, client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite})
	if errors.Is(err, coord.ErrNotFound) {
		data, err := f(nil, false)
		if err != nil || data == nil {
			return true, err
		}
		if err := mkdirs(ctx, c, path); err != nil {
			return true, err
		}
		h, _, err := c.OpenNode(ctx, path, client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true, MustCreate: true, Contents: data})
		if errors.Is(err, coord.ErrExists) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		return true, h.Close(ctx)
	}
	if err != nil {
		return true, err
	}
	defer h.Close(ctx)
	old, st, err := h.GetContentsAndStat(ctx)
	if errors.Is(err, coord.ErrInvalidHandle) {
		return false, nil // deleted meanwhile
	}
	if err != nil {
		return true, err
	}
	data, err := f(old, true)
	if err != nil || data == nil {
		return true, err
	}
	_, err = h.SetContents(ctx, data, client.IfGeneration(st.ContentGeneration))
	if errors.Is(err, coord.ErrGenerationMismatch) || errors.Is(err, coord.ErrInvalidHandle) {
		return false, nil
	}
	return true, err
}

// ACLWatch reports changes of the ACL files as Chubby's events deliver
// them, so that a tablet server drops a cached ACL at once rather than
// when its TTL ends (which stays the bound if an event is lost).
type ACLWatch struct {
	stop chan struct{}
	done chan struct{}
}

// WatchACLs calls changed with a table's name when its ACL file is
// created, written or deleted, and with "" when events may have been lost
// (a new Chubby master, a new session). It runs until Close.
func (s *Service) WatchACLs(changed func(table string)) *ACLWatch {
	w := &ACLWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(s, changed)
	return w
}

func (w *ACLWatch) run(svc *Service, changed func(string)) {
	defer close(w.done)
	for {
		lost := make(chan struct{})
		var once bool
		opts := svc.Client
		opts.OnEvent = func(e client.Event) {
			switch e.Type {
			case coord.EventChildAdded, coord.EventChildRemoved, coord.EventChildModified:
				n, err := coord.ParseName(e.Name)
				if err != nil {
					changed("")
					return
				}
				table, err := url.PathUnescape(coord.Base(n.Path))
				if err != nil {
					table = ""
				}
				changed(table)
			case coord.EventMasterFailover, coord.EventEventsLost:
				// EVENTS_LOST: a queue overflow dropped events, so
				// re-read every table's grants, as after a failover.
				changed("")
			case coord.EventSessionExpired:
				if !once {
					once = true
					close(lost)
				}
			}
		}
		c := client.New(opts)
		err := w.watch(c)
		if err == nil {
			changed("") // changes made while no watch was open
			select {
			case <-lost:
			case <-w.stop:
			}
		}
		c.Close(context.Background())
		select {
		case <-w.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// watch opens the session and a handle on the ACL directory that
// subscribes to its children's events.
func (w *ACLWatch) watch(c *client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := c.Open(ctx); err != nil {
		return err
	}
	if err := MkdirAll(ctx, c, ACLDir); err != nil {
		return err
	}
	_, _, err := c.OpenNode(ctx, ACLDir, client.OpenOptions{Mode: coord.ModeRead,
		Events: coord.Mask(coord.EventChildAdded, coord.EventChildRemoved, coord.EventChildModified)})
	return err
}

// Close stops the watch.
func (w *ACLWatch) Close() {
	close(w.stop)
	<-w.done
}
