package fsm

import (
	"sort"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
)

// Snapshot returns the whole state, every list sorted, so equal states
// give equal snapshots.
func (s *State) Snapshot() *pb.Snapshot {
	out := &pb.Snapshot{Cell: s.cell, Key: append([]byte(nil), s.key...), Epoch: s.epoch, NextSession: s.nextSession,
		NextHandle: s.nextHandle, NextInstance: s.nextInstance, ClockMs: s.clock}
	paths := make([]string, 0, len(s.nodes))
	for p := range s.nodes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		n := s.nodes[p]
		out.Nodes = append(out.Nodes, &pb.Node{Path: p, Directory: n.dir, Ephemeral: n.ephemeral,
			Contents: append([]byte(nil), n.contents...), Stat: s.statOf(n), LockDelayUntilMs: n.lockDelayUntil})
	}
	for _, id := range sortedKeys(s.sessions) {
		sess := s.sessions[id]
		ps := &pb.Session{Id: id, Principal: sess.principal, EventSeq: sess.eventSeq}
		for _, e := range sess.events {
			ps.Events = append(ps.Events, &pb.Event{Type: e.Type, Handle: e.Handle, Path: e.Path, Seq: e.Seq})
		}
		for _, rid := range sortedKeys(sess.results) {
			ps.Results = append(ps.Results, &pb.RecordedResult{RequestId: rid, Result: sess.results[rid]})
		}
		out.Sessions = append(out.Sessions, ps)
	}
	for _, id := range sortedKeys(s.handles) {
		h := s.handles[id]
		out.Handles = append(out.Handles, &pb.Handle{Id: id, Session: h.session, Path: h.path, Instance: h.instance,
			Mode: uint32(h.mode), EventMask: uint32(h.mask), LockDelayMs: h.lockDelay, Epoch: h.epoch,
			Held: pb.LockMode(h.held), Sequencer: h.seq})
	}
	return out
}

// Restore rebuilds a state from a Snapshot.
func Restore(snap *pb.Snapshot) *State {
	s := New()
	s.cell, s.key, s.epoch = snap.Cell, append([]byte(nil), snap.Key...), snap.Epoch
	s.nextSession, s.nextHandle, s.nextInstance, s.clock = snap.NextSession, snap.NextHandle, snap.NextInstance, snap.ClockMs
	for _, pn := range snap.Nodes {
		n := &node{path: pn.Path, dir: pn.Directory, ephemeral: pn.Ephemeral, contents: pn.Contents,
			stat: pb.StatFromProto(pn.Stat), lockDelayUntil: pn.LockDelayUntilMs,
			holders: map[uint64]coord.LockMode{}, handles: map[uint64]bool{}}
		if n.dir {
			n.children = map[string]bool{}
		}
		s.nodes[pn.Path] = n
	}
	for p := range s.nodes {
		if p != "/" {
			if parent := s.nodes[coord.Parent(p)]; parent != nil {
				parent.children[coord.Base(p)] = true
			}
		}
	}
	for _, ps := range snap.Sessions {
		sess := &session{id: ps.Id, principal: ps.Principal, handles: map[uint64]bool{}, results: map[uint64]*pb.Result{},
			events: ps.Events, eventSeq: ps.EventSeq}
		for _, rr := range ps.Results {
			sess.results[rr.RequestId] = rr.Result
		}
		s.sessions[ps.Id] = sess
	}
	for _, ph := range snap.Handles {
		h := &handle{id: ph.Id, session: ph.Session, path: ph.Path, instance: ph.Instance, mode: coord.Mode(ph.Mode),
			mask: coord.EventMask(ph.EventMask), lockDelay: ph.LockDelayMs, epoch: ph.Epoch, held: coord.LockMode(ph.Held), seq: ph.Sequencer}
		s.handles[h.id] = h
		if sess := s.sessions[h.session]; sess != nil {
			sess.handles[h.id] = true
		}
		if n := s.nodes[h.path]; n != nil && n.stat.Instance == h.instance {
			n.handles[h.id] = true
			if h.held != coord.Unlocked {
				n.holders[h.id] = h.held
			}
		}
	}
	return s
}
