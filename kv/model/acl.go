package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ErrPermissionDenied: the caller's principal may not read or write a
// family it asked for. Not retryable.
var ErrPermissionDenied = errors.New("permission denied")

// Principal is who a request acts for, as a front door names it: a SQL
// session's user, or the principal a Bigtable API token names. A request
// that carries no principal comes from a cluster member (the master, a
// tablet server) and is not subject to ACLs.
type Principal struct {
	Name string
	// Superuser bypasses every ACL (a pgwire superuser).
	Superuser bool
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p; kv/client sends it with every call
// made under ctx.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return BindPrincipal(p).In(ctx)
}

// BoundPrincipal is a principal boxed once: a caller that marks many
// contexts with the same principal (a SQL session, every statement)
// saves the allocation of boxing it each time.
type BoundPrincipal struct{ v any }

// BindPrincipal boxes p for In.
func BindPrincipal(p Principal) BoundPrincipal { return BoundPrincipal{v: p} }

// In is WithPrincipal with the bound principal.
func (b BoundPrincipal) In(ctx context.Context) context.Context {
	return context.WithValue(ctx, principalKey{}, b.v)
}

// PrincipalFrom returns the principal ctx carries, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// AnyFamily, as a family of an ACL, applies to every family of the table;
// Everyone, as a principal, names every principal (SQL's PUBLIC).
const (
	AnyFamily = "*"
	Everyone  = "*"
)

// ReservedFamily holds the marker cell of key-only rows; a principal may
// read or write it if it may read or write any family of the table.
const ReservedFamily = "_"

// ACL is a table's access control list, kept as JSON in the lock service.
// A table without one is open to every principal. A table with one is
// open, family by family, only to the principals it lists (and to its
// owner and superusers).
type ACL struct {
	// Owner may read and write every family and change the ACL.
	Owner string `json:"owner,omitempty"`
	// Families maps a family (or AnyFamily) to who may read and write it.
	Families map[string]*FamilyACL `json:"families"`
}

// FamilyACL lists the principals allowed to read and to write a family.
type FamilyACL struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// ParseACL reads an ACL file.
func ParseACL(data []byte) (*ACL, error) {
	var a ACL
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("%w: ACL: %w", ErrCorruption, err)
	}
	if a.Families == nil {
		a.Families = map[string]*FamilyACL{}
	}
	return &a, nil
}

// Marshal returns the ACL as its file's contents.
func (a *ACL) Marshal() []byte {
	b, _ := json.MarshalIndent(a, "", "  ") // maps and strings only: cannot fail
	return append(b, '\n')
}

func listed(list []string, name string) bool {
	return slices.Contains(list, name) || slices.Contains(list, Everyone)
}

func (a *ACL) allowsFamily(name, family string, write bool) bool {
	for _, f := range []string{family, AnyFamily} {
		e := a.Families[f]
		if e == nil {
			continue
		}
		if (!write && listed(e.Read, name)) || (write && listed(e.Write, name)) {
			return true
		}
	}
	return false
}

// Allows reports whether p may read (write false) or write family. A
// nil ACL allows everything.
func (a *ACL) Allows(p Principal, family string, write bool) bool {
	if a == nil || p.Superuser || (a.Owner != "" && p.Name == a.Owner) {
		return true
	}
	if family == ReservedFamily {
		for f := range a.Families {
			if a.allowsFamily(p.Name, f, write) {
				return true
			}
		}
		return false
	}
	return a.allowsFamily(p.Name, family, write)
}

// Check returns an ErrPermissionDenied error naming the first family of
// families that p may not access in table, or nil.
func (a *ACL) Check(p Principal, table string, families []string, write bool) error {
	for _, f := range families {
		if !a.Allows(p, f, write) {
			what := "read"
			if write {
				what = "write"
			}
			name := p.Name
			if name == "" {
				name = "anonymous"
			}
			return fmt.Errorf("%w: principal %q may not %s family %q of table %q", ErrPermissionDenied, name, what, f, table)
		}
	}
	return nil
}

// Grant lets principal read and/or write family.
func (a *ACL) Grant(family, principal string, read, write bool) {
	if a.Families == nil {
		a.Families = map[string]*FamilyACL{}
	}
	e := a.Families[family]
	if e == nil {
		e = &FamilyACL{}
		a.Families[family] = e
	}
	if read && !slices.Contains(e.Read, principal) {
		e.Read = append(e.Read, principal)
		sort.Strings(e.Read)
	}
	if write && !slices.Contains(e.Write, principal) {
		e.Write = append(e.Write, principal)
		sort.Strings(e.Write)
	}
}

// Revoke takes read and/or write of family away from principal. Revoking
// on AnyFamily takes the right away on every family.
func (a *ACL) Revoke(family, principal string, read, write bool) {
	for f, e := range a.Families {
		if f != family && family != AnyFamily {
			continue
		}
		if read {
			e.Read = slices.DeleteFunc(e.Read, func(s string) bool { return s == principal })
		}
		if write {
			e.Write = slices.DeleteFunc(e.Write, func(s string) bool { return s == principal })
		}
		if len(e.Read) == 0 && len(e.Write) == 0 {
			delete(a.Families, f)
		}
	}
}

// String lists the ACL one family per line, for operators.
func (a *ACL) String() string {
	var b strings.Builder
	if a.Owner != "" {
		fmt.Fprintf(&b, "owner: %s\n", a.Owner)
	}
	fams := make([]string, 0, len(a.Families))
	for f := range a.Families {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	for _, f := range fams {
		e := a.Families[f]
		fmt.Fprintf(&b, "family %s: read=%s write=%s\n", f, strings.Join(e.Read, ","), strings.Join(e.Write, ","))
	}
	return b.String()
}
