package coordlock

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync/atomic"

	"github.com/cellardb/cellar/pgwire"
)

// UserDir holds the gateway's users, one file per user (pgwire.User as
// JSON: SCRAM verifiers, never passwords), so that every gateway of a
// cluster knows the same users.
const UserDir = "/ls/local/cellar/users"

// UserPath is the file of user name.
func UserPath(name string) string { return UserDir + "/" + url.PathEscape(name) }

// Users looks users up in the lock service, then in Fallback (the
// gateway's users file) if set. The session may be bound after the
// gateway is configured (Bind); until then only Fallback answers.
type Users struct {
	Fallback pgwire.Users
	sess     atomic.Pointer[Session]
}

// Bind makes u look users up through sess.
func (u *Users) Bind(sess *Session) { u.sess.Store(sess) }

// Lookup implements pgwire.Users.
func (u *Users) Lookup(ctx context.Context, name string) (*pgwire.User, error) {
	if s := u.sess.Load(); s != nil {
		data, ok, err := s.ReadFile(ctx, UserPath(name))
		if err != nil {
			return nil, fmt.Errorf("look user %q up in Chubby: %w", name, err)
		}
		if ok {
			var user pgwire.User
			if err := json.Unmarshal(data, &user); err != nil {
				return nil, fmt.Errorf("user file %s: %w", UserPath(name), err)
			}
			return &user, nil
		}
	}
	if u.Fallback == nil {
		return nil, nil
	}
	return u.Fallback.Lookup(ctx, name)
}
