package pgeval

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestDbgBlock(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BLOCK"))
	if n == 0 {
		return
	}
	cat := &memCatalog{rels: map[string]Relation{}}
	loadFixture(t, cat)
	env := testEnv(cat)
	env.SortBudget = 0
	b := biBlocks(t)[n-1]
	t.Log(b)
	for _, s := range strings.Split(b, ";\n") {
		if strings.TrimSpace(s) != "" {
			t.Log(runQuery(env, s, nil, 0))
		}
	}
}
