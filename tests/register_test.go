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
	"github.com/cellardb/cellar/tests/chaos"
)

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
					out := chaos.RegisterOutput{Unknown: err != nil}
					if err == nil {
						for _, it := range got["f"] {
							out.Value = string(it.Value)
						}
					}
					l.record(c, row, chaos.RegisterInput{Op: "read", Door: "bigtable"}, out, call)
				case 1:
					m := bigtable.NewMutation()
					m.Set("f", "v", bigtable.ServerTime, []byte(value))
					err := tbl.Apply(opCtx, row, m)
					l.record(c, row, chaos.RegisterInput{Op: "write", Value: value, Door: "bigtable"}, chaos.RegisterOutput{Unknown: err != nil}, call)
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
					l.record(c, row, chaos.RegisterInput{Op: "cas", Value: value, Expected: expected, Door: "bigtable"}, chaos.RegisterOutput{Swapped: swapped, Unknown: err != nil}, call)
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
func (l *registerLoad) record(client int, row string, in chaos.RegisterInput, out chaos.RegisterOutput, call time.Time) {
	ret := time.Since(l.start).Nanoseconds()
	if out.Unknown {
		ret = 1 << 62
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempted++
	if out.Unknown {
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
		if in := h.Input.(chaos.RegisterInput); h.Metadata == row && h.ClientId == client && in.Op == "read" && !h.Output.(chaos.RegisterOutput).Unknown {
			return h.Output.(chaos.RegisterOutput).Value
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
		if !op.Output.(chaos.RegisterOutput).Unknown {
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
	nm := chaos.RegisterModel()
	model := nm.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, history, time.Minute)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), "cellar-"+strings.ReplaceAll(t.Name(), "/", "-")+"-history.html")
		if f, err := os.Create(path); err == nil {
			porcupine.Visualize(model, info, f)
			f.Close()
		}
		t.Fatalf("the rows' history is not linearizable (%v); the failing path is drawn in %s", res, path)
	}
	return res
}
