package model

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func TestValueRoundTrip(t *testing.T) {
	ts := time.Date(2026, 11, 22, 8, 0, 0, 123456000, time.UTC)
	for _, c := range []struct {
		t ValueType
		v any
		n int // encoded size, -1 for any
	}{
		{TypeInt8, int64(math.MinInt64), 8}, {TypeInt8, int64(42), 8}, {TypeInt4, int64(-7), 8}, {TypeInt2, int64(300), 8},
		{TypeFloat8, 1.5, 8}, {TypeFloat8, math.Inf(-1), 8}, {TypeFloat4, 0.25, 4},
		{TypeBool, true, 1}, {TypeBool, false, 1},
		{TypeTimestamptz, ts, 8}, {TypeDate, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), 4},
		{TypeUUID, [16]byte{1, 2, 3}, 16}, {TypeNumeric, "-12.50", -1}, {TypeText, "héllo", -1},
		{TypeNumeric, "NaN", 3}, {TypeNumeric, "Infinity", 8}, {TypeNumeric, "-Infinity", 9},
		{TypeBytea, []byte{0, 1, 2}, 3}, {TypeJSONB, `{"a":1}`, -1},
	} {
		b, err := EncodeValue(c.t, c.v)
		if err != nil {
			t.Fatalf("%s %v: %v", c.t, c.v, err)
		}
		if c.n >= 0 && len(b) != c.n {
			t.Fatalf("%s %v: %d bytes", c.t, c.v, len(b))
		}
		got, err := DecodeValue(c.t, b)
		if err != nil || !reflect.DeepEqual(got, c.v) {
			t.Fatalf("%s: %v round-tripped to %v (%v)", c.t, c.v, got, err)
		}
	}
	// BIGINT is the 8-byte big-endian form that Bigtable's Increment uses.
	if b, _ := EncodeValue(TypeInt8, int64(1)); !bytes.Equal(b, []byte{0, 0, 0, 0, 0, 0, 0, 1}) {
		t.Fatalf("BIGINT 1 is %x", b)
	}
	if _, err := EncodeValue(TypeInt4, int64(math.MaxInt32)+1); err == nil {
		t.Fatal("an INTEGER out of range was stored")
	}
	for _, bad := range []string{"1/2", "0x10", "Infinityx", ""} {
		if _, err := EncodeValue(TypeNumeric, bad); err == nil {
			t.Fatalf("%q was stored as NUMERIC", bad)
		}
	}
	if _, err := EncodeValue(TypeText, "\xff"); err == nil {
		t.Fatal("invalid UTF-8 was stored as TEXT")
	}
	if _, err := DecodeValue(TypeInt8, []byte{1, 2}); err == nil {
		t.Fatal("a 2-byte BIGINT cell was read")
	}
}

// TestKeyOrder: encoded keys sort as their values do, column by column,
// and decode back.
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	types := []ValueType{TypeInt8, TypeFloat8, TypeText, TypeBytea, TypeBool, TypeTimestamptz, TypeUUID, TypeDate}
	randValue := func(ty ValueType) any {
		switch ty {
		case TypeInt8:
			return []int64{math.MinInt64, -1, 0, 1, math.MaxInt64, r.Int64() - r.Int64()}[r.IntN(6)]
		case TypeFloat8:
			return []float64{math.Inf(-1), -1.5, -0.0, 0, 1e-300, 2.5, math.Inf(1), r.NormFloat64()}[r.IntN(8)]
		case TypeText:
			b := make([]byte, r.IntN(4))
			for i := range b {
				b[i] = "a\x00b"[r.IntN(3)]
			}
			return string(b)
		case TypeBytea:
			b := make([]byte, r.IntN(4))
			for i := range b {
				b[i] = []byte{0, 1, 0xff}[r.IntN(3)]
			}
			return b
		case TypeBool:
			return r.IntN(2) == 1
		case TypeTimestamptz:
			return time.UnixMicro(r.Int64N(1<<50) - 1<<49).UTC()
		case TypeDate:
			return time.Unix(int64(r.IntN(200000)-100000)*86400, 0).UTC()
		case TypeUUID:
			var u [16]byte
			u[r.IntN(16)] = byte(r.IntN(256))
			return u
		}
		return nil
	}
	cmp := func(ty ValueType, a, b any) int {
		switch ty {
		case TypeInt8:
			return compareOrdered(a.(int64), b.(int64))
		case TypeFloat8:
			x, y := a.(float64), b.(float64)
			if x == 0 && y == 0 {
				return compareOrdered(boolInt(math.Signbit(y)), boolInt(math.Signbit(x))) // -0 before +0
			}
			return compareOrdered(x, y)
		case TypeText:
			return bytes.Compare([]byte(a.(string)), []byte(b.(string)))
		case TypeBytea:
			return bytes.Compare(a.([]byte), b.([]byte))
		case TypeBool:
			return compareOrdered(boolInt(a.(bool)), boolInt(b.(bool)))
		case TypeTimestamptz, TypeDate:
			return a.(time.Time).Compare(b.(time.Time))
		case TypeUUID:
			x, y := a.([16]byte), b.([16]byte)
			return bytes.Compare(x[:], y[:])
		}
		return 0
	}
	for round := 0; round < 2000; round++ {
		cols := make([]ValueType, 1+r.IntN(3))
		for i := range cols {
			cols[i] = types[r.IntN(len(types))]
		}
		var a, b []any
		for _, ty := range cols {
			a, b = append(a, randValue(ty)), append(b, randValue(ty))
		}
		want := 0
		for i, ty := range cols {
			if want = cmp(ty, a[i], b[i]); want != 0 {
				break
			}
		}
		ka, kb := encodeTuple(t, cols, a), encodeTuple(t, cols, b)
		if got := bytes.Compare(ka, kb); sign(got) != sign(want) {
			t.Fatalf("%v: %v vs %v compare %d as keys, %d as values", cols, a, b, got, want)
		}
		back, err := DecodeKeyValues(ka, cols)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cols {
			if cmp(cols[i], back[i], a[i]) != 0 {
				t.Fatalf("%v: %v decoded as %v", cols, a, back)
			}
		}
	}
}

func encodeTuple(t *testing.T, cols []ValueType, vals []any) []byte {
	var k []byte
	for i, ty := range cols {
		var err error
		if k, err = AppendKeyValue(k, ty, vals[i]); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

func compareOrdered[T int64 | float64 | int](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}
