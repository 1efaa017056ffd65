package pgwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/cellardb/cellar/query"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// loop serves messages until the client leaves or a fatal error.
func (c *conn) loop() {
	for {
		if c.terminated.Load() {
			if !c.terminationSent {
				c.reportFatal(fatal{errTerminated()})
			}
			return
		}
		c.setIdleDeadline()
		msg, err := c.receive()
		if err != nil {
			c.receiveFailed(err)
			return
		}
		c.mu.Lock()
		if c.deadlineSet {
			c.nc.SetReadDeadline(time.Time{}) // a statement may read (COPY) for long
			c.deadlineSet = false
		}
		c.mu.Unlock()
		if !c.stmtDeadline.IsZero() && !time.Now().Before(c.stmtDeadline) {
			// statement_timeout ran out between the messages of an
			// extended-protocol statement. PostgreSQL notices it when
			// the next message arrives, which it then drops.
			c.stmtDeadline = time.Time{}
			timedOut := sqlstate.Errorf(sqlstate.CodeQueryCanceled, "canceling statement due to statement timeout")
			switch msg.(type) {
			case *pgproto3.Terminate, *pgproto3.Sync:
				c.extended(timedOut) // the Sync ends the skipping below
			case *pgproto3.Query:
				c.sendError(timedOut)
				c.sess.Failed()
				c.send(&pgproto3.ReadyForQuery{TxStatus: byte(c.sess.TxStatus())})
				if c.flush() != nil {
					return
				}
				continue
			default:
				c.extended(timedOut)
				if c.flush() != nil {
					return
				}
				continue
			}
		}
		if c.skipping {
			switch msg.(type) {
			case *pgproto3.Sync, *pgproto3.Terminate:
			default:
				continue // after an error, everything up to Sync
			}
		}
		switch msg.(type) {
		case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute:
			c.armStatementTimeout()
		}
		flush := false
		switch m := msg.(type) {
		case *pgproto3.Query:
			c.stmtDeadline = time.Time{}
			c.simpleQuery(m.String)
			flush = true
		case *pgproto3.Parse:
			flush = c.extended(c.parse(m))
		case *pgproto3.Bind:
			flush = c.extended(c.bind(m))
		case *pgproto3.Describe:
			flush = c.extended(c.describe(m))
		case *pgproto3.Execute:
			flush = c.extended(c.execute(m))
			c.stmtDeadline = time.Time{}
		case *pgproto3.Close:
			flush = c.extended(c.close(m))
		case *pgproto3.Sync:
			c.skipping = false
			c.stmtDeadline = time.Time{}
			if c.sess.TxStatus() == query.TxIdle {
				// The implicit transaction ends: its portals go.
				clear(c.portals)
			}
			c.send(&pgproto3.ReadyForQuery{TxStatus: byte(c.sess.TxStatus())})
			flush = true
		case *pgproto3.Flush:
			flush = true
		case *pgproto3.Terminate:
			return
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// Outside COPY these are ignored, as PostgreSQL does.
		case *pgproto3.FunctionCall:
			flush = c.extended(sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "the function call protocol is not supported"))
		default:
			c.reportFatal(fatalf(sqlstate.CodeProtocolViolation, "unexpected message %T", msg))
			return
		}
		if flush || len(c.out) >= flushThreshold {
			if err := c.flush(); err != nil {
				return
			}
		}
	}
}

