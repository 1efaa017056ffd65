package model

import (
	"errors"
	"strings"
	"testing"
)

func TestACL(t *testing.T) {
	var open *ACL
	if !open.Allows(Principal{Name: "x"}, "f", true) {
		t.Fatal("a table without an ACL is open")
	}
	a := &ACL{Owner: "carol"}
	a.Grant("f", "alice", true, false)
	a.Grant(AnyFamily, "bob", true, false)
	a.Grant("g", Everyone, false, true)
	cases := []struct {
		who          Principal
		family       string
		write, allow bool
	}{
		{Principal{Name: "alice"}, "f", false, true},
		{Principal{Name: "alice"}, "f", true, false},
		{Principal{Name: "alice"}, "h", false, false},
		{Principal{Name: "bob"}, "h", false, true}, // "*" family
		{Principal{Name: "bob"}, "h", true, false},
		{Principal{Name: "zed"}, "g", true, true}, // "*" principal
		{Principal{Name: "zed"}, "g", false, false},
		{Principal{Name: "carol"}, "h", true, true}, // the owner
		{Principal{Name: "root", Superuser: true}, "h", true, true},
		{Principal{Name: "alice"}, ReservedFamily, false, true}, // reads some family
		{Principal{Name: "alice"}, ReservedFamily, true, true},  // everyone writes g
		{Principal{Name: "zed"}, ReservedFamily, false, false},
	}
	for _, c := range cases {
		if got := a.Allows(c.who, c.family, c.write); got != c.allow {
			t.Errorf("%+v on %q (write %v): %v, want %v", c.who, c.family, c.write, got, c.allow)
		}
	}
	err := a.Check(Principal{Name: "alice"}, "t", []string{"f", "h"}, false)
	if !errors.Is(err, ErrPermissionDenied) || !strings.Contains(err.Error(), `principal "alice" may not read family "h" of table "t"`) {
		t.Fatalf("Check: %v", err)
	}

	// A round trip through the file, then revokes.
	b, err := ParseACL(a.Marshal())
	if err != nil || b.Owner != "carol" || len(b.Families) != 3 {
		t.Fatalf("ParseACL: %+v %v", b, err)
	}
	b.Revoke("f", "alice", true, true)
	if _, ok := b.Families["f"]; ok {
		t.Fatal("an entry with nobody left stays")
	}
	b.Grant("f", "bob", false, true)
	b.Revoke(AnyFamily, "bob", true, true)
	if b.Allows(Principal{Name: "bob"}, "f", true) || b.Allows(Principal{Name: "bob"}, "h", false) {
		t.Fatalf("a revoke on every family left bob rights: %s", b)
	}
	if _, err := ParseACL([]byte("{")); !errors.Is(err, ErrCorruption) {
		t.Fatalf("a bad file: %v", err)
	}
}
