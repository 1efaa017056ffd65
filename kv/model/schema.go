package model

import (
	"fmt"
	"sort"
	"time"
)

// GCRuleKind says which form a GCRule takes.
type GCRuleKind uint8

const (
	// GCNone keeps every version.
	GCNone GCRuleKind = iota
	// GCMaxVersions keeps the newest MaxVersions versions of each column.
	GCMaxVersions
	// GCMaxAge keeps versions younger than MaxAge.
	GCMaxAge
	// GCUnion collects a version when any sub-rule would.
	GCUnion
	// GCIntersection collects a version when every sub-rule would.
	GCIntersection
)

// GCRule is a family's garbage-collection rule, the shape of Cloud
// Bigtable's GcRule. Rules run at compaction time, so reads may still see
// versions that are due for collection.
type GCRule struct {
	Kind        GCRuleKind    `json:"kind,omitempty"`
	MaxVersions int           `json:"max_versions,omitempty"`
	MaxAge      time.Duration `json:"max_age,omitempty"`
	Rules       []GCRule      `json:"rules,omitempty"`
}

// MaxVersionsRule keeps the newest n versions.
func MaxVersionsRule(n int) GCRule { return GCRule{Kind: GCMaxVersions, MaxVersions: n} }

// MaxAgeRule keeps versions younger than d.
func MaxAgeRule(d time.Duration) GCRule { return GCRule{Kind: GCMaxAge, MaxAge: d} }

// UnionRule collects what any of rules collects.
func UnionRule(rules ...GCRule) GCRule { return GCRule{Kind: GCUnion, Rules: rules} }

// IntersectionRule collects what all of rules collect.
func IntersectionRule(rules ...GCRule) GCRule { return GCRule{Kind: GCIntersection, Rules: rules} }