// setIdleDeadline arms the idle timeouts: idle_session_timeout outside a
// transaction, idle_in_transaction_session_timeout inside one.
func (c *conn) setIdleDeadline() {
	d := c.srv.opts.IdleSessionTimeout
	set := &c.idleTimeout
	if c.sess.TxStatus() != query.TxIdle {
		d, set = 0, &c.idleInTxTimeout
	}
	if s := set.get(c.sess); s > 0 {
		d = s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing.Load() {
		// The server drains: an idle connection ends now.
		c.nc.SetReadDeadline(time.Now())
		c.deadlineSet = true
	} else if d > 0 {
		c.nc.SetReadDeadline(time.Now().Add(d))
		c.deadlineSet = true
	} else if c.deadlineSet {
		// Clearing a deadline that is not set still costs a timer update.
		c.nc.SetReadDeadline(time.Time{})
		c.deadlineSet = false
	}
}

func (c *conn) receiveFailed(err error) {
	if c.terminationSent {
		return
	}
	if c.closing.Load() {
		c.reportFatal(fatal{errTerminated()})
		return
	}
	var ne net.Error
	var f fatal
	switch {
	case errors.As(err, &f):
		c.reportFatal(err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
	case errors.As(err, &ne) && ne.Timeout():
		if c.sess.TxStatus() == query.TxIdle {
			c.reportFatal(fatalf(sqlstate.CodeIdleSessionTimeout, "terminating connection due to idle-session timeout"))
		} else {
			c.reportFatal(fatalf("25P03", "terminating connection due to idle-in-transaction timeout"))
		}
	case strings.Contains(err.Error(), "exceeds max length"):
		c.reportFatal(fatalf(sqlstate.CodeProgramLimitExceeded, "message too large: %v (at most %d bytes)", err, c.srv.opts.MaxMessageSize))
	default:
		c.reportFatal(fatalf(sqlstate.CodeProtocolViolation, "invalid message: %v", err))
	}
}

// extended sends an error of an extended-protocol message and skips to
// the next Sync. It reports whether it sent one, to be flushed at once
// as PostgreSQL does: a client that sent Flush, not Sync (asyncpg's
// Parse, Describe, Flush), waits for it, and its Flush is skipped.
func (c *conn) extended(err error) bool {
	if err == nil {
		return false
	}
	c.sendError(err)
	c.skipping = true
	c.sess.Failed()
	return true
}

// run executes a statement under statement_timeout and CancelRequest.
// prepareTimeout bounds planning one statement (schema lookups).
const prepareTimeout = time.Minute

// durationSetting is a duration setting of the session, parsed again
// only when its text changes: the loop consults them for every message.
type durationSetting struct {
	name, text string
	d          time.Duration
}

func (s *durationSetting) get(sess Session) time.Duration {
	v, _ := sess.Setting(s.name)
	if v != s.text {
		s.text, s.d = v, 0
		if d, err := query.ParseDuration(v); err == nil {
			s.d = d
		}
	}
	return s.d
}

// armStatementTimeout starts statement_timeout at an extended-protocol
// statement's first message, as PostgreSQL does; an Execute that
// completes, or Sync, stops it.
func (c *conn) armStatementTimeout() {
	if c.stmtDeadline.IsZero() {
		if d := c.stmtTimeout.get(c.sess); d > 0 {
			c.stmtDeadline = time.Now().Add(d)
		}
	}
}

func (c *conn) run(st *query.Statement, args []any) (res *query.Result, err error) {
	var ctx context.Context
	var cancel context.CancelFunc
	if !c.stmtDeadline.IsZero() {
		ctx, cancel = context.WithDeadline(context.Background(), c.stmtDeadline)
	} else if d := c.stmtTimeout.get(c.sess); d > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), d)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	c.setCancel(cancel)
	c.started(st.SQL)
	defer func() { c.setCancel(nil); cancel(); c.finished() }()
	if done := c.srv.opts.StatementDone; done != nil {
		start := time.Now()
		defer func() { done(st.Type(), time.Since(start), err) }()
	}
	res, err = c.sess.Execute(ctx, st, args)
	if c.terminated.Load() {
		// pg_terminate_backend: the statement ends with the session.
		c.terminationSent = true
		return nil, errTerminated()
	}
	if err == nil && ctx.Err() != nil && len(res.Rows) > 0 {
		// Canceled while it finished: the rows are still good.
		return res, nil
	}
	return res, err
}

