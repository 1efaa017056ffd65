package client

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
)

// keepAliveLoop keeps exactly one KeepAlive outstanding at the master. Each
// answer extends the local lease, counted conservatively from when the
// call was sent, and brings invalidations and events, which the next call
// acknowledges.
func (c *Client) keepAliveLoop() {
	defer c.wg.Done()
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		c.mu.Lock()
		if c.state == stateExpired || c.state == stateClosed {
			c.mu.Unlock()
			return
		}
		req := &pb.KeepAliveRequest{Session: c.session, AckedEventSeq: c.ackedEvent,
			AckedInvalidationSeq: c.ackedInval, RequestAckBelow: c.ackBelow()}
		deadline := c.leaseEnd
		// A master that has not answered by halfway between its expected
		// answer and the local lease's end may be paused or cut off
		// while another has taken over. Give up on it then, so that the
		// session can find the new master while it is still safe rather
		// than in jeopardy (which a server fencing itself with a lock
		// counts as losing it). A retry at a master that was only slow
		// costs one call.
		if early := deadline.Add(-earlyMargin(c.lease)); time.Until(early) > 0 {
			deadline = early
		}
		if c.state == stateJeopardy {
			deadline = c.jeopardyAt.Add(c.opts.Grace)
		}
		c.mu.Unlock()

		// The call may not outlive the local lease: the library must notice a
		// silent master in time to enter jeopardy.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		go func() {
			select {
			case <-c.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		var sent time.Time
		var resp *pb.KeepAliveResponse
		err := c.retry(ctx, func(ctx context.Context, cli pb.ChubbyClient, o grpc.CallOption) error {
			// The lease counts from the attempt that was answered: from
			// the first, a call that reached the new master only after
			// waiting out a paused one would bring a lease that had
			// mostly run out on arrival, and the session would go into
			// jeopardy right after a failover it had survived.
			sent = time.Now()
			var err error
			resp, err = cli.KeepAlive(ctx, req, o)
			return err
		})
		cancel()
		select {
		case <-c.stop:
			return
		default:
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				// The master held the call past its expected answer
				// without a word: it may be paused or cut off while
				// another has taken over. Ask the replicas who the
				// master is now rather than waiting out the lease and
				// the grace period on it.
				c.mu.Lock()
				c.master = ""
				c.mu.Unlock()
			}
			if !c.lapse() {
				return
			}
			time.Sleep(backoff)
			backoff = min(2*backoff, 500*time.Millisecond)
			continue
		}
		backoff = 10 * time.Millisecond
		if resp.Expired {
			c.expire()
			return
		}
		c.answer(sent, resp)
	}
}

// earlyMargin is how long before the local lease's end a held KeepAlive
// is given up: half the time by which the master's answer should come
// before it. The master answers min(lease/4, 2s) before its own lease
// ends (coord/cell), and the local lease ends lease/20 earlier than the
// master's (conservative). Zero when there is no such time.
func earlyMargin(lease time.Duration) time.Duration {
	return max(min(lease/4, 2*time.Second)-lease/20, 0) / 2
}

// lapse is called when a KeepAlive failed: once the local lease has run
// out the session enters jeopardy, and once the grace period has too, it
// expires. It reports whether the loop should go on.
func (c *Client) lapse() bool {
	c.mu.Lock()
	now := time.Now()
	switch {
	case c.state == stateSafe && !now.Before(c.leaseEnd):
		c.jeopardyAt = now
		c.flushLocked()
		c.setState(stateJeopardy)
		c.mu.Unlock()
		c.opts.Logger.Warn("session in jeopardy", slog.String("cell", c.opts.Cell), slog.Uint64("session", c.session.Id))
		c.emit(Event{Type: coord.EventJeopardy})
		return true
	case c.state == stateJeopardy && !now.Before(c.jeopardyAt.Add(c.opts.Grace)):
		c.mu.Unlock()
		c.expire()
		return false
	}
	c.mu.Unlock()
	return true
}

