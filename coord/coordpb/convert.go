package coordpb

import "github.com/cellardb/cellar/coord"

// StatToProto converts a Stat to its wire form.
func StatToProto(st coord.Stat) *Stat {
	return &Stat{Instance: st.Instance, ContentGeneration: st.ContentGeneration, LockGeneration: st.LockGeneration,
		AclGeneration: st.ACLGeneration, Checksum: st.Checksum, Length: st.Length, IsDirectory: st.IsDirectory,
		Ephemeral: st.Ephemeral, Acl: ACLToProto(st.ACL), LockMode: LockMode(st.LockMode), LockHolders: uint32(st.LockHolders)}
}

// StatFromProto converts a Stat from its wire form.
func StatFromProto(p *Stat) coord.Stat {
	if p == nil {
		return coord.Stat{}
	}
	return coord.Stat{Instance: p.Instance, ContentGeneration: p.ContentGeneration, LockGeneration: p.LockGeneration,
		ACLGeneration: p.AclGeneration, Checksum: p.Checksum, Length: p.Length, IsDirectory: p.IsDirectory,
		Ephemeral: p.Ephemeral, ACL: ACLFromProto(p.Acl), LockMode: coord.LockMode(p.LockMode), LockHolders: int(p.LockHolders)}
}

// ACLToProto converts ACL names to their wire form.
func ACLToProto(a coord.ACL) *ACL { return &ACL{Read: a.Read, Write: a.Write, ChangeAcl: a.ChangeACL} }

// ACLFromProto converts ACL names from their wire form.
func ACLFromProto(a *ACL) coord.ACL {
	if a == nil {
		return coord.ACL{}
	}
	return coord.ACL{Read: a.Read, Write: a.Write, ChangeACL: a.ChangeAcl}
}

// SequencerToProto converts a sequencer to its wire form.
func SequencerToProto(s coord.Sequencer) *Sequencer {
	return &Sequencer{Path: s.Path, Mode: LockMode(s.Mode), LockGeneration: s.LockGeneration, Instance: s.Instance}
}

// SequencerFromProto converts a sequencer from its wire form.
func SequencerFromProto(s *Sequencer) coord.Sequencer {
	if s == nil {
		return coord.Sequencer{}
	}
	return coord.Sequencer{Path: s.Path, Mode: coord.LockMode(s.Mode), LockGeneration: s.LockGeneration, Instance: s.Instance}
}
