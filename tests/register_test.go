package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"github.com/anishathalye/porcupine"
)

// A register per row: reads, blind writes and compare-and-swaps of one
// cell, through the Bigtable API. An operation whose outcome is unknown
// (an error other than a refused CAS) may take effect at any time after
// its call.
type rowInput struct {
	op       string // read, write, cas
	value    string // written (write, cas)
	expected string // cas
}

type rowOutput struct {
	value   string // read
	ok      bool   // cas: swapped
	unknown bool
}

var rowRegister = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byRow := map[string][]porcupine.Operation{}
		for _, op := range h {
			byRow[op.Metadata.(string)] = append(byRow[op.Metadata.(string)], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byRow {
			out = append(out, ops)
		}
		return out
	},
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(string), input.(rowInput), output.(rowOutput)
		switch {
		case out.unknown && in.op == "read":
			return []any{s}
		case out.unknown && in.op == "cas" && in.expected != s:
			return []any{s}
		case out.unknown:
			return []any{s, in.value}
		case in.op == "read" && out.value == s:
			return []any{s}
		case in.op == "write":
			return []any{in.value}
		case in.op == "cas" && out.ok && in.expected == s:
			return []any{in.value}
		case in.op == "cas" && !out.ok && in.expected != s:
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(rowInput), output.(rowOutput)
		if out.unknown {
			return fmt.Sprintf("%s(%q, %q) -> unknown", in.op, in.expected, in.value)
		}
		return fmt.Sprintf("%s(%q, %q) -> %q ok=%v", in.op, in.expected, in.value, out.value, out.ok)
	},
}

// createRegisterTable creates table with family f through the Bigtable
// admin API at BIGTABLE_EMULATOR_HOST.
func createRegisterTable(ctx context.Context, t *testing.T, table string) {
	t.Helper()
	admin, err := bigtable.NewAdminClient(ctx, "p", "i")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateColumnFamily(ctx, table, "f"); err != nil {
		t.Fatal(err)
	}
}

// registerLoad is the per-row register workload: clients read, write and
// compare-and-swap one cell of a few rows through the Bigtable API at
// BIGTABLE_EMULATOR_HOST, one request in flight each, and record the
// history for porcupine. Each client draws its operations from a PCG
// seeded with (its index, the load's seed).
type registerLoad struct {
	start time.Time
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu                        sync.Mutex
	history                   []porcupine.Operation
	acked, unknown, attempted int
}

func startRegisterLoad(ctx context.Context, t *testing.T, table string, rows []string, clients int, seed uint64) *registerLoad {
	l := &registerLoad{start: time.Now()}
	load, stop := context.WithCancel(ctx)
	l.stop = stop
	for c := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			client, err := bigtable.NewClient(ctx, "p", "i")
			if err != nil {
				t.Error(err)
				return
			}
			defer client.Close()
			tbl := client.Open(table)
			r := rand.New(rand.NewPCG(uint64(c), seed))
			for n := 0; load.Err() == nil; n++ {
				row := rows[r.IntN(len(rows))]
				value := fmt.Sprintf("c%d-%d", c, n)
				opCtx, opCancel := context.WithTimeout(ctx, 2*time.Second)
				call := time.Now()
				switch r.IntN(3) {
				case 0:
					got, err := tbl.ReadRow(opCtx, row, bigtable.RowFilter(bigtable.LatestNFilter(1)))
					out := rowOutput{unknown: err != nil}
					if err == nil {
						for _, it := range got["f"] {
							out.value = string(it.Value)
						}
					}
					l.record(c, row, rowInput{op: "read"}, out, call)
				case 1:
					m := bigtable.NewMutation()
					m.Set("f", "v", bigtable.ServerTime, []byte(value))
					err := tbl.Apply(opCtx, row, m)
					l.record(c, row, rowInput{op: "write", value: value}, rowOutput{unknown: err != nil}, call)
				default:
					// Swap from what this client last read of the row, or
					// from the empty register.
					expected := l.lastRead(c, row)
					var pred bigtable.Filter = bigtable.ChainFilters(bigtable.ColumnFilter("v"), bigtable.LatestNFilter(1),
						bigtable.ValueFilter("^"+regexp.QuoteMeta(expected)+"$"))
					set := bigtable.NewMutation()
					set.Set("f", "v", bigtable.ServerTime, []byte(value))
					var cond *bigtable.Mutation
					if expected == "" {
						// The empty register: the row has no cell yet.
						cond = bigtable.NewCondMutation(bigtable.ColumnFilter("v"), nil, set)
					} else {
						cond = bigtable.NewCondMutation(pred, set, nil)
					}
					var matched bool
					err := tbl.Apply(opCtx, row, cond, bigtable.GetCondMutationResult(&matched))
					swapped := matched == (expected != "")
					l.record(c, row, rowInput{op: "cas", value: value, expected: expected}, rowOutput{ok: swapped, unknown: err != nil}, call)
				}
				opCancel()
				time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
			}
		}()
	}
	return l
}