// Validate checks the rule's shape.
func (r GCRule) Validate() error {
	switch r.Kind {
	case GCNone:
		return nil
	case GCMaxVersions:
		if r.MaxVersions < 1 {
			return fmt.Errorf("%w: max versions %d must be at least 1", ErrInvalidArgument, r.MaxVersions)
		}
	case GCMaxAge:
		if r.MaxAge <= 0 || r.MaxAge%time.Millisecond != 0 {
			return fmt.Errorf("%w: max age %v must be a positive whole number of milliseconds", ErrInvalidArgument, r.MaxAge)
		}
	case GCUnion, GCIntersection:
		if len(r.Rules) == 0 {
			return fmt.Errorf("%w: empty union or intersection GC rule", ErrInvalidArgument)
		}
		for _, s := range r.Rules {
			if err := s.Validate(); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: unknown GC rule kind %d", ErrInvalidArgument, r.Kind)
	}
	return nil
}

// Collects reports whether a version is garbage. version is its 1-based rank
// among the live versions of its column, newest first; ts is its timestamp;
// now is the compaction's clock in µs.
func (r GCRule) Collects(version int, ts, now int64) bool {
	switch r.Kind {
	case GCMaxVersions:
		return version > r.MaxVersions
	case GCMaxAge:
		return ts < now-r.MaxAge.Microseconds()
	case GCUnion:
		for _, s := range r.Rules {
			if s.Collects(version, ts, now) {
				return true
			}
		}
		return false
	case GCIntersection:
		for _, s := range r.Rules {
			if !s.Collects(version, ts, now) {
				return false
			}
		}
		return true
	}
	return false
}

// UsesVersions reports whether the rule depends on version ranks, which are
// only known when a compaction sees every file of the family.
func (r GCRule) UsesVersions() bool {
	switch r.Kind {
	case GCMaxVersions:
		return true
	case GCUnion, GCIntersection:
		for _, s := range r.Rules {
			if s.UsesVersions() {
				return true
			}
		}
	}
	return false
}

func (r GCRule) String() string {
	switch r.Kind {
	case GCMaxVersions:
		return fmt.Sprintf("maxversions=%d", r.MaxVersions)
	case GCMaxAge:
		return fmt.Sprintf("maxage=%v", r.MaxAge)
	case GCUnion, GCIntersection:
		op := " || "
		if r.Kind == GCIntersection {
			op = " && "
		}
		s := "("
		for i, x := range r.Rules {
			if i > 0 {
				s += op
			}
			s += x.String()
		}
		return s + ")"
	}
	return "none"
}

// Compression names a block compression.
type Compression uint8

const (
	// CompressionSnappy compresses blocks with snappy (the default).
	CompressionSnappy Compression = 0
	// CompressionNone stores blocks as they are.
	CompressionNone Compression = 1
)

// LocalityGroup is a set of families stored in their own SSTables.
type LocalityGroup struct {
	Name string `json:"name"`
	// InMemory serves the group's SSTables wholly from memory.
	InMemory    bool        `json:"in_memory,omitempty"`
	Compression Compression `json:"compression,omitempty"`
	// NoBloom turns the group's bloom filters off.
	NoBloom bool `json:"no_bloom,omitempty"`
}

// DefaultLocalityGroup is the group of families that name no other.
const DefaultLocalityGroup = "default"

// Family declares a column family.
type Family struct {
	Name          string `json:"name"`
	GC            GCRule `json:"gc,omitempty"`
	LocalityGroup string `json:"locality_group,omitempty"`
}

// Schema is the part of a table's definition that storage needs.
type Schema struct {
	Families       []Family        `json:"families"`
	LocalityGroups []LocalityGroup `json:"locality_groups,omitempty"`
	// Meta holds what the layers above storage keep with a table (the SQL
	// layer's column types, under "sql"); the storage engine ignores it.
	Meta map[string]string `json:"meta,omitempty"`
}

// Validate checks names, references and rules.
func (s *Schema) Validate() error {
	groups := map[string]bool{DefaultLocalityGroup: true}
	for _, g := range s.LocalityGroups {
		if err := ValidateFamilyName(g.Name); err != nil {
			return fmt.Errorf("locality group: %w", err)
		}
		if groups[g.Name] && g.Name != DefaultLocalityGroup {
			return fmt.Errorf("%w: locality group %q declared twice", ErrInvalidArgument, g.Name)
		}
		if g.Compression > CompressionNone {
			return fmt.Errorf("%w: locality group %q: unknown compression %d", ErrInvalidArgument, g.Name, g.Compression)
		}
		groups[g.Name] = true
	}
	seen := map[string]bool{}
	for _, f := range s.Families {
		if err := ValidateFamilyName(f.Name); err != nil {
			return err
		}
		if seen[f.Name] {
			return fmt.Errorf("%w: family %q declared twice", ErrInvalidArgument, f.Name)
		}
		seen[f.Name] = true
		if f.LocalityGroup != "" && !groups[f.LocalityGroup] {
			return fmt.Errorf("%w: family %q names unknown locality group %q", ErrInvalidArgument, f.Name, f.LocalityGroup)
		}
		if err := f.GC.Validate(); err != nil {
			return fmt.Errorf("family %q: %w", f.Name, err)
		}
	}
	return nil
}

// Family returns the declared family with the given name.
func (s *Schema) Family(name string) (Family, bool) {
	for _, f := range s.Families {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

// Groups returns every locality group the schema uses, the default group
// first and the rest sorted by name, with its options.
func (s *Schema) Groups() []LocalityGroup {
	out := []LocalityGroup{{Name: DefaultLocalityGroup}}
	for _, g := range s.LocalityGroups {
		if g.Name == DefaultLocalityGroup {
			out[0] = g
		}
	}
	var rest []LocalityGroup
	for _, g := range s.LocalityGroups {
		if g.Name != DefaultLocalityGroup {
			rest = append(rest, g)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Name < rest[j].Name })
	return append(out, rest...)
}

// GroupOf returns the locality group a family belongs to.
func (f Family) GroupOf() string {
	if f.LocalityGroup == "" {
		return DefaultLocalityGroup
	}
	return f.LocalityGroup
}