func (c *conn) simpleQuery(sql string) {
	defer func() {
		if !c.terminationSent {
			c.send(&pgproto3.ReadyForQuery{TxStatus: byte(c.sess.TxStatus())})
		}
	}()
	stmts, err := c.sess.Parse(sql)
	if err != nil {
		c.sendError(err)
		c.sess.Failed()
		return
	}
	if len(stmts) == 0 {
		c.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for _, st := range stmts {
		if len(st.Params) > 0 {
			c.sendError(&sqlstate.Error{Code: sqlstate.CodeUndefinedParameter, Message: "there is no parameter $1", Position: st.ParamPosition})
			c.sess.Failed()
			return
		}
		res, err := c.run(st, nil)
		if err != nil {
			if res != nil && res.Copy == nil && res.CopyIn == nil {
				// The rows made before the error go first, as
				// PostgreSQL streams them.
				c.send(rowDescription(res.Columns, nil))
				if err := c.sendRows(res, 0, len(res.Rows), nil); err != nil {
					return
				}
			}
			c.sendError(err)
			return
		}
		c.sendNotices(res.Notices)
		if res.CopyIn != nil {
			tag, err := c.receiveCopyIn(res.CopyIn)
			if err != nil {
				c.sendError(err)
				c.sess.Failed()
				return
			}
			res.Tag = tag
		} else if res.Copy != nil {
			if err := c.sendCopyOut(res); err != nil {
				c.sendError(err)
				return
			}
		} else if res.Columns != nil {
			c.send(rowDescription(res.Columns, nil))
			if err := c.sendRows(res, 0, len(res.Rows), nil); err != nil {
				c.sendError(err)
				return
			}
		}
		c.applyEffects(res)
		c.send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag)})
		c.sendParamChanges()
	}
}

// applyEffects carries out what a statement asks of the wire layer.
func (c *conn) applyEffects(res *query.Result) {
	switch {
	case res.DiscardAll:
		c.stmts, c.portals = map[string]*prepared{}, map[string]*portal{}
	case res.DeallocateAll:
		c.stmts = map[string]*prepared{}
	case res.Deallocate != "":
		delete(c.stmts, res.Deallocate)
	}
}

// typeSize is a type's typlen, which RowDescription carries.
func typeSize(oid uint32) int16 {
	switch oid {
	case pgtypes.OIDBool, pgeval.OIDChar:
		return 1
	case pgtypes.OIDInt2:
		return 2
	case pgtypes.OIDInt4, pgtypes.OIDFloat4, pgtypes.OIDDate, pgeval.OIDOid, pgeval.OIDXid, pgeval.OIDRegproc, pgeval.OIDRegclass,
		pgeval.OIDRegtype, pgeval.OIDRegnamespace, pgeval.OIDRegrole:
		return 4
	case pgtypes.OIDInt8, pgtypes.OIDFloat8, pgtypes.OIDTimestamp, pgtypes.OIDTimestamptz, pgeval.OIDTime:
		return 8
	case pgtypes.OIDUUID, pgtypes.OIDInterval:
		return 16
	case pgtypes.OIDName:
		return 64
	}
	return -1
}

// rowDescription describes result columns as PostgreSQL does: a column
// that reads a table's (or a catalog relation's) column as it is names
// that table's OID and the column's attnum, and every column carries its
// type modifier (varchar(12): 16) or -1.
func rowDescription(cols []pgtypes.Column, formats []int16) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, len(cols))}
	for i, col := range cols {
		var f int16
		if i < len(formats) {
			f = formats[i]
		}
		rd.Fields[i] = pgproto3.FieldDescription{Name: []byte(col.Name), TableOID: col.TableOID(), TableAttributeNumber: uint16(col.Attnum()),
			DataTypeOID: col.OID, DataTypeSize: typeSize(col.OID), TypeModifier: col.Typmod(), Format: f}
	}
	return rd
}

