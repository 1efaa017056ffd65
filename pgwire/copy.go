package pgwire

import (
	"context"
	"encoding/binary"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/cellardb/cellar/query"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// sendCopyOut writes a result as COPY data: CopyOutResponse, one CopyData
// per row (binary adds its header and trailer), CopyDone.
func (c *conn) sendCopyOut(res *query.Result) error {
	opts := res.Copy
	format := int16(0)
	if opts.Format == "binary" {
		format = 1
	}
	codes := make([]uint16, len(res.Columns))
	for i := range codes {
		codes[i] = uint16(format)
	}
	c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: byte(format), ColumnFormatCodes: codes})
	// The binary header goes out with the first row, as PostgreSQL sends it.
	var pendingHeader []byte
	if opts.Format == "binary" {
		pendingHeader = append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)
	}
	if opts.Header {
		names := make([]string, len(res.Columns))
		for i, col := range res.Columns {
			names[i] = csvField(col.Name, opts, false)
		}
		c.be.Send(&pgproto3.CopyData{Data: []byte(strings.Join(names, opts.Delimiter) + "\n")})
	}
	for _, row := range res.Rows {
		var line []byte
		switch opts.Format {
		case "binary":
			line = binary.BigEndian.AppendUint16(pendingHeader, uint16(len(row)))
			pendingHeader = nil
			for i, v := range row {
				if v == nil {
					line = binary.BigEndian.AppendUint32(line, 0xffffffff)
					continue
				}
				b, err := encodeBinary(res.Columns[i].OID, v)
				if err != nil {
					return sqlstate.Errorf(sqlstate.CodeInternal, "COPY column %q: %v", res.Columns[i].Name, err)
				}
				line = binary.BigEndian.AppendUint32(line, uint32(len(b)))
				line = append(line, b...)
			}
		default:
			fields := make([]string, len(row))
			for i, v := range row {
				switch {
				case v == nil:
					fields[i] = opts.Null
				case opts.Format == "csv":
					fields[i] = csvField(pgtypes.FormatText(res.Columns[i].OID, v), opts, true)
				default:
					fields[i] = textField(pgtypes.FormatText(res.Columns[i].OID, v), opts.Delimiter)
				}
			}
			line = []byte(strings.Join(fields, opts.Delimiter) + "\n")
		}
		c.pending += len(line)
		c.be.Send(&pgproto3.CopyData{Data: line})
		if c.pending >= flushThreshold {
			if err := c.be.Flush(); err != nil {
				return err
			}
			c.pending = 0
		}
	}
	if opts.Format == "binary" {
		c.be.Send(&pgproto3.CopyData{Data: append(pendingHeader, 0xff, 0xff)})
	}
	c.be.Send(&pgproto3.CopyDone{})
	return nil
}

// textField escapes a value for COPY's text format.
func textField(s, delim string) string {
	if !strings.ContainsAny(s, "\\\n\r\t"+delim) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case string(r) == delim:
			b.WriteString(`\` + delim)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// csvField quotes a CSV value when it must be: it holds the delimiter,
// the quote, a line break, or it is empty (which would read as NULL).
func csvField(s string, opts *query.CopyOut, value bool) string {
	if (value && s == "") || strings.ContainsAny(s, opts.Delimiter+opts.Quote+"\r\n") || (value && s == opts.Null) {
		return opts.Quote + strings.ReplaceAll(s, opts.Quote, opts.Quote+opts.Quote) + opts.Quote
	}
	return s
}

// receiveCopyIn runs COPY FROM STDIN: CopyInResponse, then the client's
// CopyData until CopyDone (the statement's tag) or CopyFail. After an
// error the rest of the data is read and dropped, as PostgreSQL does, so
// the connection stays in step.
func (c *conn) receiveCopyIn(in *query.CopyIn) (string, error) {
	c.be.Send(&pgproto3.CopyInResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, in.Columns)})
	if err := c.be.Flush(); err != nil {
		in.Abort()
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.setCancel(cancel)
	defer func() { c.setCancel(nil); cancel() }()
	var failed error
	for {
		msg, err := c.be.Receive()
		if err != nil {
			in.Abort()
			return "", fatalf(sqlstate.CodeProtocolViolation, "connection lost during COPY from stdin: %v", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if failed == nil {
				failed = in.Data(ctx, m.Data)
			}
		case *pgproto3.CopyDone:
			if failed != nil {
				in.Abort()
				return "", failed
			}
			return in.Done(ctx)
		case *pgproto3.CopyFail:
			in.Abort()
			return "", sqlstate.Errorf(sqlstate.CodeQueryCanceled, "COPY from stdin failed: %s", m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
			// Ignored during COPY, as in PostgreSQL.
		default:
			in.Abort()
			return "", sqlstate.Errorf(sqlstate.CodeProtocolViolation, "unexpected message type %T during COPY from stdin", msg)
		}
	}
}
