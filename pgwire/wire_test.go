package pgwire

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/jackc/pgx/v5/pgproto3"
)

// TestWire runs scripts of frontend messages against the server and
// prints the backend messages it answers, as JSON:
//
//	send
//	Query {"String": "SELECT 1"}
//	----
//
//	until
//	ReadyForQuery
//	----
//	{"Type":"RowDescription",...}
//	...
//
// `until` reads messages until it has seen the listed types in order
// (`sleep` waits for as long as its input says, such as 200ms);
// `until cellar-only` marks output that differs on PostgreSQL by design
// (its list of settings, say), which a run against PostgreSQL does not
// compare.
// With CELLAR_PGWIRE_AGAINST=host:port the same scripts run against
// another server (a PostgreSQL 15 that trusts user postgres from
// loopback), which is how their PostgreSQL behaviour was checked.
func TestWire(t *testing.T) {
	datadriven.Walk(t, "testdata/wire", func(t *testing.T, path string) {
		addr, user := os.Getenv("CELLAR_PGWIRE_AGAINST"), "postgres"
		if addr == "" {
			addr, user = startServer(t, Options{}), "cellar"
		}
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		fe := pgproto3.NewFrontend(nc, nc)
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
			Parameters: map[string]string{"user": user, "database": user, "DateStyle": "ISO, MDY", "TimeZone": "UTC"}})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := m.(*pgproto3.ErrorResponse); ok {
				t.Fatalf("startup: %s", e.Message)
			}
			if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "send":
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					name, body, _ := strings.Cut(line, " ")
					msg := frontendMessage(t, name)
					if body != "" {
						if err := json.Unmarshal([]byte(body), msg); err != nil {
							t.Fatalf("%s: %v", line, err)
						}
					}
					fe.Send(msg)
				}
				if err := fe.Flush(); err != nil {
					t.Fatal(err)
				}
				return ""
			case "sleep":
				// Lets a timeout run out between messages.
				d, err := time.ParseDuration(strings.TrimSpace(d.Input))
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(d)
				return ""
			case "until":
				want := strings.Fields(d.Input)
				var b strings.Builder
				nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				for len(want) > 0 {
					m, err := fe.Receive()
					if err != nil {
						t.Fatalf("waiting for %v: %v\nso far:\n%s", want, err, b.String())
					}
					typ := strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
					if typ == want[0] {
						want = want[1:]
					}
					if rd, ok := m.(*pgproto3.RowDescription); ok && d.HasArg("fields") {
						b.WriteString(describeFields(rd) + "\n")
						continue
					}
					b.WriteString(describe(m) + "\n")
				}
				if d.HasArg("cellar-only") && os.Getenv("CELLAR_PGWIRE_AGAINST") != "" {
					return d.Expected
				}
				return b.String()
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

func frontendMessage(t *testing.T, name string) pgproto3.FrontendMessage {
	switch name {
	case "Query":
		return &pgproto3.Query{}
	case "Parse":
		return &pgproto3.Parse{}
	case "Bind":
		return &pgproto3.Bind{}
	case "Describe":
		return &pgproto3.Describe{}
	case "Execute":
		return &pgproto3.Execute{}
	case "Sync":
		return &pgproto3.Sync{}
	case "Flush":
		return &pgproto3.Flush{}
	case "Close":
		return &pgproto3.Close{}
	}
	t.Fatalf("unknown message %s", name)
	return nil
}

// describeFields prints every field of a RowDescription (`until fields`):
// the table OID and attnum a column reads, its type's OID, size and
// modifier, and its format.
func describeFields(rd *pgproto3.RowDescription) string {
	var b strings.Builder
	b.WriteString("RowDescription")
	for _, f := range rd.Fields {
		fmt.Fprintf(&b, "\n  %s table=%d attnum=%d type=%d size=%d typmod=%d format=%d", f.Name, f.TableOID, f.TableAttributeNumber,
			f.DataTypeOID, f.DataTypeSize, f.TypeModifier, f.Format)
	}
	return b.String()
}

// describe prints a backend message compactly, leaving out what differs
// between servers without meaning (error file and line).
func describe(m pgproto3.BackendMessage) string {
	switch x := m.(type) {
	case *pgproto3.ErrorResponse:
		s := fmt.Sprintf("ErrorResponse %s %s %q", x.Severity, x.Code, x.Message)
		if x.Position != 0 {
			s += fmt.Sprintf(" position=%d", x.Position)
		}
		if x.Where != "" {
			s += fmt.Sprintf(" where=%q", x.Where)
		}
		return s
	case *pgproto3.NoticeResponse:
		return fmt.Sprintf("NoticeResponse %s %s %q", x.Severity, x.Code, x.Message)
	case *pgproto3.RowDescription:
		var cols []string
		for _, f := range x.Fields {
			cols = append(cols, fmt.Sprintf("%s:%d/%d", f.Name, f.DataTypeOID, f.Format))
		}
		return "RowDescription " + strings.Join(cols, " ")
	case *pgproto3.DataRow:
		var vals []string
		for _, v := range x.Values {
			if v == nil {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, fmt.Sprintf("%q", v))
			}
		}
		return "DataRow " + strings.Join(vals, " ")
	case *pgproto3.CommandComplete:
		return fmt.Sprintf("CommandComplete %q", x.CommandTag)
	case *pgproto3.ReadyForQuery:
		return fmt.Sprintf("ReadyForQuery %c", x.TxStatus)
	case *pgproto3.ParameterStatus:
		return fmt.Sprintf("ParameterStatus %s=%q", x.Name, x.Value)
	case *pgproto3.CopyData:
		return fmt.Sprintf("CopyData %q", x.Data)
	case *pgproto3.CopyOutResponse:
		return fmt.Sprintf("CopyOutResponse %d %v", x.OverallFormat, x.ColumnFormatCodes)
	case *pgproto3.ParameterDescription:
		return fmt.Sprintf("ParameterDescription %v", x.ParameterOIDs)
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
}
