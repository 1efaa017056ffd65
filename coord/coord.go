package coord

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every name.
const Prefix = "/ls/"

// LocalCell names the client's own cell.
const LocalCell = "local"

// MaxPathLen bounds a path within a cell.
const MaxPathLen = 4096

// MaxContents bounds a file's contents: Chubby holds small files.
const MaxContents = 256 << 10

// MaxLockDelay is the longest lock-delay a handle may ask for.
const MaxLockDelay = time.Minute

// DefaultLease is the lease the master grants with each KeepAlive.
const DefaultLease = 12 * time.Second

// DefaultGrace is how long a client waits in jeopardy before it gives its
// session up.
const DefaultGrace = 45 * time.Second

// ACLDir is the directory, within a cell, that holds ACL files.
const ACLDir = "/acl"

// Name is a parsed /ls/<cell>/<path> name.
type Name struct {
	Cell string
	// Path is the node's path within the cell, "/" for the cell's root.
	Path string
}

func (n Name) String() string {
	if n.Path == "/" {
		return Prefix + n.Cell + "/"
	}
	return Prefix + n.Cell + n.Path
}

// ParseName parses /ls/<cell>/<path>.
func ParseName(s string) (Name, error) {
	if !strings.HasPrefix(s, Prefix) {
		return Name{}, &Error{Kind: InvalidArgument, Msg: fmt.Sprintf("name %q does not start with %s", s, Prefix)}
	}
	rest := s[len(Prefix):]
	cell, path, _ := strings.Cut(rest, "/")
	if cell == "" {
		return Name{}, &Error{Kind: InvalidArgument, Msg: fmt.Sprintf("name %q has no cell", s)}
	}
	p, err := CleanPath("/" + path)
	if err != nil {
		return Name{}, err
	}
	return Name{Cell: cell, Path: p}, nil
}

// CleanPath checks a path within a cell: absolute, no empty, "." or ".."
// components, no NUL, at most MaxPathLen bytes. A trailing slash is
// dropped.
func CleanPath(p string) (string, error) {
	bad := func(why string) (string, error) {
		return "", &Error{Kind: InvalidArgument, Msg: fmt.Sprintf("path %q %s", p, why)}
	}
	if !strings.HasPrefix(p, "/") {
		return bad("is not absolute")
	}
	if len(p) > MaxPathLen {
		return bad(fmt.Sprintf("is longer than %d bytes", MaxPathLen))
	}
	if strings.ContainsRune(p, 0) {
		return bad("contains a NUL byte")
	}
	if p != "/" {
		p = strings.TrimSuffix(p, "/")
	}
	if p == "/" {
		return p, nil
	}
	for _, c := range strings.Split(p[1:], "/") {
		if c == "" || c == "." || c == ".." {
			return bad("has an empty, \".\" or \"..\" component")
		}
	}
	return p, nil
}