// sendRows sends rows [from, to) of a result in the given formats. Each
// DataRow is encoded straight into the output buffer: a value's length
// goes in front of it once its encoding is done.
func (c *conn) sendRows(res *query.Result, from, to int, formats []int16) error {
	style := sessionStyle(c.sess)
	for _, row := range res.Rows[from:to] {
		if c.encodeErr != nil {
			break
		}
		start := len(c.out)
		c.out = append(c.out, 'D', 0, 0, 0, 0)
		c.out = binary.BigEndian.AppendUint16(c.out, uint16(len(row)))
		for i, v := range row {
			if v == nil {
				c.out = binary.BigEndian.AppendUint32(c.out, math.MaxUint32) // -1: NULL
				continue
			}
			at := len(c.out)
			c.out = append(c.out, 0, 0, 0, 0)
			oid := res.Columns[i].OID
			if i < len(formats) && formats[i] == 1 {
				c.out = appendBinary(c.out, oid, v)
			} else {
				c.out = appendText(c.out, oid, v, style)
			}
			binary.BigEndian.PutUint32(c.out[at:], uint32(len(c.out)-at-4))
		}
		if n := len(c.out) - start - 1; n > math.MaxInt32 {
			c.out = c.out[:start]
			c.encodeErr = fmt.Errorf("a row of %d bytes is too large for a DataRow message", n)
		} else {
			binary.BigEndian.PutUint32(c.out[start+1:], uint32(n))
		}
		if len(c.out) >= flushThreshold {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *conn) parse(m *pgproto3.Parse) error {
	if m.Name != "" {
		if _, ok := c.stmts[m.Name]; ok {
			return sqlstate.Errorf(sqlstate.CodeDuplicatePreparedStmt, "prepared statement %q already exists", m.Name)
		}
	}
	// Planning a statement reads table schemas; a cancel request stops it.
	ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
	c.setCancel(cancel)
	st, err := c.sess.Prepare(ctx, m.Query, m.ParameterOIDs)
	c.setCancel(nil)
	cancel()
	if err != nil {
		return err
	}
	if st != nil {
		for _, oid := range st.Params {
			if !paramSupported(oid) {
				return sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "parameters of type %s (%d) are not supported", pgeval.TypeName(oid), oid)
			}
		}
	}
	c.stmts[m.Name] = &prepared{st: st, sql: m.Query, at: c.srv.opts.Clock()}
	c.send(&pgproto3.ParseComplete{})
	return nil
}

// formatFor returns the format code of item i: none given means text, one
// means all.
func formatFor(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return 0
	case 1:
		return codes[0]
	}
	return codes[i]
}

func (c *conn) bind(m *pgproto3.Bind) error {
	p, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return sqlstate.Errorf(sqlstate.CodeInvalidSQLStatementNam, "prepared statement %q does not exist", m.PreparedStatement)
	}
	if m.DestinationPortal != "" {
		_, exists := c.portals[m.DestinationPortal]
		if _, cursor := c.sess.CursorColumns(m.DestinationPortal); exists || cursor {
			return sqlstate.Errorf("42P03", "cursor %q already exists", m.DestinationPortal)
		}
	}
	var params []uint32
	var cols []pgtypes.Column
	if p.st != nil {
		params, cols = p.st.Params, c.sess.BoundColumns(p.st)
	}
	if len(m.Parameters) != len(params) {
		return sqlstate.Errorf(sqlstate.CodeProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d", len(m.Parameters), m.PreparedStatement, len(params))
	}
	if n := len(m.ParameterFormatCodes); n > 1 && n != len(params) {
		return sqlstate.Errorf(sqlstate.CodeProtocolViolation, "bind message has %d parameter formats but %d parameters", n, len(params))
	}
	// The unnamed portal's slices are reused: the previous unnamed
	// portal's statement has run (query.Session keeps no args past
	// Execute), and a Bind replaces it.
	var args []any
	var formats []int16
	if m.DestinationPortal == "" {
		args, formats = c.unnamed.args[:0], c.unnamed.formats[:0]
	}
	args = append(args, make([]any, len(params))...)
	var style pgtypes.Style
	haveStyle := false
	for i, raw := range m.Parameters {
		if raw == nil {
			continue
		}
		var err error
		switch formatFor(m.ParameterFormatCodes, i) {
		case 0:
			if !haveStyle {
				style, haveStyle = sessionStyle(c.sess), true
			}
			args[i], err = decodeText(params[i], string(raw), style)
		case 1:
			args[i], err = decodeBinaryParam(params[i], raw)
		default:
			err = sqlstate.Errorf(sqlstate.CodeProtocolViolation, "unsupported format code %d", formatFor(m.ParameterFormatCodes, i))
		}
		if err != nil {
			// PostgreSQL names the parameter in the error's context, and
			// shows no text value (log_parameter_max_length_on_error 0).
			e := *sqlstate.AsError(err)
			portal := "unnamed portal"
			if m.DestinationPortal != "" {
				portal = fmt.Sprintf("portal %q", m.DestinationPortal)
			}
			e.Where = fmt.Sprintf("%s parameter $%d", portal, i+1)
			if formatFor(m.ParameterFormatCodes, i) == 0 {
				e.Where += " = '...'"
			}
			return &e
		}
	}
	if n := len(m.ResultFormatCodes); n > 1 && n != len(cols) {
		return sqlstate.Errorf(sqlstate.CodeProtocolViolation, "bind message has %d result formats but query has %d columns", n, len(cols))
	}
	for i := range cols {
		f := formatFor(m.ResultFormatCodes, i)
		if f != 0 && f != 1 {
			return sqlstate.Errorf(sqlstate.CodeProtocolViolation, "unsupported format code %d", f)
		}
		formats = append(formats, f)
	}
	if formats == nil {
		formats = []int16{}
	}
	pt := &portal{}
	if m.DestinationPortal == "" {
		pt = &c.unnamed
	}
	*pt = portal{st: p.st, prep: p, args: args, cols: cols, formats: formats}
	c.portals[m.DestinationPortal] = pt
	c.send(&pgproto3.BindComplete{})
	return nil
}

