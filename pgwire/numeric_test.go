package pgwire

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cellardb/cellar/query/pgtypes"
)

// TestNumericSpecialsBinary: numeric's NaN and infinities are the sign
// words 0xC000, 0xD000 and 0xF000 with no digits, as numeric_send writes
// them and numeric_recv reads them; an unknown sign word is refused.
func TestNumericSpecialsBinary(t *testing.T) {
	for _, c := range []struct {
		n    pgtypes.Numeric
		want string
	}{
		{pgtypes.NumericNaN, "00000000c0000000"},
		{pgtypes.NumericPosInf, "00000000d0000020"},
		{pgtypes.NumericNegInf, "00000000f0000020"},
		{"-1.50", "000200004000000200011388"},
	} {
		b, err := encodeBinary(pgtypes.OIDNumeric, c.n)
		if err != nil || fmt.Sprintf("%x", b) != c.want {
			t.Errorf("%s: %x (%v), want %s", c.n, b, err, c.want)
		}
		if back, err := decodeBinary(pgtypes.OIDNumeric, b); err != nil || back != c.n {
			t.Errorf("%s read back as %v (%v)", c.n, back, err)
		}
	}
	// Any dscale goes with an infinity's sign word.
	if v, err := decodeBinary(pgtypes.OIDNumeric, []byte{0, 0, 0, 0, 0xD0, 0, 0, 0}); err != nil || v != pgtypes.NumericPosInf {
		t.Errorf("infinity without dscale: %v, %v", v, err)
	}
	if _, err := decodeBinary(pgtypes.OIDNumeric, []byte{0, 0, 0, 0, 0x80, 0, 0, 0}); err == nil {
		t.Error("sign word 0x8000 was read")
	}
}

// TestNumericInfinityWire sends numeric infinities as parameters in
// binary and text and reads them back in both formats through pgx; with
// CELLAR_PGEVAL_AGAINST it also compares the binary results byte for
// byte with PostgreSQL 15's.
func TestNumericInfinityWire(t *testing.T) {
	ctx := context.Background()
	addr := startServer(t, Options{})
	c := connect(t, fmt.Sprintf("postgres://cellar@%s/cellar?sslmode=disable", addr))
	for _, mode := range []string{"binary", "text"} {
		for _, want := range []pgtype.Numeric{{InfinityModifier: pgtype.Infinity, Valid: true}, {InfinityModifier: pgtype.NegativeInfinity, Valid: true}, {NaN: true, Valid: true}} {
			var got pgtype.Numeric
			var s string
			arg := any(want)
			if mode == "text" {
				v, _ := want.Value()
				arg = v
			}
			if err := c.QueryRow(ctx, `SELECT $1::numeric, ($1::numeric)::text`, arg).Scan(&got, &s); err != nil {
				t.Fatalf("%s %+v: %v", mode, want, err)
			}
			if got.InfinityModifier != want.InfinityModifier || got.NaN != want.NaN || !got.Valid {
				t.Errorf("%s: %+v came back as %+v (%s)", mode, want, got, s)
			}
		}
	}
	against := os.Getenv("CELLAR_PGEVAL_AGAINST")
	if against == "" {
		return
	}
	pg := connect(t, "postgres://postgres@"+against+"/postgres?sslmode=disable")
	sql := `SELECT 'Infinity'::numeric, '-inf'::numeric, 'NaN'::numeric, 'inf'::numeric * -1, 1 / '-inf'::numeric, ARRAY['inf'::numeric, 1.5, '-inf']`
	a := c.PgConn().ExecParams(ctx, sql, nil, nil, nil, []int16{1}).Read()
	b := pg.PgConn().ExecParams(ctx, sql, nil, nil, nil, []int16{1}).Read()
	if a.Err != nil || b.Err != nil {
		t.Fatal(a.Err, b.Err)
	}
	for i := range b.Rows[0] {
		if string(a.Rows[0][i]) != string(b.Rows[0][i]) {
			t.Errorf("col %d: ours %x pg %x", i, a.Rows[0][i], b.Rows[0][i])
		}
	}
}