// Parent returns the parent of a clean path ("/" for top-level nodes and
// the root itself).
func Parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Base returns the last component of a clean path.
func Base(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// Mode says what a handle may do. Locking needs ModeWrite.
type Mode uint32

// Handle modes.
const (
	ModeRead      Mode = 1
	ModeWrite     Mode = 2
	ModeChangeACL Mode = 4
)

// LockMode is a lock's mode.
type LockMode int32

// Lock modes.
const (
	Unlocked  LockMode = 0
	Shared    LockMode = 1
	Exclusive LockMode = 2
)

func (m LockMode) String() string {
	switch m {
	case Shared:
		return "shared"
	case Exclusive:
		return "exclusive"
	}
	return "unlocked"
}

// EventType is the kind of an event.
type EventType int32

// Event types; their values match the wire protocol.
const (
	EventContentsModified EventType = 1
	EventChildAdded       EventType = 2
	EventChildRemoved     EventType = 3
	EventChildModified    EventType = 4
	EventMasterFailover   EventType = 5
	EventHandleInvalid    EventType = 6
	EventLockAcquired     EventType = 7
	EventConflictingLock  EventType = 8
	// EventEventsLost: the cell dropped events for this session because
	// its queue overflowed while the client was out of touch; re-read what
	// is watched. Events after it arrive as usual.
	EventEventsLost EventType = 9
	// The client library's own session events.
	EventJeopardy       EventType = 100
	EventSafe           EventType = 101
	EventSessionExpired EventType = 102
)

func (t EventType) String() string {
	switch t {
	case EventContentsModified:
		return "contents-modified"
	case EventChildAdded:
		return "child-added"
	case EventChildRemoved:
		return "child-removed"
	case EventChildModified:
		return "child-modified"
	case EventMasterFailover:
		return "master-failover"
	case EventHandleInvalid:
		return "handle-invalid"
	case EventLockAcquired:
		return "lock-acquired"
	case EventConflictingLock:
		return "conflicting-lock"
	case EventEventsLost:
		return "events-lost"
	case EventJeopardy:
		return "jeopardy"
	case EventSafe:
		return "safe"
	case EventSessionExpired:
		return "session-expired"
	}
	return "event(" + strconv.Itoa(int(t)) + ")"
}

// EventMask selects the events a handle subscribes to.
type EventMask uint32

// Mask returns the mask bit of t.
func Mask(types ...EventType) EventMask {
	var m EventMask
	for _, t := range types {
		m |= 1 << uint(t)
	}
	return m
}

// Has reports whether m includes t.
func (m EventMask) Has(t EventType) bool { return m&(1<<uint(t)) != 0 }

// ACL holds a node's three ACL names: files in the cell's ACL directory
// that list the principals allowed to read, to write (and lock), and to
// change the ACL names. An empty name allows everyone.
type ACL struct {
	Read      string
	Write     string
	ChangeACL string
}

// Stat is a node's metadata.
type Stat struct {
	// Instance exceeds that of every earlier node of the same name.
	Instance uint64
	// ContentGeneration grows with every write of the contents.
	ContentGeneration uint64
	// LockGeneration grows every time the lock goes from free to held.
	LockGeneration uint64
	// ACLGeneration grows with every write of the ACL names.
	ACLGeneration uint64
	// Checksum is a 64-bit checksum of the contents.
	Checksum    uint64
	Length      uint64
	IsDirectory bool
	Ephemeral   bool
	ACL         ACL
	LockMode    LockMode
	LockHolders int
}

// Sequencer describes a lock just after it was acquired: the node, the
// mode and the lock generation. A server that gets one with a request can
// check it and refuse the request if the lock has changed hands since.
type Sequencer struct {
	Path           string
	Mode           LockMode
	LockGeneration uint64
	Instance       uint64
}

// String encodes the sequencer as an opaque string to pass along.
func (s Sequencer) String() string {
	return fmt.Sprintf("seq1:%d:%d:%d:%s", s.Mode, s.LockGeneration, s.Instance, base64.RawURLEncoding.EncodeToString([]byte(s.Path)))
}

// ParseSequencer decodes Sequencer.String.
func ParseSequencer(s string) (Sequencer, error) {
	f := strings.SplitN(s, ":", 5)
	bad := &Error{Kind: InvalidArgument, Msg: fmt.Sprintf("malformed sequencer %q", s)}
	if len(f) != 5 || f[0] != "seq1" {
		return Sequencer{}, bad
	}
	mode, err1 := strconv.ParseInt(f[1], 10, 32)
	gen, err2 := strconv.ParseUint(f[2], 10, 64)
	inst, err3 := strconv.ParseUint(f[3], 10, 64)
	path, err4 := base64.RawURLEncoding.DecodeString(f[4])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || (mode != int64(Shared) && mode != int64(Exclusive)) {
		return Sequencer{}, bad
	}
	return Sequencer{Path: string(path), Mode: LockMode(mode), LockGeneration: gen, Instance: inst}, nil
}
