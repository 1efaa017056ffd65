package master

import (
	"fmt"
	"testing"

	"github.com/cellardb/cellar/kv/model"
)

func TestClipRows(t *testing.T) {
	row := func(table, start, end string) *model.TabletDescriptor {
		d := &model.TabletDescriptor{Table: table, Start: []byte(start)}
		if end != "" {
			d.End = []byte(end)
		}
		return d
	}
	show := func(rows []*model.TabletDescriptor) string {
		s := ""
		for _, d := range rows {
			s += fmt.Sprintf("%s[%s,%s) ", d.Table, d.Start, d.End)
		}
		return s
	}
	for _, c := range []struct {
		in   []*model.TabletDescriptor
		want string
	}{
		// Consistent rows stay as they are.
		{[]*model.TabletDescriptor{row("t", "", "g"), row("t", "g", "")}, "t[,g) t[g,) "},
		// A split whose second write was lost: the lower child and the
		// parent's row; the parent keeps the upper half.
		{[]*model.TabletDescriptor{row("t", "a", "g"), row("t", "a", "p"), row("t", "p", "")}, "t[a,g) t[g,p) t[p,) "},
		// A merge whose removal of the lower row was lost.
		{[]*model.TabletDescriptor{row("t", "", "g"), row("t", "", "")}, "t[,g) t[g,) "},
		// Rows of different tables never clip each other.
		{[]*model.TabletDescriptor{row("a", "", ""), row("b", "", "")}, "a[,) b[,) "},
	} {
		if got := show(clipRows(c.in)); got != c.want {
			t.Errorf("clipRows = %q, want %q", got, c.want)
		}
	}
}
