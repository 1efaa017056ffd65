package coord

import (
	"fmt"
	"strings"
)

// Kind classifies an error of the lock service. Each kind travels on the
// wire as a gRPC code and a token at the start of the status message, so
// the client library rebuilds the same kind.
type Kind int

// The kinds of errors.
const (
	Unknown Kind = iota
	InvalidArgument
	NotFound
	Exists
	PermissionDenied
	NotEmpty
	NotDirectory
	IsDirectory
	// GenerationMismatch: a compare-and-swap found another content
	// generation.
	GenerationMismatch
	// LockBusy: the lock is held in a conflicting mode or is within its
	// lock-delay.
	LockBusy
	NotHeld
	// InvalidHandle: the handle is unknown, closed, poisoned, forged, or its
	// node was deleted.
	InvalidHandle
	// StaleSequencer: a sequencer no longer describes the lock.
	StaleSequencer
	// SessionExpired: the session is gone; everything it held is released.
	SessionExpired
	// NotMaster: this replica is not the master; retry at the master.
	NotMaster
	// Unavailable: the cell cannot answer now; retry.
	Unavailable
)

var kindInfo = map[Kind]struct {
	token string
	code  int // the gRPC code
}{
	Unknown:            {"unknown", 2},
	InvalidArgument:    {"invalid-argument", 3},
	NotFound:           {"not-found", 5},
	Exists:             {"exists", 6},
	PermissionDenied:   {"permission-denied", 7},
	NotEmpty:           {"not-empty", 9},
	NotDirectory:       {"not-a-directory", 9},
	IsDirectory:        {"is-a-directory", 9},
	GenerationMismatch: {"generation-mismatch", 10},
	LockBusy:           {"lock-busy", 10},
	NotHeld:            {"lock-not-held", 9},
	InvalidHandle:      {"invalid-handle", 9},
	StaleSequencer:     {"stale-sequencer", 9},
	SessionExpired:     {"session-expired", 9},
	NotMaster:          {"not-master", 9},
	Unavailable:        {"unavailable", 14},
}

func (k Kind) String() string { return kindInfo[k].token }

// Code returns the gRPC code number of a kind.
func (k Kind) Code() int { return kindInfo[k].code }

// Error is an error of the lock service.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Kind.String() + ": " + e.Msg }

// Is makes errors.Is(err, coord.ErrNotFound) and the like work.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Kind == e.Kind
}

// Errorf returns an *Error of kind k.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Sentinels for errors.Is.
var (
	ErrInvalidArgument    = &Error{Kind: InvalidArgument}
	ErrNotFound           = &Error{Kind: NotFound}
	ErrExists             = &Error{Kind: Exists}
	ErrPermissionDenied   = &Error{Kind: PermissionDenied}
	ErrNotEmpty           = &Error{Kind: NotEmpty}
	ErrNotDirectory       = &Error{Kind: NotDirectory}
	ErrIsDirectory        = &Error{Kind: IsDirectory}
	ErrGenerationMismatch = &Error{Kind: GenerationMismatch}
	ErrLockBusy           = &Error{Kind: LockBusy}
	ErrNotHeld            = &Error{Kind: NotHeld}
	ErrInvalidHandle      = &Error{Kind: InvalidHandle}
	ErrStaleSequencer     = &Error{Kind: StaleSequencer}
	ErrSessionExpired     = &Error{Kind: SessionExpired}
	ErrNotMaster          = &Error{Kind: NotMaster}
	ErrUnavailable        = &Error{Kind: Unavailable}
)

// StatusMessage is the status message that carries e on the wire.
func (e *Error) StatusMessage() string { return e.Error() }

// FromStatus rebuilds an error from a gRPC code and status message. A
// message without a known token keeps its code's nearest kind.
func FromStatus(code int, msg string) *Error {
	if tok, rest, ok := strings.Cut(msg, ": "); ok {
		for k, info := range kindInfo {
			if info.token == tok {
				return &Error{Kind: k, Msg: rest}
			}
		}
	}
	switch code {
	case 3:
		return &Error{Kind: InvalidArgument, Msg: msg}
	case 5:
		return &Error{Kind: NotFound, Msg: msg}
	case 6:
		return &Error{Kind: Exists, Msg: msg}
	case 7, 16:
		return &Error{Kind: PermissionDenied, Msg: msg}
	case 4, 8, 14:
		return &Error{Kind: Unavailable, Msg: msg}
	}
	return &Error{Kind: Unknown, Msg: msg}
}

// Retryable reports whether an operation that failed with kind k may
// succeed if repeated, possibly at another replica.
func (k Kind) Retryable() bool { return k == NotMaster || k == Unavailable }
