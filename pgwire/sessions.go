package pgwire

import (
	"sort"
	"time"

	"github.com/cellardb/cellar/query"
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
	c.mu.Lock()
	c.act.ready, c.act.connectedAt, c.act.state = true, c.srv.opts.Clock(), state
	c.mu.Unlock()
}

// started records that sql starts running.
func (c *conn) started(sql string) {
	now := c.srv.opts.Clock()
	c.mu.Lock()
	c.act.state, c.act.statement, c.act.statementStart = "active", sql, now
	c.mu.Unlock()
}

// finished records the state the session is left in.
func (c *conn) finished() {
	state := stateOf(c.sess.TxStatus())
	c.mu.Lock()
	c.act.state = state
	c.mu.Unlock()
}

// Sessions returns the authenticated connections, by process id.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var out []SessionInfo
	for _, c := range conns {
		c.mu.Lock()
		a := c.act
		c.mu.Unlock()
		if !a.ready {
			continue
		}
		// pid, user, database, nc and tls are set before ready and never
		// change after it.
		out = append(out, SessionInfo{PID: c.pid, User: c.user, Database: c.database, ClientAddr: c.nc.RemoteAddr().String(), TLS: c.tls,
			ConnectedAt: a.connectedAt, State: a.state, Statement: a.statement, StatementStart: a.statementStart})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
