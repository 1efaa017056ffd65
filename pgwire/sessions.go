package pgwire

import (
	"net"
	"sort"
	"time"

	"github.com/cellardb/cellar/query"
	"github.com/cellardb/cellar/query/pgcatalog"
)

// SessionInfo describes one authenticated connection, in the spirit of
// PostgreSQL's pg_stat_activity.
type SessionInfo struct {
	PID        uint32
	User       string
	Database   string
	ClientAddr string
	TLS        bool
	// ConnectedAt is when authentication finished.
	ConnectedAt time.Time
	// State is "active" while a statement runs, otherwise "idle", "idle
	// in transaction" or "idle in transaction (aborted)".
	State string
	// Statement is the running statement's text, or the last one's while
	// idle; StatementStart is when it started.
	Statement      string
	StatementStart time.Time
}

// activity is a connection's part of SessionInfo, written by its own
// goroutine and read by Sessions under conn.mu.
type activity struct {
	ready          bool
	connectedAt    time.Time
	state          string
	statement      string
	statementStart time.Time
	// stateChange is when state last changed, xactStart when the
	// transaction under way began (zero: none), and applicationName the
	// session's setting as last reported to the client.
	stateChange     time.Time
	xactStart       time.Time
	applicationName string
}

func stateOf(tx query.TxStatus) string {
	switch tx {
	case query.TxIdle:
		return "idle"
	case query.TxFailed:
		return "idle in transaction (aborted)"
	default:
		return "idle in transaction"
	}
}

// authenticated marks the connection as a session from now on.
func (c *conn) authenticated() {
	state := stateOf(c.sess.TxStatus())
	now := c.srv.opts.Clock()
	c.mu.Lock()
	c.act.ready, c.act.connectedAt, c.act.state, c.act.stateChange = true, now, state, now
	c.mu.Unlock()
}

// started records that sql starts running.
func (c *conn) started(sql string) {
	now := c.srv.opts.Clock()
	c.mu.Lock()
	if c.act.state == "idle" {
		c.act.xactStart = now // a statement outside a block is a transaction
	}
	c.act.state, c.act.statement, c.act.statementStart, c.act.stateChange = "active", sql, now, now
	c.mu.Unlock()
}

// finished records the state the session is left in.
func (c *conn) finished() {
	state := stateOf(c.sess.TxStatus())
	now := c.srv.opts.Clock()
	c.mu.Lock()
	c.act.state, c.act.stateChange = state, now
	if state == "idle" {
		c.act.xactStart = time.Time{}
	}
	c.mu.Unlock()
}

// sessionConn is a connection with the activity it had when read.
type sessionConn struct {
	c *conn
	a activity
}

// sessions returns the authenticated connections, by process id. A
// connection's pid, user, database, nc and tls are set before it is
// ready and never change after it.
func (s *Server) sessions() []sessionConn {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var out []sessionConn
	for _, c := range conns {
		c.mu.Lock()
		a := c.act
		c.mu.Unlock()
		if a.ready {
			out = append(out, sessionConn{c, a})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].c.pid < out[j].c.pid })
	return out
}

// Sessions returns the authenticated connections, by process id.
func (s *Server) Sessions() []SessionInfo {
	var out []SessionInfo
	for _, sc := range s.sessions() {
		c, a := sc.c, sc.a
		out = append(out, SessionInfo{PID: c.pid, User: c.user, Database: c.database, ClientAddr: c.nc.RemoteAddr().String(), TLS: c.tls,
			ConnectedAt: a.connectedAt, State: a.state, Statement: a.statement, StatementStart: a.statementStart})
	}
	return out
}

// catalogSessions is Sessions as pg_stat_activity shows them.
func (s *Server) catalogSessions() []pgcatalog.Session {
	var out []pgcatalog.Session
	for _, sc := range s.sessions() {
		c, a := sc.c, sc.a
		ss := pgcatalog.Session{PID: c.pid, User: c.user, Database: c.database, ApplicationName: a.applicationName,
			BackendStart: a.connectedAt, XactStart: a.xactStart, QueryStart: a.statementStart, Changed: a.stateChange,
			State: a.state, Query: a.statement}
		if addr, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
			ss.ClientAddr, ss.ClientPort = addr.IP.String(), addr.Port
		}
		out = append(out, ss)
	}
	return out
}
