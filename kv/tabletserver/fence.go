package tabletserver

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
)

// Fencing the master (Chubby paper, section 2.4). A master checks its own
// lease before it acts, but a master paused between that check and a
// call — a "zombie" — may send the call after a new master took the
// master lock over. So the master sends its lock's sequencer on its admin
// calls (load, unload, split, merge, compact, create, drop, schema,
// partition, and the file list its file GC deletes by) and on its
// METADATA mutations, and the server checks it:
//
//   - a sequencer older than the newest one this server has seen for the
//     same lock is refused at once;
//   - a newer one is checked with the lock service (SequencerChecker)
//     before it is accepted, and becomes the newest;
//   - the newest one, once checked, is trusted without asking again for
//     half its holder's lock-delay, then checked again.
//
// Why the lock-delay makes that trust sound: when the check began (time
// t), the lock service said the sequencer's holder held the lock. Any
// later holder must wait for it to be freed; if the holder failed (its
// session expired: a crash or a pause), the lock service keeps the lock
// from everyone for the lock-delay after that, which is after t. So no
// other master can hold the lock before t + lock-delay, and this server,
// timing the trust on its own monotonic clock from t, stops trusting well
// before that (half the delay leaves room for clock rate differences).
// A holder with no lock-delay is checked on every call.
//
// A clean release (the master's Close, on SIGTERM) has no lock-delay: a
// new master may take the lock at once, while servers still trust the old
// sequencer for the rest of their window. That is safe because Close
// stops the master's rounds before it releases the lock, so the old
// master sends nothing more, and a server refuses the old generation
// outright as soon as the new master's first call reaches it.
//
// A METADATA mutation without a sequencer is a tablet server's own
// catalog write (catalog.go), which its server lock fences (stillServing);
// the master always sends one. An admin call without one is refused once
// this server has seen a sequencer; before that it is accepted, so that
// masters without a lock service (tests, benchmarks) keep working. The
// data path of user tables never looks at sequencers.

// SequencerChecker asks the lock service whether a sequencer still
// describes its lock.
type SequencerChecker interface {
	// CheckSequencer returns nil if seq's holder still holds the lock,
	// an error wrapping ErrStaleSequencer if not, and another error if
	// the lock service could not say.
	CheckSequencer(ctx context.Context, seq client.Sequencer) error
}

// ErrStaleSequencer says that a sequencer no longer describes its lock.
var ErrStaleSequencer = errors.New("stale sequencer")

// fence keeps the newest sequencer seen for each lock.
type fence struct {
	checker SequencerChecker // nil: sequencers are only ordered
	timeout time.Duration    // of one check
	now     func() time.Time

	mu     sync.Mutex
	newest map[string]fenceEntry // by lock path
}

type fenceEntry struct {
	seq client.Sequencer
	// until ends the trust of seq; zero: check it again.
	until time.Time
}

func newFence(o Options) *fence {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &fence{checker: o.Sequencers, timeout: o.SequencerCheckTimeout, now: now, newest: map[string]fenceEntry{}}
}

// seen returns a sequencer this server has accepted, if any.
func (f *fence) seen() (client.Sequencer, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.newest {
		return e.seq, true
	}
	return client.Sequencer{}, false
}

// check accepts seq or says why not, as a status error.
func (f *fence) check(ctx context.Context, seq client.Sequencer) error {
	f.mu.Lock()
	e, ok := f.newest[seq.Path]
	f.mu.Unlock()
	if ok {
		if e.seq.Newer(seq) {
			return older(seq, e.seq)
		}
		if !seq.Newer(e.seq) && f.now().Before(e.until) {
			return nil
		}
	}
	start := f.now()
	if f.checker != nil {
		cctx, cancel := context.WithTimeout(ctx, f.timeout)
		err := f.checker.CheckSequencer(cctx, seq)
		cancel()
		if err != nil {
			if errors.Is(err, ErrStaleSequencer) {
				return status.Errorf(codes.FailedPrecondition, "refused: the sequencer of %s, generation %d: %v", seq.Path, seq.Generation, err)
			}
			return status.Errorf(codes.Unavailable, "check the sequencer of %s, generation %d, with the lock service: %v", seq.Path, seq.Generation, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok = f.newest[seq.Path]
	if ok && e.seq.Newer(seq) {
		return older(seq, e.seq) // a newer one arrived during the check
	}
	until := time.Time{}
	if f.checker != nil {
		until = start.Add(seq.LockDelay / 2)
	}
	f.newest[seq.Path] = fenceEntry{seq: seq, until: until}
	return nil
}

func older(seq, newest client.Sequencer) error {
	return status.Errorf(codes.FailedPrecondition, "refused: the sequencer of %s has generation %d, older than generation %d this server has seen; its holder lost the lock",
		seq.Path, seq.Generation, newest.Generation)
}

// fenceAdmin checks the sequencer of an admin call (see above).
func (s *Server) fenceAdmin(ctx context.Context, method string) error {
	seq, ok, err := client.SequencerFrom(ctx)
	if err != nil {
		return invalid("%s: %v", method, err)
	}
	if ok {
		return s.logRefusal(method, s.fence.check(ctx, seq))
	}
	if newest, seen := s.fence.seen(); seen {
		return s.logRefusal(method, status.Errorf(codes.FailedPrecondition, "refused: %s without a sequencer, but this server has seen the sequencer of %s, generation %d",
			method, newest.Path, newest.Generation))
	}
	return nil
}

// logRefusal logs err if it refuses a call: a refusal means a master
// that lost its lock is still acting.
func (s *Server) logRefusal(method string, err error) error {
	if status.Code(err) == codes.FailedPrecondition {
		s.opts.Logger.Warn("refused a master's call", slog.String("server", s.opts.ID), slog.String("method", method), slog.String("reason", status.Convert(err).Message()))
	}
	return err
}

// fenceMeta checks the sequencer of a mutation of table, if it is
// METADATA and the call carries one: user tables pay nothing.
func (s *Server) fenceMeta(ctx context.Context, method, table string) error {
	if table != client.MetaTable {
		return nil
	}
	seq, ok, err := client.SequencerFrom(ctx)
	if err != nil {
		return invalid("%v", err)
	}
	if !ok {
		return nil
	}
	return s.logRefusal(method+" of METADATA", s.fence.check(ctx, seq))
}
