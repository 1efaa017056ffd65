package pgwire

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"

	"github.com/cellardb/cellar/query"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Startup packet codes (the first 4 bytes after the length).
const (
	maxStartupPacket = 10000
	protocol30       = 3<<16 | 0
	sslRequestCode   = 80877103
	gssEncCode       = 80877104
	cancelCode       = 80877102
)

// flushThreshold: rows are flushed to the client every this many bytes.
const flushThreshold = 64 << 10

// maxKeptOut: a flushed output buffer up to this size is kept for the
// next message; a bigger one (a large result) is let go.
const maxKeptOut = 1 << 20

type conn struct {
	srv *Server
	nc  net.Conn
	br  *bufio.Reader
	be  *pgproto3.Backend
	tls bool
	// negotiate answers a startup packet of a newer 3.x or with protocol
	// options.
	negotiate *pgproto3.NegotiateProtocolVersion

	pid            uint32
	secret         []byte
	user, database string
	superuser      bool
	sess           Session
	// terminated: pg_terminate_backend ended the session; its running
	// statement, if any, ends with the FATAL error instead of its own
	// (terminationSent, set by the connection's goroutine).
	terminated      atomic.Bool
	terminationSent bool
	// done is closed when the connection has ended.
	done chan struct{}

	mu       sync.Mutex
	cancelFn context.CancelFunc // of the running statement
	act      activity
	closing  atomic.Bool
	// deadlineSet: a read deadline is armed (an idle timeout, or the
	// server's drain). Guarded by mu, which drain also takes.
	deadlineSet bool

	// out holds the messages sent since the last flush. pgwire encodes
	// into it itself rather than through pgproto3's Backend.Send/Flush:
	// that Flush drops any buffer over 1 KiB, so each 1 KB row cost two
	// allocations and a copy per query.
	out                                       []byte
	encodeErr                                 error
	skipping                                  bool
	stmtTimeout, idleTimeout, idleInTxTimeout durationSetting
	stmts                                     map[string]*prepared
	portals                                   map[string]*portal
	// stmtDeadline is when statement_timeout ends the extended-protocol
	// statement under way (zero: none).
	stmtDeadline time.Time

	// unnamed is the unnamed portal's memory, reused by every Bind to
	// it (the extended protocol's common case): a Bind replaces the
	// unnamed portal, so nothing else holds it then.
	unnamed portal
	// A SELECT's CommandComplete and its tag, reused likewise.
	cmdComplete pgproto3.CommandComplete
	tagBuf      []byte
}

type prepared struct {
	st  *query.Statement // nil: an empty statement
	sql string
	at  time.Time // when it was parsed
	// desc is the statement's last RowDescription and the columns and
	// result formats it was made for: libpq describes the portal of
	// every execution of a prepared statement.
	desc        *pgproto3.RowDescription
	descCols    []pgtypes.Column
	descFormats []int16
}

// rowDescription returns the RowDescription of the columns in the result
// formats, made once for as long as both stay the same.
func (p *prepared) rowDescription(cols []pgtypes.Column, formats []int16) *pgproto3.RowDescription {
	if p.desc == nil || !sameColumns(p.descCols, cols) || !slices.Equal(p.descFormats, formats) {
		p.desc, p.descCols, p.descFormats = rowDescription(cols, formats), cols, slices.Clone(formats)
	}
	return p.desc
}

// sameColumns reports whether a and b are one slice: a statement's
// columns are made once, so comparing them by identity is enough.
func sameColumns(a, b []pgtypes.Column) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

type portal struct {
	st   *query.Statement
	prep *prepared
	args []any
	// cols describe its rows as of Bind (nil: none), in formats.
	cols    []pgtypes.Column
	formats []int16
	res     *query.Result
	pos     int
	// err ended res's statement after its rows, to be sent after them.
	err error
}

// fatal is an error that ends the connection after it is sent.
type fatal struct{ e *sqlstate.Error }

func (f fatal) Error() string { return f.e.Error() }

func fatalf(code, format string, args ...any) error {
	e := sqlstate.Errorf(code, format, args...)
	e.Severity = "FATAL"
	return fatal{e}
}

