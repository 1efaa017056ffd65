package master

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Event is one notable thing the master did or saw, for status pages.
type Event struct {
	Time time.Time
	// Kind is one of the Event* constants.
	Kind string
	Text string
}

// The kinds of Event.
const (
	EventMaster     = "master"     // became active, or lost the master lock
	EventAssign     = "assign"     // a tablet loaded on a server
	EventSplit      = "split"      // a server reported a split, or one forced by an operator
	EventMerge      = "merge"      // two tablets merged
	EventMove       = "move"       // a tablet moved to balance load
	EventDeath      = "death"      // a server declared dead
	EventRecovery   = "recovery"   // a dead server's log partitioned for its tablets
	EventTable      = "table"      // a table created, deleted or changed
	EventCompaction = "compaction" // a major compaction an operator asked for, done
)

// eventRing keeps the newest events, oldest first once full.
type eventRing struct {
	buf  []Event
	next int
	full bool
}

func (r *eventRing) add(e Event, size int) {
	if r.buf == nil {
		r.buf = make([]Event, size)
	}
	r.buf[r.next] = e
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

func (r *eventRing) list() []Event {
	if !r.full {
		return append([]Event(nil), r.buf[:r.next]...)
	}
	return append(append([]Event(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// event logs a notable event and keeps it for Events.
func (m *Master) event(kind string, level slog.Level, msg string, attrs ...slog.Attr) {
	m.opts.Logger.LogAttrs(context.Background(), level, msg, attrs...)
	var b strings.Builder
	b.WriteString(msg)
	for _, a := range attrs {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value)
	}
	e := Event{Time: m.opts.Clock(), Kind: kind, Text: b.String()}
	m.evMu.Lock()
	m.events.add(e, m.opts.MaxEvents)
	m.evMu.Unlock()
}

// Events returns the recent events, oldest first (at most
// Options.MaxEvents).
func (m *Master) Events() []Event {
	m.evMu.Lock()
	defer m.evMu.Unlock()
	return m.events.list()
}

// Active reports whether this master holds the master lock now; a
// standby waiting in Open does not.
func (m *Master) Active() bool {
	m.mu.Lock()
	l := m.lock
	m.mu.Unlock()
	return l != nil && l.Held()
}
