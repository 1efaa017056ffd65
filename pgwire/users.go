package pgwire

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/xdg-go/scram"
)

// User is what authentication knows of a user. Passwords are never
// stored: a SCRAM-SHA-256 verifier (salt, iterations, StoredKey,
// ServerKey) serves SCRAM and cleartext password authentication, and an
// optional MD5 hash (PostgreSQL's "md5" + md5(password + name)) serves md5.
type User struct {
	Name      string         `json:"name"`
	Superuser bool           `json:"superuser,omitempty"`
	SCRAM     *SCRAMVerifier `json:"scram,omitempty"`
	MD5       string         `json:"md5,omitempty"`
}

// SCRAMVerifier is a SCRAM-SHA-256 secret, as PostgreSQL stores it.
type SCRAMVerifier struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// SCRAMIterations is the iteration count of new verifiers (PostgreSQL's).
const SCRAMIterations = 4096

// NewUser makes a user's verifiers from a password; md5 also keeps the
// MD5 hash, for clients that only speak md5.
func NewUser(name, password string, superuser, md5Too bool) (*User, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	v, err := scramVerifier(name, password, salt, SCRAMIterations)
	if err != nil {
		return nil, err
	}
	u := &User{Name: name, Superuser: superuser, SCRAM: v}
	if md5Too {
		u.MD5 = md5Hash(name, password)
	}
	return u, nil
}

func scramVerifier(name, password string, salt []byte, iters int) (*SCRAMVerifier, error) {
	c, err := scram.SHA256.NewClient(name, password, "")
	if err != nil {
		return nil, fmt.Errorf("password: %w", err)
	}
	cred := c.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: iters})
	return &SCRAMVerifier{Salt: salt, Iterations: iters, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}, nil
}

func md5Hash(name, password string) string {
	sum := md5.Sum([]byte(password + name))
	return "md5" + hex.EncodeToString(sum[:])
}

// checkPassword verifies a cleartext password against the user's
// verifiers.
func (u *User) checkPassword(password string) bool {
	if u.SCRAM != nil {
		v, err := scramVerifier(u.Name, password, u.SCRAM.Salt, u.SCRAM.Iterations)
		return err == nil && hmac.Equal(v.StoredKey, u.SCRAM.StoredKey)
	}
	return u.MD5 != "" && hmac.Equal([]byte(md5Hash(u.Name, password)), []byte(u.MD5))
}

// fakeVerifier is the verifier of a user that does not exist: derived
// from a secret, so that the same name always gets the same salt and the
// exchange looks the same from outside as for a real user with a wrong
// password.
func fakeVerifier(secret []byte, name string) *SCRAMVerifier {
	mac := func(label string) []byte {
		h := hmac.New(sha256.New, secret)
		h.Write([]byte(label + "\x00" + name))
		return h.Sum(nil)
	}
	return &SCRAMVerifier{Salt: mac("salt")[:16], Iterations: SCRAMIterations, StoredKey: mac("stored"), ServerKey: mac("server")}
}

// Users is where authentication looks users up.
type Users interface {
	// Lookup returns the user, or nil if there is none.
	Lookup(ctx context.Context, name string) (*User, error)
}

// FileUsers keeps users in a JSON file, which `cellar admin user add`
// manages. It rereads the file when it changes.
type FileUsers struct {
	Path string

	mu    sync.Mutex
	mtime int64
	users map[string]*User
}

// Lookup implements Users.
func (f *FileUsers) Lookup(ctx context.Context, name string) (*User, error) {
	if err := f.load(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.users[name], nil
}

func (f *FileUsers) load() error {
	st, err := os.Stat(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		f.mu.Lock()
		f.users, f.mtime = map[string]*User{}, 0
		f.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if st.ModTime().UnixNano() == f.mtime && f.users != nil {
		return nil
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return err
	}
	var list []*User
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("users file %s: %w", f.Path, err)
	}
	f.users = map[string]*User{}
	for _, u := range list {
		f.users[u.Name] = u
	}
	f.mtime = st.ModTime().UnixNano()
	return nil
}

// Put adds or replaces a user, writing the file atomically.
func (f *FileUsers) Put(u *User) error {
	if err := f.load(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	next := map[string]*User{}
	for k, v := range f.users {
		next[k] = v
	}
	next[u.Name] = u
	list := make([]*User, 0, len(next))
	for _, v := range next {
		list = append(list, v)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return err
	}
	tmp := f.Path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, f.Path); err != nil {
		return err
	}
	f.users = next
	f.mtime = 0 // reread on the next lookup
	return nil
}