func (c *conn) serve() {
	defer close(c.done)
	defer c.nc.Close()
	c.br = bufio.NewReader(c.nc)
	c.nc.SetDeadline(time.Now().Add(c.srv.opts.AuthTimeout))
	params, err := c.startup()
	if err != nil {
		c.reportFatal(err)
		return
	}
	if params == nil {
		return // a cancel request, or a client that gave up
	}
	if n := c.srv.active.Add(1); n > int64(c.srv.opts.MaxConns) {
		c.srv.active.Add(-1)
		c.reportFatal(fatalf(sqlstate.CodeTooManyConnections, "sorry, too many clients already"))
		return
	}
	defer c.srv.active.Add(-1)
	if err := c.authenticate(params); err != nil {
		c.reportFatal(err)
		return
	}
	c.authenticated()
	c.nc.SetDeadline(time.Time{})
	c.be.SetMaxBodyLen(c.srv.opts.MaxMessageSize)
	c.stmts, c.portals = map[string]*prepared{}, map[string]*portal{}
	c.send(&pgproto3.ReadyForQuery{TxStatus: byte(c.sess.TxStatus())})
	if err := c.flush(); err != nil {
		return
	}
	c.loop()
}

// reportFatal sends a FATAL error if it can; the connection then closes.
func (c *conn) reportFatal(err error) {
	var f fatal
	if !errors.As(err, &f) {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
			return
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			f = fatal{&sqlstate.Error{Severity: "FATAL", Code: sqlstate.CodeQueryCanceled, Message: "canceling authentication due to timeout"}}
		} else {
			f = fatal{&sqlstate.Error{Severity: "FATAL", Code: sqlstate.CodeProtocolViolation, Message: err.Error()}}
		}
	}
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	if c.be == nil {
		c.be = pgproto3.NewBackend(c.br, c.nc)
	}
	c.send(errorResponse(f.e))
	c.flush()
}

// readStartupPacket reads one length-prefixed startup packet by itself, so
// that nothing past it is consumed before a TLS handshake.
func (c *conn) readStartupPacket() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n < 8 || n > maxStartupPacket {
		return nil, fatalf(sqlstate.CodeProtocolViolation, "invalid length of startup packet: %d bytes (at most %d)", n, maxStartupPacket)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(c.br, body); err != nil {
		return nil, err
	}
	return body, nil
}

// startup negotiates encryption and reads the startup message. It returns
// nil parameters for a cancel request.
func (c *conn) startup() (map[string]string, error) {
	for {
		body, err := c.readStartupPacket()
		if err != nil {
			return nil, err
		}
		code := binary.BigEndian.Uint32(body)
		switch code {
		case sslRequestCode:
			if c.tls {
				return nil, fatalf(sqlstate.CodeProtocolViolation, "SSLRequest on an encrypted connection")
			}
			if c.br.Buffered() > 0 {
				return nil, fatalf(sqlstate.CodeProtocolViolation, "received unencrypted data after SSL request")
			}
			if c.srv.opts.TLS == nil {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return nil, err
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return nil, err
			}
			tc := tls.Server(c.nc, c.srv.opts.TLS)
			if err := tc.Handshake(); err != nil {
				return nil, err
			}
			c.nc, c.br, c.tls = tc, bufio.NewReader(tc), true
		case gssEncCode:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return nil, err
			}
		case cancelCode:
			var m pgproto3.CancelRequest
			if err := m.Decode(body); err != nil {
				return nil, err
			}
			c.srv.cancel(m.ProcessID, m.SecretKey)
			return nil, nil
		default:
			if code>>16 != 3 {
				return nil, fatalf(sqlstate.CodeFeatureNotSupported, "unsupported frontend protocol %d.%d: server supports 3.0 to 3.0", code>>16, code&0xffff)
			}
			// A newer 3.x is answered with NegotiateProtocolVersion and
			// served as 3.0, as PostgreSQL does; pgproto3 decodes only
			// the versions it knows.
			binary.BigEndian.PutUint32(body, pgproto3.ProtocolVersion30)
			var m pgproto3.StartupMessage
			if err := m.Decode(body); err != nil {
				return nil, fatalf(sqlstate.CodeProtocolViolation, "invalid startup packet: %v", err)
			}
			if c.srv.opts.TLSRequired && !c.tls {
				return nil, fatalf(sqlstate.CodeInvalidAuthorization, "cellar requires TLS: connect with sslmode=require")
			}
			var options []string
			for k := range m.Parameters {
				if strings.HasPrefix(k, "_pq_.") {
					options = append(options, k)
				}
			}
			if code&0xffff != 0 || len(options) > 0 {
				// The options are named in the packet's order, which a
				// map lost; sorting at least makes the answer stable.
				slices.Sort(options)
				c.negotiate = &pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: pgproto3.ProtocolVersion30, UnrecognizedOptions: options}
			}
			return m.Parameters, nil
		}
	}
}

