package pgwire

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fuzzConn feeds data to a fresh connection as if a client sent it and
// then hung up. The server must neither
// panic nor hang, and its reads are bounded by the startup-packet and
// message limits.
func fuzzConn(t *testing.T, opts Options, data []byte) {
	if opts.NewSession == nil {
		opts.NewSession = newSession
	}
	opts.AuthTimeout = time.Second
	opts.MaxMessageSize = 1 << 16
	s := New(opts)
	s.secret = []byte("fuzz")
	client, server := net.Pipe()
	c := newConn(s, server)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.serve()
	}()
	// The client sends the data and hangs up; what the server answers is
	// read and dropped. The server must finish either way.
	go io.Copy(io.Discard, client)
	client.SetWriteDeadline(time.Now().Add(time.Second))
	client.Write(data)
	client.Close()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the connection did not end")
	}
}

func startupBytes(params map[string]string) []byte {
	b, _ := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: params}).Encode(nil)
	return b
}

func FuzzConnection(f *testing.F) {
	start := startupBytes(map[string]string{"user": "cellar", "database": "cellar"})
	q, _ := (&pgproto3.Query{String: "SELECT 1"}).Encode(nil)
	parse, _ := (&pgproto3.Parse{Query: "SELECT $1::int4"}).Encode(nil)
	bind, _ := (&pgproto3.Bind{Parameters: [][]byte{{0, 0, 0, 1}}, ParameterFormatCodes: []int16{1}}).Encode(nil)
	exec, _ := (&pgproto3.Execute{}).Encode(nil)
	sync, _ := (&pgproto3.Sync{}).Encode(nil)
	f.Add(append(append([]byte{}, start...), q...))
	f.Add(append(append(append(append(append([]byte{}, start...), parse...), bind...), exec...), sync...))
	f.Add([]byte{0, 0, 0, 8, 4, 210, 22, 47}) // SSLRequest
	f.Add(binary.BigEndian.AppendUint32([]byte{0, 0, 0, 16, 4, 210, 22, 46, 0, 0, 0, 7}, 7))
	f.Add([]byte{0, 0, 0, 9, 0, 2, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzConn(t, Options{}, data)
	})
}

// FuzzSCRAM drives the SCRAM exchange with arbitrary client messages.
func FuzzSCRAM(f *testing.F) {
	alice, err := NewUser("alice", "pw", false, false)
	if err != nil {
		f.Fatal(err)
	}
	users := staticUsers{"alice": alice}
	start := startupBytes(map[string]string{"user": "alice", "database": "cellar"})
	first, _ := (&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abcdefghijklmnop")}).Encode(nil)
	f.Add(append(append([]byte{}, start...), first...))
	f.Add(append(append([]byte{}, start...), 'p', 0, 0, 0, 8, 'x', 'y', 'z', 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzConn(t, Options{Users: users, Rules: []Rule{{Source: "all", Method: MethodSCRAM}}}, data)
	})
}

type staticUsers map[string]*User

func (s staticUsers) Lookup(_ context.Context, name string) (*User, error) { return s[name], nil }
