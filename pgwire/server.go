package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellardb/cellar/query"
	"github.com/cellardb/cellar/query/pgtypes"
)

// Session is the SQL layer a connection talks to (package query's
// *query.Session implements it).
type Session interface {
	Parse(sql string) ([]*query.Statement, error)
	Prepare(ctx context.Context, sql string, paramOIDs []uint32) (*query.Statement, error)
	Execute(ctx context.Context, st *query.Statement, args []any) (*query.Result, error)
	Failed()
	TxStatus() query.TxStatus
	ReportChanges() [][2]string
	Setting(name string) (string, bool)
	// Style is how the session writes dates, times, intervals and floats:
	// pgtypes.StyleFrom(Setting), asked for by every statement's output.
	Style() pgtypes.Style
	CursorColumns(name string) ([]pgtypes.Column, bool)
	BoundColumns(st *query.Statement) []pgtypes.Column
}

// Options configure a server. The zero value of every field but
// NewSession has a default.
type Options struct {
	// NewSession starts the SQL session of an authenticated connection.
	NewSession func(query.SessionOptions) (Session, error)
	// TLS, if set, lets clients upgrade with SSLRequest.
	TLS *tls.Config
	// TLSRequired refuses connections that do not upgrade to TLS.
	TLSRequired bool
	// Rules choose the authentication method (default: DemoRules).
	Rules []Rule
	// Users are the known users; nil knows none (only trust works then).
	Users Users
	// MaxConns bounds the connections served at once (default 100).
	MaxConns int
	// MaxMessageSize bounds a message after authentication (default 16 MiB).
	MaxMessageSize int
	// MaxAuthMessage bounds a message before it (default 8 KiB).
	MaxAuthMessage int
	// AuthTimeout bounds startup and authentication together (default 10 s).
	AuthTimeout time.Duration
	// IdleSessionTimeout closes connections idle outside a transaction
	// this long (0: only the session's idle_session_timeout setting).
	IdleSessionTimeout time.Duration
	// Logger receives notable events (nil: discarded).
	Logger *slog.Logger
	// StatementDone, if set, hears of every statement run: its type
	// (query.Statement.Type), how long it ran and its error (nil on
	// success). It runs on the connection's goroutine and must not block.
	StatementDone func(typ string, d time.Duration, err error)
	// Clock stamps Sessions' times (default time.Now).
	Clock func() time.Time
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.NewSession == nil {
		return errors.New("pgwire: NewSession is required")
	}
	if o.TLSRequired && o.TLS == nil {
		return errors.New("pgwire: TLS is required but no certificate is configured")
	}
	for _, r := range o.Rules {
		if err := r.validate(); err != nil {
			return err
		}
	}
	if o.MaxConns < 0 || o.MaxMessageSize < 0 || o.MaxAuthMessage < 0 || o.AuthTimeout < 0 || o.IdleSessionTimeout < 0 {
		return errors.New("pgwire: negative limit")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Rules == nil {
		o.Rules = DemoRules()
	}
	if o.MaxConns == 0 {
		o.MaxConns = 100
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = 16 << 20
	}
	if o.MaxAuthMessage == 0 {
		o.MaxAuthMessage = 8 << 10
	}
	if o.AuthTimeout == 0 {
		o.AuthTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Server serves the PostgreSQL protocol.
type Server struct {
	opts   Options
	secret []byte // for fake SCRAM salts of unknown users

	mu       sync.Mutex
	lns      []net.Listener
	conns    map[*conn]struct{}
	backends map[uint32]*conn // by process id, for CancelRequest
	nextPID  uint32
	closed   bool
	active   atomic.Int64
	wg       sync.WaitGroup
}

// New returns a server. It does no I/O; Serve does.
func New(opts Options) *Server {
	return &Server{opts: opts.withDefaults(), conns: map[*conn]struct{}{}, backends: map[uint32]*conn{}}
}

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.opts.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	if s.secret == nil {
		s.secret = make([]byte, 32)
		if _, err := rand.Read(s.secret); err != nil {
			s.mu.Unlock()
			return err
		}
		var pid [4]byte
		rand.Read(pid[:])
		s.nextPID = binary.BigEndian.Uint32(pid[:])%1_000_000 + 1000
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			if c.pid != 0 && s.backends[c.pid] == c {
				delete(s.backends, c.pid)
			}
			s.mu.Unlock()
		}()
	}
}

// Close stops accepting and drains: idle sessions end at once and
// running statements finish, each session then told that the server
// shuts down (57P01). When ctx ends first, the statements still running
// are cancelled and Close returns ctx's error.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.drain()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.shutdown()
	}
	s.mu.Unlock()
	return ctx.Err()
}

// register gives a connection its process id and secret key.
func (s *Server) register(c *conn) error {
	key := make([]byte, 4)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextPID++
	c.pid, c.secret = s.nextPID, key
	s.backends[c.pid] = c
	return nil
}

// cancel cancels the running statement of the backend pid if the secret
// matches; like PostgreSQL, it says nothing either way.
func (s *Server) cancel(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.backends[pid]
	s.mu.Unlock()
	if c == nil {
		return
	}
	if subtle.ConstantTimeCompare(c.secret, secret) == 1 {
		c.cancelStatement()
	}
}

// Stats describe a server for metrics.
type Stats struct {
	// Connections is the connections being served now (past the
	// MaxConns check, authenticated or authenticating).
	Connections int64
}

// Stats returns a snapshot of the server's state.
func (s *Server) Stats() Stats { return Stats{Connections: s.active.Load()} }

// Addr returns the first listener's address.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lns) == 0 {
		return nil
	}
	return s.lns[0].Addr()
}

func (s *Server) String() string { return fmt.Sprintf("pgwire server on %v", s.Addr()) }