// startupSettings reads "-c name=value" and "--name=value" from the
// startup packet's options parameter.
func startupSettings(options string) (map[string]string, error) {
	out := map[string]string{}
	fields := strings.Fields(strings.ReplaceAll(options, `\ `, "\x00"))
	for i := 0; i < len(fields); i++ {
		f := strings.ReplaceAll(fields[i], "\x00", " ")
		var kv string
		switch {
		case f == "-c" && i+1 < len(fields):
			i++
			kv = strings.ReplaceAll(fields[i], "\x00", " ")
		case strings.HasPrefix(f, "-c"):
			kv = f[2:]
		case strings.HasPrefix(f, "--"):
			kv = f[2:]
		default:
			return nil, fatalf(sqlstate.CodeProtocolViolation, "invalid command-line argument for server process: %s", f)
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fatalf(sqlstate.CodeSyntaxError, "-c %s requires a value", kv)
		}
		out[strings.ReplaceAll(k, "-", "_")] = v
	}
	return out, nil
}

func (c *conn) authenticate(params map[string]string) error {
	c.be = pgproto3.NewBackend(c.br, c.nc)
	c.be.SetMaxBodyLen(c.srv.opts.MaxAuthMessage)
	if c.negotiate != nil {
		c.send(c.negotiate) // goes out with authentication's first message
	}
	c.user = params["user"]
	if c.user == "" {
		return fatalf(sqlstate.CodeInvalidAuthorization, "no PostgreSQL user name specified in startup packet")
	}
	c.database = params["database"]
	if c.database == "" {
		c.database = c.user
	}
	settings, err := startupSettings(params["options"])
	if err != nil {
		return err
	}
	// Startup parameters besides these are settings too, as in
	// PostgreSQL (unknown ones are refused by the session).
	for k, v := range params {
		switch {
		case k == "user", k == "database", k == "options", k == "replication", k == "application_name":
		case strings.HasPrefix(k, "_pq_."): // protocol options, none known
		default:
			settings[k] = v
		}
	}
	ctx := context.Background()
	var user *User
	if c.srv.opts.Users != nil {
		if user, err = c.srv.opts.Users.Lookup(ctx, c.user); err != nil {
			return fatalf(sqlstate.CodeInternal, "look up user %q: %v", c.user, err)
		}
	}
	method := methodFor(c.srv.opts.Rules, c.nc.RemoteAddr(), c.user, c.database)
	if err := c.runAuth(method, user); err != nil {
		c.srv.opts.Logger.Warn("authentication failed", slog.String("user", c.user), slog.String("remote", c.nc.RemoteAddr().String()), slog.Any("err", err))
		return err
	}
	c.superuser = user != nil && user.Superuser || method == MethodTrust && user == nil
	// The process id comes first: the session reports it (pg_backend_pid).
	if err := c.srv.register(c); err != nil {
		return err
	}
	sess, err := c.srv.opts.NewSession(query.SessionOptions{User: c.user, Database: c.database,
		ApplicationName: params["application_name"], Superuser: c.superuser, Settings: settings, Portals: c, Prepared: c.preparedStatements,
		BackendPID: c.pid, Sessions: c.srv.catalogSessions, Signal: c.signal})
	if err != nil {
		e := sqlstate.AsError(err)
		e.Severity = "FATAL"
		return fatal{e}
	}
	c.sess = sess
	c.send(&pgproto3.AuthenticationOk{})
	c.sendParamChanges()
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
	return nil
}

func (c *conn) authFailed() error {
	return fatalf(sqlstate.CodeInvalidPassword, "password authentication failed for user %q", c.user)
}

