package pgwire

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
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

// numericBinary is numeric_send's form of a value given as its fields.
func numericBinary(weight int16, sign, dscale uint16, digits ...uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(digits)))
	b = binary.BigEndian.AppendUint16(b, uint16(weight))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, dscale)
	for _, d := range digits {
		b = binary.BigEndian.AppendUint16(b, d)
	}
	return b
}

// TestDecodeNumeric reads binary numeric parameters as numeric_recv does:
// fraction digits beyond the display scale cut off (not rounded), no -0,
// zero groups before and after the digits given by the weight, PostgreSQL's
// 22P03 for a bad sign, scale or digit, and a 131072-digit value (the most
// numeric holds) in time linear in its digits. With CELLAR_PGEVAL_AGAINST,
// random values are also sent to PostgreSQL 15 and read back as text.
func TestDecodeNumeric(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{numericBinary(0, numericPos, 2, 1, 5678), "1.56"},
		{numericBinary(0, numericNeg, 2, 1, 5678), "-1.56"},
		{numericBinary(-1, numericNeg, 2, 12), "0.00"},
		{numericBinary(-1, numericPos, 6, 12), "0.001200"},
		{numericBinary(-2, numericPos, 9, 12), "0.000000120"},
		{numericBinary(2, numericPos, 0, 7), "700000000"},
		{numericBinary(1, numericPos, 3, 0, 42), "42.000"},
		{numericBinary(0, numericNeg, 0), "0"},
		{numericBinary(0, numericPos, 5), "0.00000"},
		{numericBinary(3, numericPos, 1, 12, 3456, 7890, 1234, 5000), "12345678901234.5"},
	} {
		got, err := decodeNumeric(c.b)
		if err != nil || got != pgtypes.Numeric(c.want) {
			t.Errorf("%x: %v (%v), want %s", c.b, got, err, c.want)
		}
	}
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{numericBinary(0, 0x1234, 0, 1), `22P03: invalid sign in external "numeric" value`},
		{numericBinary(0, numericPos, 0x4000, 1), `22P03: invalid scale in external "numeric" value`},
		{numericBinary(0, numericPos, 0, 10000), `22P03: invalid digit in external "numeric" value`},
		{numericBinary(0, numericPos, 0, 1)[:9], `08P01: incorrect binary data format in a numeric parameter`},
	} {
		_, err := decodeNumeric(c.b)
		if se := sqlstate.AsError(err); err == nil || se.Code+": "+se.Message != c.want {
			t.Errorf("%x: %v, want %s", c.b, err, c.want)
		}
	}
	big := make([]uint16, 32768)
	for i := range big {
		big[i] = 9999
	}
	v, err := decodeNumeric(numericBinary(32767, numericPos, 16383, big...))
	if s := string(v.(pgtypes.Numeric)); err != nil || len(s) != 131072+1+16383 || strings.Trim(s, "9.0") != "" {
		t.Fatalf("the largest numeric: %d characters, %v", len(s), err)
	}

	against := os.Getenv("CELLAR_PGEVAL_AGAINST")
	if against == "" {
		return
	}
	ctx := context.Background()
	pg := connect(t, "postgres://postgres@"+against+"/postgres?sslmode=disable")
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		digits := make([]uint16, r.Intn(8))
		for j := range digits {
			digits[j] = uint16([]int{0, 1, 9999, r.Intn(10000)}[r.Intn(4)])
		}
		b := numericBinary(int16(r.Intn(12)-6), []uint16{numericPos, numericNeg}[r.Intn(2)], uint16(r.Intn(20)), digits...)
		res := pg.PgConn().ExecParams(ctx, "SELECT $1::numeric::text", [][]byte{b}, []uint32{pgtypes.OIDNumeric}, []int16{1}, nil).Read()
		got, err := decodeNumeric(b)
		if res.Err != nil || err != nil || string(res.Rows[0][0]) != string(got.(pgtypes.Numeric)) {
			t.Fatalf("%x: ours %v (%v), PostgreSQL's %s (%v)", b, got, err, res.Rows, res.Err)
		}
	}
}
