package query

import "testing"

func TestContainsFold(t *testing.T) {
	for _, c := range []struct {
		s, sub string
		want   bool
	}{
		{"SELECT * FROM t AS OF TIMESTAMP now()", "as of", true},
		{"select 1 as Of", "as of", true},
		{"select 'as'", "as of", false},
		{"as o", "as of", false},
		{"EXPLAIN UPSERT INTO t VALUES (1)", "upsert", true},
		{"EXPLAIN uPsErT", "upsert", true},
		{"!s of", "as of", false}, // '!'|0x20 is '!': no false match
		{"", "as of", false},
		{"x", "", true},
	} {
		if got := containsFold(c.s, c.sub); got != c.want {
			t.Errorf("containsFold(%q, %q) = %v, want %v", c.s, c.sub, got, c.want)
		}
	}
}
