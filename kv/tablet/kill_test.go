package tablet

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
)

const killChildEnv = "CELLAR_KILL9_CHILD_DIR"

var killOptions = Options{MemtableSize: 64 << 10, BlockSize: 4 << 10, CompactionTrigger: 2,
	LogSegmentSize: 64 << 10, MaxLogSize: 1 << 20, SplitSize: 256 << 10}

// TestKill9KeepsAcknowledgedWrites runs a store in a child process on a
// real directory, with writers that report each write before they send it
// and after it is acknowledged, and kills the child with SIGKILL at a
// random moment. After each kill the parent opens the directory and checks
// that every acknowledged write is there and that every cell there was
// attempted.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	dir := t.TempDir()
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	tried := map[string]string{} // "row/qual/ts" -> value
	acked := map[string]bool{}
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir, "CELLAR_KILL9_ROUND="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		want := 200 + r.Intn(3000)
		sc := bufio.NewScanner(out)
		n := 0
		killed := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 {
				continue
			}
			switch f[0] {
			case "try":
				tried[f[1]] = f[2]
			case "ack":
				acked[f[1]] = true
				n++
			}
			if n >= want && !killed {
				// Kill, then keep reading: what the child reported before
				// it died is still in the pipe.
				cmd.Process.Kill()
				killed = true
			}
		}
		cmd.Wait()
		if n < want {
			t.Fatalf("round %d: child stopped after %d acknowledgements", round, n)
		}

		s := New(dfs.NewLocal(dir), "", killOptions)
		if err := s.Open(context.Background()); err != nil {
			t.Fatalf("round %d: open after kill -9: %v", round, err)
		}
		seen := map[string]bool{}
		scan := s.Scan(context.Background(), "t", model.RowRange{}, ReadOptions{})
		for scan.Next() {
			row := scan.Row()
			for _, c := range row.Cells {
				id := fmt.Sprintf("%s/%s/%d", row.Key, c.Qualifier, c.Timestamp)
				seen[id] = true
				if v, ok := tried[id]; !ok || v != string(c.Value) {
					t.Fatalf("round %d: cell %s = %q was never written (tried %q)", round, id, c.Value, v)
				}
			}
		}
		if err := scan.Err(); err != nil {
			t.Fatal(err)
		}
		scan.Close()
		for id := range acked {
			if !seen[id] {
				t.Fatalf("round %d: acknowledged write %s lost after kill -9", round, id)
			}
		}
		t.Logf("round %d: %d acknowledged, %d cells, %d tablets", round, len(acked), len(seen), len(s.Tablets()))
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKill9Child is the child process of TestKill9KeepsAcknowledgedWrites;
// run on its own it does nothing.
func TestKill9Child(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		return
	}
	round, _ := strconv.Atoi(os.Getenv("CELLAR_KILL9_ROUND"))
	ctx := context.Background()
	s := New(dfs.NewLocal(dir), "", killOptions)
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.Tables()) == 0 {
		if err := s.CreateTable(ctx, "t", model.Schema{Families: []model.Family{{Name: "a"}}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	report := func(kind, id, value string) {
		mu.Lock()
		fmt.Fprintf(w, "%s %s %s\n", kind, id, value)
		w.Flush()
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(round*100 + g)))
			qual := "w" + strconv.Itoa(g)
			for n := 0; ; n++ {
				row := fmt.Sprintf("row%04d", r.Intn(5000))
				ts := (int64(round)*10_000_000 + int64(n) + 1) * 1000
				value := fmt.Sprintf("v%d.%d.%d.%s", round, g, n, strings.Repeat("x", r.Intn(200)))
				id := fmt.Sprintf("%s/%s/%d", row, qual, ts)
				report("try", id, value)
				err := s.Apply(ctx, "t", &model.RowMutation{Row: []byte(row), Mutations: []model.Mutation{model.SetCell("a", []byte(qual), ts, []byte(value))}})
				if err != nil {
					t.Error(err)
					return
				}
				report("ack", id, value)
			}
		}(g)
	}
	wg.Wait()
}
