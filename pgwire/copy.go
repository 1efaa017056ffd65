package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/cellardb/cellar/query"
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
	c.send(&pgproto3.CopyOutResponse{OverallFormat: byte(format), ColumnFormatCodes: codes})
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
		c.send(&pgproto3.CopyData{Data: []byte(strings.Join(names, opts.Delimiter) + "\n")})
	}
	style := sessionStyle(c.sess)
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
					fields[i] = csvField(string(encodeText(res.Columns[i].OID, v, style)), opts, true)
				default:
					fields[i] = textField(string(encodeText(res.Columns[i].OID, v, style)), opts.Delimiter)
				}
			}
			line = []byte(strings.Join(fields, opts.Delimiter) + "\n")
		}
		c.send(&pgproto3.CopyData{Data: line})
		if len(c.out) >= flushThreshold {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	if opts.Format == "binary" {
		c.send(&pgproto3.CopyData{Data: append(pendingHeader, 0xff, 0xff)})
	}
	c.send(&pgproto3.CopyDone{})
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
	format := uint16(0)
	if in.Format == "binary" {
		format = 1
	}
	codes := make([]uint16, in.Columns)
	for i := range codes {
		codes[i] = format
	}
	c.send(&pgproto3.CopyInResponse{OverallFormat: byte(format), ColumnFormatCodes: codes})
	var bin *binaryCopy
	if in.Format == "binary" {
		bin = &binaryCopy{in: in}
	}
	if err := c.flush(); err != nil {
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
			switch {
			case failed != nil:
			case bin != nil:
				failed = bin.data(ctx, m.Data)
			default:
				failed = in.Data(ctx, m.Data)
			}
		case *pgproto3.CopyDone:
			if failed == nil && bin != nil && len(bin.pending) > 0 {
				// The trailer is optional, as in PostgreSQL; a partial
				// tuple is not.
				failed = sqlstate.Errorf("22P04", "unexpected EOF in COPY data")
			}
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

// binaryCopy reads COPY's binary format: the signature PGCOPY\n\377\r\n\0,
// flags and a header extension, then tuples (a field count, and each
// field's length, -1 for NULL, and bytes in the type's binary form),
// and the trailer, a field count of -1.
type binaryCopy struct {
	in      *query.CopyIn
	pending []byte
	header  bool
	ended   bool
}

var copySignature = []byte("PGCOPY\n\xff\r\n\x00")

func (b *binaryCopy) data(ctx context.Context, p []byte) error {
	b.pending = append(b.pending, p...)
	for {
		if b.ended {
			if len(b.pending) > 0 {
				return sqlstate.Errorf("22P04", "COPY binary data after the trailer")
			}
			return nil
		}
		if !b.header {
			if len(b.pending) < 19 {
				return nil
			}
			if !bytes.Equal(b.pending[:11], copySignature) {
				return sqlstate.Errorf("22P04", "COPY file signature not recognized")
			}
			ext := int(binary.BigEndian.Uint32(b.pending[15:19]))
			if len(b.pending) < 19+ext {
				return nil
			}
			b.pending, b.header = b.pending[19+ext:], true
			continue
		}
		if len(b.pending) < 2 {
			return nil
		}
		n := int(int16(binary.BigEndian.Uint16(b.pending)))
		if n == -1 {
			b.pending, b.ended = b.pending[2:], true
			continue
		}
		// A whole tuple must be here before it is decoded.
		off, vals := 2, make([]any, 0, n)
		for i := 0; i < n; i++ {
			if len(b.pending) < off+4 {
				return nil
			}
			l := int(int32(binary.BigEndian.Uint32(b.pending[off:])))
			off += 4
			if l < 0 {
				vals = append(vals, nil)
				continue
			}
			if len(b.pending) < off+l {
				return nil
			}
			vals = append(vals, b.pending[off:off+l])
			off += l
		}
		if n != len(b.in.ColumnOIDs) {
			return sqlstate.Errorf("22P04", "row field count is %d, expected %d", n, len(b.in.ColumnOIDs))
		}
		for i, v := range vals {
			if v == nil {
				continue
			}
			d, err := decodeBinary(b.in.ColumnOIDs[i], bytes.Clone(v.([]byte)))
			if err != nil {
				return err
			}
			vals[i] = d
		}
		b.pending = b.pending[off:]
		if err := b.in.Row(ctx, vals); err != nil {
			return err
		}
	}
}
