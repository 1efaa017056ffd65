package chaos

import (
	"bytes"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestRegisterModel checks the register model on small histories: an
// acknowledged write must be read back, an unknown one may or may not
// be, a compare-and-swap's answer must fit the value it compared, and a
// failing history is drawn.
func TestRegisterModel(t *testing.T) {
	type op struct {
		client    int
		row       string
		call, ret int64
		in        RegisterInput
		out       RegisterOutput
	}
	check := func(ops []op) (porcupine.CheckResult, *bytes.Buffer) {
		r := NewRecorder()
		for _, o := range ops {
			r.register = append(r.register, porcupine.Operation{ClientId: o.client, Input: o.in, Output: o.out,
				Call: o.call, Return: map[bool]int64{false: o.ret, true: 1 << 62}[o.out.Unknown], Metadata: o.row})
		}
		var html bytes.Buffer
		res, _, err := r.CheckRegister(time.Minute, &html)
		if err != nil {
			t.Fatal(err)
		}
		return res, &html
	}
	write := func(v string) RegisterInput { return RegisterInput{Op: "write", Value: v} }
	read := RegisterInput{Op: "read"}
	cas := func(from, to string) RegisterInput { return RegisterInput{Op: "cas", Expected: from, Value: to} }
	for _, tc := range []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"read your write", []op{{0, "a", 0, 1, write("x"), RegisterOutput{}}, {1, "a", 2, 3, read, RegisterOutput{Value: "x"}}}, porcupine.Ok},
		{"lost write", []op{{0, "a", 0, 1, write("x"), RegisterOutput{}}, {1, "a", 2, 3, read, RegisterOutput{Value: ""}}}, porcupine.Illegal},
		{"unknown write applied", []op{{0, "a", 0, 1, write("x"), RegisterOutput{Unknown: true}}, {1, "a", 2, 3, read, RegisterOutput{Value: "x"}}}, porcupine.Ok},
		{"unknown write not applied", []op{{0, "a", 0, 1, write("x"), RegisterOutput{Unknown: true}}, {1, "a", 2, 3, read, RegisterOutput{}}}, porcupine.Ok},
		{"value never written", []op{{1, "a", 2, 3, read, RegisterOutput{Value: "y"}}}, porcupine.Illegal},
		{"cas from empty", []op{{0, "a", 0, 1, cas("", "x"), RegisterOutput{Swapped: true}}, {1, "a", 2, 3, read, RegisterOutput{Value: "x"}}}, porcupine.Ok},
		{"cas refused wrongly", []op{{0, "a", 0, 1, cas("", "x"), RegisterOutput{Swapped: false}}}, porcupine.Illegal},
		{"rows apart", []op{{0, "a", 0, 1, write("x"), RegisterOutput{}}, {1, "b", 2, 3, read, RegisterOutput{}}}, porcupine.Ok},
	} {
		res, html := check(tc.ops)
		if res != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, res, tc.want)
		}
		if res == porcupine.Illegal && html.Len() == 0 {
			t.Errorf("%s: no drawing of the failing history", tc.name)
		}
	}
}