func (c *conn) describe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		p, ok := c.stmts[m.Name]
		if !ok {
			return sqlstate.Errorf(sqlstate.CodeInvalidSQLStatementNam, "prepared statement %q does not exist", m.Name)
		}
		if p.st == nil {
			c.send(&pgproto3.ParameterDescription{ParameterOIDs: []uint32{}})
			c.send(&pgproto3.NoData{})
			return nil
		}
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: p.st.Params})
		if p.st.Columns == nil {
			c.send(&pgproto3.NoData{})
		} else {
			c.send(p.rowDescription(p.st.Columns, nil))
		}
	case 'P':
		p, ok := c.portals[m.Name]
		if !ok {
			// A cursor made by DECLARE is a portal too (psycopg 3
			// describes its server-side cursors this way).
			if cols, ok := c.sess.CursorColumns(m.Name); ok {
				c.send(rowDescription(cols, nil))
				return nil
			}
			return sqlstate.Errorf(sqlstate.CodeInvalidCursorName, "portal %q does not exist", m.Name)
		}
		if p.cols == nil {
			c.send(&pgproto3.NoData{})
		} else {
			c.send(p.prep.rowDescription(p.cols, p.formats))
		}
	default:
		return sqlstate.Errorf(sqlstate.CodeProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
	}
	return nil
}

func (c *conn) execute(m *pgproto3.Execute) error {
	p, ok := c.portals[m.Portal]
	if !ok {
		return sqlstate.Errorf(sqlstate.CodeInvalidCursorName, "portal %q does not exist", m.Portal)
	}
	if p.st == nil {
		c.send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	if p.res == nil {
		res, err := c.run(p.st, p.args)
		if err != nil {
			if res == nil || res.Copy != nil || res.CopyIn != nil {
				return err
			}
			// The rows made before the error are sent first, as
			// PostgreSQL streams them; the error comes after them.
			p.err = err
		}
		p.res = res
		c.sendNotices(res.Notices)
		c.applyEffects(res)
		if res.CopyIn != nil {
			tag, err := c.receiveCopyIn(res.CopyIn)
			if err != nil {
				return err
			}
			c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
			return nil
		}
		if res.Copy != nil {
			if err := c.sendCopyOut(res); err != nil {
				return err
			}
			c.send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag)})
			return nil
		}
	}
	end := len(p.res.Rows)
	if m.MaxRows > 0 && p.pos+int(m.MaxRows) < end {
		end = p.pos + int(m.MaxRows)
	}
	if err := c.sendRows(p.res, p.pos, end, p.formats); err != nil {
		return err
	}
	sent := end - p.pos
	p.pos = end
	// A row limit that the rows before an error fill suspends the
	// portal: PostgreSQL would not have run into the error yet.
	if p.pos < len(p.res.Rows) || p.err != nil && m.MaxRows > 0 && sent == int(m.MaxRows) {
		c.send(&pgproto3.PortalSuspended{})
		return nil
	}
	if p.err != nil {
		return p.err
	}
	tag := append(c.tagBuf[:0], p.res.Tag...)
	if strings.HasPrefix(p.res.Tag, "SELECT ") {
		tag = strconv.AppendInt(append(tag[:0], "SELECT "...), int64(sent), 10)
	}
	c.tagBuf = tag
	c.cmdComplete.CommandTag = tag
	c.send(&c.cmdComplete)
	c.sendParamChanges()
	return nil
}

func (c *conn) close(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		delete(c.stmts, m.Name)
	case 'P':
		delete(c.portals, m.Name)
	default:
		return sqlstate.Errorf(sqlstate.CodeProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
	}
	c.send(&pgproto3.CloseComplete{})
	return nil
}
