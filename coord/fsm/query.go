package fsm

import (
	"sort"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
)

// Queries are read-only and run against a replica's applied state; the
// master makes them linearizable with a Raft read index first.

// GetQuery reads a node through a handle.
type GetQuery struct {
	Session  *pb.SessionRef
	Handle   *pb.HandleRef
	Contents bool
}

// ReadDirQuery lists a directory through a handle.
type ReadDirQuery struct {
	Session *pb.SessionRef
	Handle  *pb.HandleRef
}

// CheckSequencerQuery checks a sequencer.
type CheckSequencerQuery struct{ Sequencer *pb.Sequencer }

// HandleQuery returns the path and session of a handle.
type HandleQuery struct{ Handle uint64 }

// HandleInfo answers a HandleQuery.
type HandleInfo struct {
	Path    string
	Session uint64
	Found   bool
}

// SessionsQuery lists the live sessions.
type SessionsQuery struct{}

// SessionPathsQuery returns the paths a session holds handles on: every
// node that ending the session can change.
type SessionPathsQuery struct{ Session uint64 }

// EventsQuery returns a session's queued events numbered above After.
type EventsQuery struct {
	Session uint64
	After   uint64
}

// Events answers an EventsQuery. Found is false if the session has ended.
type Events struct {
	Events []*pb.Event
	Found  bool
}

// InfoQuery returns the cell's name, key, epoch and clock.
type InfoQuery struct{}

// Info answers an InfoQuery.
type Info struct {
	Cell  string
	Key   []byte
	Epoch uint64
	// ClockMs is the cell's clock: the highest now_ms of any command
	// applied. A new master continues it.
	ClockMs int64
}

// DumpQuery returns the whole state as a Snapshot, for tests and tools.
type DumpQuery struct{}

// CountsQuery counts sessions, handles and held locks, for metrics.
type CountsQuery struct{}

// Counts answers a CountsQuery. Locks counts the nodes whose lock is held,
// in either mode.
type Counts struct {
	Sessions, Handles, Locks int
}

// Lookup answers a query. Results never alias the state.
func (s *State) Lookup(q any) (any, error) {
	switch q := q.(type) {
	case GetQuery:
		h, r := s.handleOf(q.Session, q.Handle, true)
		if r != nil {
			return nil, coord.FromStatus(int(r.Code), r.Message)
		}
		if h.mode&coord.ModeRead == 0 {
			return nil, coord.Errorf(coord.PermissionDenied, "handle %d on %s was not opened for reading", h.id, h.path)
		}
		n := s.nodes[h.path]
		out := &pb.GetResponse{Stat: s.statOf(n)}
		if q.Contents {
			if n.dir {
				return nil, coord.Errorf(coord.IsDirectory, "%s is a directory", n.path)
			}
			out.Contents = append([]byte(nil), n.contents...)
		}
		return out, nil
	case ReadDirQuery:
		h, r := s.handleOf(q.Session, q.Handle, true)
		if r != nil {
			return nil, coord.FromStatus(int(r.Code), r.Message)
		}
		if h.mode&coord.ModeRead == 0 {
			return nil, coord.Errorf(coord.PermissionDenied, "handle %d on %s was not opened for reading", h.id, h.path)
		}
		n := s.nodes[h.path]
		if !n.dir {
			return nil, coord.Errorf(coord.NotDirectory, "%s is not a directory", n.path)
		}
		names := make([]string, 0, len(n.children))
		for c := range n.children {
			names = append(names, c)
		}
		sort.Strings(names)
		out := &pb.ReadDirResponse{}
		for _, c := range names {
			child := s.nodes[joinPath(n.path, c)]
			out.Entries = append(out.Entries, &pb.DirEntry{Name: c, Stat: s.statOf(child)})
		}
		return out, nil
	case CheckSequencerQuery:
		if q.Sequencer == nil {
			return nil, coord.Errorf(coord.InvalidArgument, "no sequencer")
		}
		if err := s.checkSequencer(q.Sequencer); err != nil {
			return &pb.CheckSequencerResponse{Valid: false, Reason: err.Error()}, nil
		}
		return &pb.CheckSequencerResponse{Valid: true}, nil
	case HandleQuery:
		h := s.handles[q.Handle]
		if h == nil {
			return HandleInfo{}, nil
		}
		return HandleInfo{Path: h.path, Session: h.session, Found: true}, nil
	case SessionsQuery:
		return sortedKeys(s.sessions), nil
	case SessionPathsQuery:
		sess := s.sessions[q.Session]
		if sess == nil {
			return []string(nil), nil
		}
		seen := map[string]bool{}
		var out []string
		for _, id := range sortedKeys(sess.handles) {
			if p := s.handles[id].path; !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		return out, nil
	case EventsQuery:
		sess := s.sessions[q.Session]
		if sess == nil {
			return Events{}, nil
		}
		out := Events{Found: true}
		for _, e := range sess.events {
			if e.Seq > q.After {
				out.Events = append(out.Events, &pb.Event{Type: e.Type, Handle: e.Handle, Path: e.Path, Seq: e.Seq})
			}
		}
		return out, nil
	case InfoQuery:
		return Info{Cell: s.cell, Key: append([]byte(nil), s.key...), Epoch: s.epoch, ClockMs: s.clock}, nil
	case DumpQuery:
		return s.Snapshot(), nil
	case CountsQuery:
		c := Counts{Sessions: len(s.sessions), Handles: len(s.handles)}
		for _, n := range s.nodes {
			if len(n.holders) > 0 {
				c.Locks++
			}
		}
		return c, nil
	}
	return nil, coord.Errorf(coord.InvalidArgument, "unknown query %T", q)
}

func joinPath(dir, base string) string {
	if dir == "/" {
		return "/" + base
	}
	return dir + "/" + base
}