// record adds an operation; one whose outcome is unknown may take effect
// at any time after its call, so it never returns.
func (l *registerLoad) record(client int, row string, in rowInput, out rowOutput, call time.Time) {
	ret := time.Since(l.start).Nanoseconds()
	if out.unknown {
		ret = 1 << 62
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempted++
	if out.unknown {
		l.unknown++
	} else {
		l.acked++
	}
	l.history = append(l.history, porcupine.Operation{ClientId: client, Input: in, Output: out,
		Call: call.Sub(l.start).Nanoseconds(), Return: ret, Metadata: row})
}

// lastRead is what client last read of row, or "" if it read nothing.
func (l *registerLoad) lastRead(client int, row string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.history) - 1; i >= 0; i-- {
		h := l.history[i]
		if in := h.Input.(rowInput); h.Metadata == row && h.ClientId == client && in.op == "read" && !h.Output.(rowOutput).unknown {
			return h.Output.(rowOutput).value
		}
	}
	return ""
}

// end stops the clients and waits for them.
func (l *registerLoad) end() {
	l.stop()
	l.wg.Wait()
}

// longestGap is the longest stretch without an acknowledged operation
// that ends after from and by to (the zero time: no bound): the
// unavailability a fault caused. It also returns when that stretch began.
func (l *registerLoad) longestGap(from, to time.Time) (time.Duration, time.Time) {
	l.mu.Lock()
	var acks []int64
	for _, op := range l.history {
		if !op.Output.(rowOutput).unknown {
			acks = append(acks, op.Return)
		}
	}
	l.mu.Unlock()
	slices.Sort(acks)
	var window time.Duration
	var began time.Time
	after, by := int64(0), int64(1<<62)
	if !from.IsZero() {
		after = from.Sub(l.start).Nanoseconds()
	}
	if !to.IsZero() {
		by = to.Sub(l.start).Nanoseconds()
	}
	for i := 1; i < len(acks); i++ {
		if d := time.Duration(acks[i] - acks[i-1]); d > window && acks[i] > after && acks[i] <= by {
			window, began = d, l.start.Add(time.Duration(acks[i-1]))
		}
	}
	return window, began
}

// check checks every row's history with porcupine and fails the test if
// one is not linearizable, with the failing path drawn to an HTML file.
func (l *registerLoad) check(t *testing.T) porcupine.CheckResult {
	t.Helper()
	l.mu.Lock()
	history := slices.Clone(l.history)
	l.mu.Unlock()
	res, info := porcupine.CheckOperationsVerbose(rowRegister.ToModel(), history, time.Minute)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), "cellar-"+strings.ReplaceAll(t.Name(), "/", "-")+"-history.html")
		if f, err := os.Create(path); err == nil {
			porcupine.Visualize(rowRegister.ToModel(), info, f)
			f.Close()
		}
		t.Fatalf("the rows' history is not linearizable (%v); the failing path is drawn in %s", res, path)
	}
	return res
}
