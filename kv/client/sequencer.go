package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Sequencers (Chubby paper, section 2.4). The active master holds the
// master lock; a master that was paused past its lease may wake up and
// act after another master took the lock over. So the master sends its
// lock's sequencer, as metadata, on every call that changes what the
// cluster serves or records: its admin RPCs to the tablet servers and its
// METADATA mutations. The tablet servers refuse a sequencer the lock has
// moved past (kv/tabletserver's fence.go).
//
// kv does not import the lock service's types, so the sequencer is
// carried in its own form here; ops/coordlock converts it.

// SequencerKey is the metadata key of a call's sequencer.
const SequencerKey = "cellar-sequencer"

// Sequencer describes an exclusive lock just after it was taken.
type Sequencer struct {
	// Path is the lock's file in the lock service.
	Path string
	// Instance tells apart files of the same name (a file deleted and
	// made again); Generation grows each time the lock is taken.
	Instance, Generation uint64
	// LockDelay is the holder's lock-delay: after the holder fails, the
	// lock service lets no one take the lock for this long. A server may
	// trust a sequencer it checked for less than this (fence.go).
	LockDelay time.Duration
}

// Newer reports whether s is of a later hold of the lock than o: a later
// file, or a later generation of the same file.
func (s Sequencer) Newer(o Sequencer) bool {
	if s.Instance != o.Instance {
		return s.Instance > o.Instance
	}
	return s.Generation > o.Generation
}

// String encodes s for metadata: seq:<instance>:<generation>:<lock-delay
// in ms>:<path, base64url>.
func (s Sequencer) String() string {
	return fmt.Sprintf("seq:%d:%d:%d:%s", s.Instance, s.Generation, s.LockDelay.Milliseconds(),
		base64.RawURLEncoding.EncodeToString([]byte(s.Path)))
}

// ParseSequencer decodes Sequencer.String.
func ParseSequencer(v string) (Sequencer, error) {
	f := strings.SplitN(v, ":", 5)
	if len(f) != 5 || f[0] != "seq" {
		return Sequencer{}, fmt.Errorf("malformed sequencer %q", v)
	}
	inst, err1 := strconv.ParseUint(f[1], 10, 64)
	gen, err2 := strconv.ParseUint(f[2], 10, 64)
	delay, err3 := strconv.ParseInt(f[3], 10, 64)
	path, err4 := base64.RawURLEncoding.DecodeString(f[4])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || delay < 0 || delay > int64(time.Hour/time.Millisecond) || len(path) == 0 {
		return Sequencer{}, fmt.Errorf("malformed sequencer %q", v)
	}
	return Sequencer{Path: string(path), Instance: inst, Generation: gen, LockDelay: time.Duration(delay) * time.Millisecond}, nil
}

// WithSequencer adds seq to ctx's outgoing metadata.
func WithSequencer(ctx context.Context, seq Sequencer) context.Context {
	return metadata.AppendToOutgoingContext(ctx, SequencerKey, seq.String())
}

// SequencerDialOptions make every call on a connection carry the
// sequencer seq returns, if it returns one: the master's connections to
// the tablet servers, and its kv client's.
func SequencerDialOptions(seq func() (Sequencer, bool)) []grpc.DialOption {
	add := func(ctx context.Context) context.Context {
		if s, ok := seq(); ok {
			return WithSequencer(ctx, s)
		}
		return ctx
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(add(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(add(ctx), desc, cc, method, opts...)
		}),
	}
}

// SequencerFrom returns the sequencer a call carries, and whether it
// carries one; a malformed one is an error.
func SequencerFrom(ctx context.Context) (Sequencer, bool, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vs := md.Get(SequencerKey)
	switch len(vs) {
	case 0:
		return Sequencer{}, false, nil
	case 1:
		s, err := ParseSequencer(vs[0])
		return s, err == nil, err
	}
	return Sequencer{}, false, fmt.Errorf("%d sequencers on one call", len(vs))
}
