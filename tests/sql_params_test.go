package tests

import (
	"slices"
	"testing"
)

// TestPreparedParamTypes: a Parse that gives 0 (unspecified) for every
// parameter's type, as psqlODBC's does, gets each parameter typed by
// where it is used, as a Parse that gives none does.
func TestPreparedParamTypes(t *testing.T) {
	ctx, _, c := pgxOnDemo(t)
	if _, err := c.Exec(ctx, `CREATE TABLE ptypes (id BIGINT PRIMARY KEY, name TEXT, score DOUBLE PRECISION, ok BOOLEAN, at TIMESTAMPTZ, raw BYTEA)`); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		sql  string
		want []uint32
	}{
		{`INSERT INTO ptypes VALUES ($1, $2, $3, $4, $5, $6)`, []uint32{20, 25, 701, 16, 1184, 17}},
		{`INSERT INTO ptypes (raw, id, score) VALUES ($1, $2, $3 + 1)`, []uint32{17, 20, 23}},
		{`UPDATE ptypes SET score = $1, ok = $2 WHERE id = $3`, []uint32{701, 16, 20}},
		{`UPDATE ptypes SET at = $2 WHERE id = $1 RETURNING name`, []uint32{20, 1184}},
		{`INSERT INTO ptypes (id, score) SELECT id + 100, $1 FROM ptypes WHERE id = $2 ON CONFLICT (id) DO UPDATE SET raw = $3`, []uint32{701, 20, 17}},
		{`DELETE FROM ptypes WHERE id = $1 AND ok = $2`, []uint32{20, 16}},
	} {
		for _, given := range [][]uint32{nil, make([]uint32, len(tc.want))} {
			sd, err := c.PgConn().Prepare(ctx, "", tc.sql, given)
			if err != nil {
				t.Fatalf("%d %s: %v", i, tc.sql, err)
			}
			if !slices.Equal(sd.ParamOIDs, tc.want) {
				t.Errorf("%s, given %v: parameter types %v, want %v", tc.sql, given, sd.ParamOIDs, tc.want)
			}
		}
	}
}