// expire marks the session expired, once.
func (c *Client) expire() {
	c.mu.Lock()
	if c.state == stateExpired || c.state == stateClosed {
		c.mu.Unlock()
		return
	}
	c.flushLocked()
	c.idle, c.idleByID = map[idleKey][]*pb.HandleRef{}, map[uint64]idleKey{}
	c.setState(stateExpired)
	c.mu.Unlock()
	c.opts.Logger.Error("session expired", slog.String("cell", c.opts.Cell), slog.Uint64("session", c.session.Id))
	c.emit(Event{Type: coord.EventSessionExpired})
}

// answer applies a KeepAlive answer.
func (c *Client) answer(sent time.Time, resp *pb.KeepAliveResponse) {
	var events []Event
	c.mu.Lock()
	// The master started the lease HeldMs after the request reached it,
	// so no earlier than sent + HeldMs by its clock.
	c.lease = time.Duration(resp.LeaseMs) * time.Millisecond
	c.leaseEnd = sent.Add(conservative(time.Duration(resp.HeldMs+resp.LeaseMs) * time.Millisecond))
	c.epoch = resp.Epoch
	wasJeopardy := c.state == stateJeopardy
	if wasJeopardy {
		c.setState(stateSafe)
	}
	c.publishSafe()
	for _, inv := range resp.Invalidations {
		if inv.Seq > c.ackedInval {
			delete(c.cache, inv.Path)
			c.dirty[inv.Path]++
			c.ackedInval = inv.Seq
		}
	}
	for _, ev := range resp.Events {
		if ev.Seq <= c.ackedEvent {
			continue
		}
		c.ackedEvent = ev.Seq
		e := Event{Type: coord.EventType(ev.Type)}
		if ev.Path != "" {
			e.Name = coord.Name{Cell: c.opts.Cell, Path: ev.Path}.String()
		}
		if ev.Type == pb.Event_MASTER_FAILOVER || ev.Type == pb.Event_EVENTS_LOST {
			// Invalidations may have been lost with the old master; an
			// EVENTS_LOST may stand for a failover event it replaced.
			c.flushLocked()
		}
		if ev.Handle != 0 {
			e.Handle = c.handles[ev.Handle]
			if e.Handle == nil {
				if ev.Type == pb.Event_HANDLE_INVALID {
					c.dropIdleLocked(ev.Handle)
				}
				continue // closed since
			}
			if ev.Type == pb.Event_HANDLE_INVALID {
				e.Handle.invalid.Store(true)
			}
			if ev.Type == pb.Event_CONFLICTING_LOCK {
				e.Handle.conflict()
			}
			// The library subscribes to some events for itself.
			if !e.Handle.mask.Has(e.Type) {
				continue
			}
		}
		events = append(events, e)
	}
	c.mu.Unlock()
	if wasJeopardy {
		c.opts.Logger.Info("session safe again", slog.String("cell", c.opts.Cell), slog.Uint64("session", c.session.Id))
		c.emit(Event{Type: coord.EventSafe})
	}
	for _, e := range events {
		c.emit(e)
	}
}

// flushLocked drops the whole cache. c.mu must be held.
func (c *Client) flushLocked() {
	c.cache = map[string]*cacheEntry{}
	c.flushes++
}

// emit queues an event for the dispatcher.
func (c *Client) emit(e Event) {
	if c.opts.OnEvent == nil {
		return
	}
	c.evMu.Lock()
	c.evQueue = append(c.evQueue, e)
	c.evMu.Unlock()
	select {
	case c.evWake <- struct{}{}:
	default:
	}
}

// dispatch hands events to OnEvent one at a time, in order, so a slow
// handler never blocks the KeepAlive loop.
func (c *Client) dispatch() {
	defer c.wg.Done()
	for {
		c.evMu.Lock()
		q := c.evQueue
		c.evQueue = nil
		c.evMu.Unlock()
		for _, e := range q {
			c.opts.OnEvent(e)
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-c.evWake:
		case <-c.stop:
			return
		}
	}
}