func (c *conn) runAuth(method string, user *User) error {
	switch method {
	case MethodTrust:
		return nil
	case MethodReject:
		return fatalf(sqlstate.CodeInvalidAuthorization, "no authentication rule admits host %q, user %q, database %q", addrIP(c.nc.RemoteAddr()), c.user, c.database)
	case MethodPassword:
		if !c.tls {
			return fatalf(sqlstate.CodeInvalidAuthorization, "password authentication needs an encrypted connection: connect with sslmode=require")
		}
		pw, err := c.askPassword(&pgproto3.AuthenticationCleartextPassword{}, pgproto3.AuthTypeCleartextPassword)
		if err != nil {
			return err
		}
		if user == nil || !user.checkPassword(pw) {
			return c.authFailed()
		}
		return nil
	case MethodMD5:
		if user != nil && user.MD5 == "" && user.SCRAM != nil {
			return c.scram(user) // as PostgreSQL does for SCRAM-only users
		}
		var salt [4]byte
		if _, err := rand.Read(salt[:]); err != nil {
			return err
		}
		pw, err := c.askPassword(&pgproto3.AuthenticationMD5Password{Salt: salt}, pgproto3.AuthTypeMD5Password)
		if err != nil {
			return err
		}
		if user == nil || user.MD5 == "" {
			return c.authFailed()
		}
		sum := md5.Sum(append([]byte(strings.TrimPrefix(user.MD5, "md5")), salt[:]...))
		if pw != "md5"+hex.EncodeToString(sum[:]) {
			return c.authFailed()
		}
		return nil
	case MethodSCRAM:
		return c.scram(user)
	}
	return fatalf(sqlstate.CodeInvalidAuthorization, "unknown authentication method %q", method)
}

func (c *conn) askPassword(req pgproto3.BackendMessage, authType uint32) (string, error) {
	c.send(req)
	if err := c.flush(); err != nil {
		return "", err
	}
	c.be.SetAuthType(authType)
	msg, err := c.receive()
	if err != nil {
		return "", err
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return "", fatalf(sqlstate.CodeProtocolViolation, "expected a password response, got %T", msg)
	}
	return pm.Password, nil
}

// scram runs a SCRAM-SHA-256 exchange. An unknown user gets a verifier
// derived from the server's secret, so the exchange fails the same way as
// a wrong password does, at the end.
func (c *conn) scram(user *User) error {
	v := fakeVerifier(c.srv.secret, c.user)
	if user != nil && user.SCRAM != nil {
		v = user.SCRAM
	}
	server, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) {
		// libpq sends an empty SCRAM user name: the startup user counts.
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(v.Salt), Iters: v.Iterations},
			StoredKey: v.StoredKey, ServerKey: v.ServerKey}, nil
	})
	if err != nil {
		return err
	}
	conv := server.NewConversation()
	c.send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if err := c.flush(); err != nil {
		return err
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASL)
	msg, err := c.receive()
	if err != nil {
		return err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || first.AuthMechanism != "SCRAM-SHA-256" {
		return fatalf(sqlstate.CodeProtocolViolation, "expected a SCRAM-SHA-256 initial response")
	}
	out, err := conv.Step(string(first.Data))
	if err != nil {
		return fatalf(sqlstate.CodeProtocolViolation, "malformed SCRAM message: %v", err)
	}
	c.send(&pgproto3.AuthenticationSASLContinue{Data: []byte(out)})
	if err := c.flush(); err != nil {
		return err
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASLContinue)
	if msg, err = c.receive(); err != nil {
		return err
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fatalf(sqlstate.CodeProtocolViolation, "expected a SCRAM final response")
	}
	out, err = conv.Step(string(final.Data))
	if err != nil || !conv.Valid() || user == nil {
		return c.authFailed()
	}
	c.send(&pgproto3.AuthenticationSASLFinal{Data: []byte(out)})
	return nil
}

// receive reads the next message. A decoder that panics on a malformed
// message (pgproto3 v5.7 did, on a short SASLInitialResponse) costs the
// connection, not the server.
func (c *conn) receive() (msg pgproto3.FrontendMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, fatalf(sqlstate.CodeProtocolViolation, "malformed message: %v", r)
		}
	}()
	return c.be.Receive()
}

func (c *conn) setCancel(f context.CancelFunc) {
	c.mu.Lock()
	c.cancelFn = f
	c.mu.Unlock()
}

func (c *conn) cancelStatement() {
	c.mu.Lock()
	f := c.cancelFn
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// drain ends the connection once it is idle: at once if it waits for a
// message, else after its running statement (server Close).
func (c *conn) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing.Store(true)
	c.nc.SetReadDeadline(time.Now())
	c.deadlineSet = true
}

// shutdown ends the connection from another goroutine, cancelling its
// running statement (server Close, when its time is up).
func (c *conn) shutdown() {
	c.closing.Store(true)
	c.cancelStatement()
	c.nc.SetReadDeadline(time.Now())
}

// errTerminated is what a session that pg_terminate_backend or a server
// shutdown ends is told.
func errTerminated() *sqlstate.Error {
	return &sqlstate.Error{Severity: "FATAL", Code: sqlstate.CodeAdminShutdown, Message: "terminating connection due to administrator command"}
}

