package pgwire

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// TestStartupNegotiatesProtocol: a client asking for a newer minor
// version of protocol 3 (pgx's max_protocol_version=3.2), or for
// protocol options (_pq_.*), is told by NegotiateProtocolVersion what the
// server speaks and goes on in 3.0; another major version is refused.
// With CELLAR_PGWIRE_AGAINST it runs against PostgreSQL, as TestWire.
func TestStartupNegotiatesProtocol(t *testing.T) {
	addr, user := os.Getenv("CELLAR_PGWIRE_AGAINST"), "postgres"
	if addr == "" {
		addr, user = startServer(t, Options{}), "cellar"
	}
	for _, c := range []struct {
		name    string
		version uint32
		options map[string]string
		want    string
	}{
		{"3.0", 0x30000, nil, "AuthenticationOk ReadyForQuery I CommandComplete \"SELECT 1\""},
		{"3.2", 0x30002, nil, "NegotiateProtocolVersion 196608 [] AuthenticationOk ReadyForQuery I CommandComplete \"SELECT 1\""},
		{"3.9999 with options", 0x3270f, map[string]string{"_pq_.b": "1", "_pq_.a": "x"},
			"NegotiateProtocolVersion 196608 [_pq_.a _pq_.b] AuthenticationOk ReadyForQuery I CommandComplete \"SELECT 1\""},
		{"3.0 with an option", 0x30000, map[string]string{"_pq_.a": ""}, "NegotiateProtocolVersion 196608 [_pq_.a] AuthenticationOk ReadyForQuery I CommandComplete \"SELECT 1\""},
		{"4.0", 0x40000, nil, "ErrorResponse FATAL 0A000 \"unsupported frontend protocol 4.0: server supports 3.0 to 3.0\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			// Written by hand: pgproto3 encodes only the versions it speaks.
			pkt := []byte{0, 0, 0, 0}
			pkt = binary.BigEndian.AppendUint32(pkt, c.version)
			// Options in sorted order, so that the server's list is too.
			for _, kv := range [][2]string{{"user", user}, {"database", user}, {"_pq_.a", c.options["_pq_.a"]}, {"_pq_.b", c.options["_pq_.b"]}} {
				if _, ok := c.options[kv[0]]; ok || !strings.HasPrefix(kv[0], "_pq_.") {
					pkt = append(append(append(append(pkt, kv[0]...), 0), kv[1]...), 0)
				}
			}
			pkt = append(pkt, 0)
			binary.BigEndian.PutUint32(pkt, uint32(len(pkt)))
			if _, err := nc.Write(pkt); err != nil {
				t.Fatal(err)
			}
			fe := pgproto3.NewFrontend(nc, nc)
			var got []string
			for {
				m, err := fe.Receive()
				if err != nil {
					break // the server closed after a FATAL
				}
				switch x := m.(type) {
				case *pgproto3.NegotiateProtocolVersion:
					got = append(got, fmt.Sprintf("NegotiateProtocolVersion %d %v", x.NewestMinorProtocol, x.UnrecognizedOptions))
				case *pgproto3.AuthenticationOk, *pgproto3.ErrorResponse, *pgproto3.CommandComplete:
					got = append(got, describe(m))
				case *pgproto3.ReadyForQuery:
					got = append(got, describe(m))
					fe.Send(&pgproto3.Query{String: "SELECT 1"})
					fe.Flush()
				}
				if _, ok := m.(*pgproto3.CommandComplete); ok {
					break
				}
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Fatalf("got  %s\nwant %s", s, c.want)
			}
		})
	}
}