// signal is pg_cancel_backend (terminate false) and pg_terminate_backend
// on behalf of this session's user: ok is false if no backend has the
// process id, or a terminated one has not ended within wait (if not 0).
// As in PostgreSQL, a superuser may signal any backend and another user
// only its own user's, never a superuser's (42501).
func (c *conn) signal(ctx context.Context, pid uint32, terminate bool, wait time.Duration) (pgeval.SignalOutcome, error) {
	c.srv.mu.Lock()
	t := c.srv.backends[pid]
	c.srv.mu.Unlock()
	if t == nil {
		return pgeval.NoSuchBackend, nil
	}
	if !c.superuser {
		// user and superuser are set before the target registered.
		switch {
		case t.superuser && terminate:
			return 0, sqlstate.Errorf(sqlstate.CodeInsufficientPrivilege, "must be a superuser to terminate superuser process")
		case t.superuser:
			return 0, sqlstate.Errorf(sqlstate.CodeInsufficientPrivilege, "must be a superuser to cancel superuser query")
		case t.user != c.user && terminate:
			return 0, sqlstate.Errorf(sqlstate.CodeInsufficientPrivilege, "must be a member of the role whose process is being terminated or member of pg_signal_backend")
		case t.user != c.user:
			return 0, sqlstate.Errorf(sqlstate.CodeInsufficientPrivilege, "must be a member of the role whose query is being canceled or member of pg_signal_backend")
		}
	}
	if !terminate {
		t.cancelStatement()
		return pgeval.Signalled, nil
	}
	t.terminated.Store(true)
	t.shutdown()
	if wait <= 0 || t == c {
		return pgeval.Signalled, nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	select {
	case <-t.done:
		return pgeval.Signalled, nil
	case <-ctx.Done():
		return pgeval.NotTerminated, nil
	}
}

func errorResponse(e *sqlstate.Error) *pgproto3.ErrorResponse {
	sev := e.Severity
	if sev == "" {
		sev = "ERROR"
	}
	return &pgproto3.ErrorResponse{Severity: sev, SeverityUnlocalized: sev, Code: e.Code, Message: e.Message,
		Detail: e.Detail, Hint: e.Hint, Position: int32(e.Position), Where: e.Where,
		SchemaName: e.Schema, TableName: e.Table, ColumnName: e.Column, ConstraintName: e.Constraint}
}

func (c *conn) sendError(err error) {
	c.send(errorResponse(sqlstate.AsError(err)))
}

func (c *conn) sendNotices(ns []*sqlstate.Error) {
	for _, n := range ns {
		sev := n.Severity
		if sev == "" {
			sev = "NOTICE"
		}
		c.send(&pgproto3.NoticeResponse{Severity: sev, SeverityUnlocalized: sev, Code: n.Code, Message: n.Message, Detail: n.Detail, Hint: n.Hint})
	}
}

// sendParamChanges reports the settings that changed (all of them at
// startup); pg_stat_activity's application_name is one of them.
func (c *conn) sendParamChanges() {
	for _, p := range c.sess.ReportChanges() {
		c.send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
		if p[0] == "application_name" {
			c.mu.Lock()
			c.act.applicationName = p[1]
			c.mu.Unlock()
		}
	}
}

func (c *conn) String() string { return fmt.Sprintf("backend %d (%s@%s)", c.pid, c.user, c.database) }

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{srv: s, nc: nc, done: make(chan struct{}),
		stmtTimeout:     durationSetting{name: "statement_timeout"},
		idleTimeout:     durationSetting{name: "idle_session_timeout"},
		idleInTxTimeout: durationSetting{name: "idle_in_transaction_session_timeout"}}
}

// send encodes msg into the output buffer; flush writes it out.
func (c *conn) send(msg pgproto3.BackendMessage) {
	if c.encodeErr != nil {
		return
	}
	out, err := msg.Encode(c.out)
	if err != nil {
		c.encodeErr = err
		return
	}
	c.out = out
}

// flush writes the buffered messages to the client.
func (c *conn) flush() error {
	if err := c.encodeErr; err != nil {
		c.encodeErr, c.out = nil, c.out[:0]
		return fmt.Errorf("pgwire: encode a message: %w", err)
	}
	_, err := c.nc.Write(c.out)
	if cap(c.out) > maxKeptOut {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return err
}
