package dfs

import (
	"bytes"
	"errors"
	"io/fs"
	"testing"
	"time"
)

func TestFaultyConformance(t *testing.T) {
	t.Run("mem", func(t *testing.T) { conformance(t, NewFaulty(NewMem())) })
	t.Run("local", func(t *testing.T) { conformance(t, NewFaulty(NewLocal(t.TempDir()))) })
}

// faultyHistory writes through f: a synced and dir-synced file with an
// unsynced tail, a closed file with an unsynced tail, a file whose
// creation was never made durable, and one renamed over an existing name.
func faultyHistory(t *testing.T, f *Faulty) {
	t.Helper()
	if err := f.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	a, err := f.Create("d/a")
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("durable"))
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncDir("d"); err != nil {
		t.Fatal(err)
	}
	a.Write(bytes.Repeat([]byte{'a'}, 200))

	b, _ := f.Create("d/b")
	b.Write([]byte("kept"))
	b.Sync()
	f.SyncDir("d")
	b.Write(bytes.Repeat([]byte{'b'}, 100))
	b.Close() // closed with an unsynced tail: a crash still cuts it

	if err := WriteFile(f, "d/current", []byte("old")); err != nil {
		t.Fatal(err)
	}
	tmp, _ := f.Create("d/tmp")
	tmp.Write([]byte("new"))
	tmp.Sync()
	tmp.Close()
	if err := f.Rename("d/tmp", "d/current"); err != nil {
		t.Fatal(err)
	}
	c, _ := f.Create("d/c")
	c.Write([]byte("never in the directory"))
	c.Sync()
	c.Close()
}

func TestFaultyCrashDropsUnsynced(t *testing.T) {
	m := NewMem()
	f := NewFaulty(m)
	faultyHistory(t, f)
	st, err := f.Crash(FaultyCrash{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadFile(m, "d/a"); string(got) != "durable" {
		t.Fatalf("d/a after the crash = %q, want its synced part", got)
	}
	if got, _ := ReadFile(m, "d/b"); string(got) != "kept" {
		t.Fatalf("d/b after the crash = %q, want its synced part", got)
	}
	if _, err := m.Stat("d/c"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file whose creation was never durable survived: %v", err)
	}
	if got, _ := ReadFile(m, "d/current"); string(got) != "new" {
		t.Fatalf("a file renamed over an existing one = %q, want its new content", got)
	}
	if st.Cut != 2 || st.Removed != 1 || st.TornBytes != 0 {
		t.Fatalf("stats %+v, want 2 files cut, 1 removed, nothing torn", st)
	}
	if _, err := f.Create("d/x"); !errors.Is(err, ErrPowerLoss) {
		t.Fatalf("Create after the crash: %v", err)
	}
	if _, err := f.Stat("d/a"); !errors.Is(err, ErrPowerLoss) {
		t.Fatalf("Stat after the crash: %v", err)
	}
}

func TestFaultyCrashTearsDeterministically(t *testing.T) {
	run := func(seed int64) ([]byte, FaultyStats) {
		m := NewMem()
		f := NewFaulty(m)
		faultyHistory(t, f)
		st, err := f.Crash(FaultyCrash{Torn: true, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := ReadFile(m, "d/a")
		b, _ := ReadFile(m, "d/b")
		return append(append(a, '|'), b...), st
	}
	torn, garbled := 0, 0
	for seed := int64(1); seed <= 40; seed++ {
		got, st := run(seed)
		again, _ := run(seed)
		if !bytes.Equal(got, again) {
			t.Fatalf("seed %d: two crashes differ:\n%q\n%q", seed, got, again)
		}
		a, b, _ := bytes.Cut(got, []byte("|"))
		if !bytes.HasPrefix(a, []byte("durable")) || len(a) > 207 || !bytes.HasPrefix(b, []byte("kept")) || len(b) > 104 {
			t.Fatalf("seed %d: a crash lost synced data or grew a file: %q", seed, got)
		}
		if st.TornBytes > 0 {
			torn++
		}
		if bytes.ContainsFunc(a[7:], func(r rune) bool { return r != 'a' }) || bytes.ContainsFunc(b[4:], func(r rune) bool { return r != 'b' }) {
			garbled++
		}
	}
	if torn == 0 || garbled == 0 {
		t.Fatalf("in 40 seeded crashes, %d kept a torn tail and %d garbled one; want some of each", torn, garbled)
	}
}

func TestFaultyFailSyncs(t *testing.T) {
	m := NewMem()
	f := NewFaulty(m)
	f.MkdirAll("log")
	f.MkdirAll("sst")
	lg, _ := f.Create("log/1")
	f.SyncDir("log")
	lg.Write([]byte("acked;"))
	if err := lg.Sync(); err != nil {
		t.Fatal(err)
	}
	f.FailSyncs(2, "log/")
	sst, _ := f.Create("sst/1")
	f.SyncDir("sst")
	sst.Write([]byte("table"))
	if err := sst.Sync(); err != nil {
		t.Fatalf("a sync outside the prefix failed: %v", err)
	}
	lg.Write([]byte("failed;"))
	if err := lg.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("first sync under the rule: %v", err)
	}
	if err := lg.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("second sync under the rule: %v", err)
	}
	// The rule is used up: the next sync succeeds, but the bytes whose
	// sync failed stay lost, as on Linux.
	lg.Write([]byte("later;"))
	if err := lg.Sync(); err != nil {
		t.Fatalf("third sync: %v", err)
	}
	if st := f.Stats(); st.FailedSyncs != 2 {
		t.Fatalf("FailedSyncs = %d, want 2", st.FailedSyncs)
	}
	f.FailSyncs(-1, "")
	for range 3 {
		if err := sst.Sync(); !errors.Is(err, ErrInjected) {
			t.Fatalf("sync under a rule without end: %v", err)
		}
	}
	f.ClearFaults()
	if err := sst.Sync(); err != nil {
		t.Fatalf("sync after ClearFaults: %v", err)
	}
	if _, err := f.Crash(FaultyCrash{}); err != nil {
		t.Fatal(err)
	}
	want := "acked;" + string(make([]byte, len("failed;"))) + "later;"
	if got, _ := ReadFile(m, "log/1"); string(got) != want {
		t.Fatalf("log after the crash = %q, want %q", got, want)
	}
	if got, _ := ReadFile(m, "sst/1"); string(got) != "table" {
		t.Fatalf("sst after the crash = %q", got)
	}
}

func TestFaultyRemoveAndTruncate(t *testing.T) {
	m := NewMem()
	f := NewFaulty(m)
	g, _ := f.Create("gone")
	g.Write([]byte("x"))
	g.Close()
	if err := f.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	h, _ := f.Create("h")
	f.SyncDir("")
	h.Write([]byte("0123456789"))
	h.Sync()
	h.Truncate(4)
	h.Write([]byte("ab"))
	if _, err := f.Crash(FaultyCrash{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadFile(m, "h"); string(got) != "0123" {
		t.Fatalf("after a truncate and an unsynced append = %q, want the truncated synced part", got)
	}
	if _, err := m.Stat("gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a removed file came back: %v", err)
	}
}

func TestFaultyStallSyncsUntilCrash(t *testing.T) {
	m := NewMem()
	f := NewFaulty(m)
	f.MkdirAll("logs")
	w, _ := f.Create("logs/1")
	f.SyncDir("logs")
	w.Write([]byte("synced;"))
	w.Sync()
	f.StallSyncs("logs/")
	w.Write([]byte("stalled"))
	done := make(chan error, 1)
	go func() { done <- w.Sync() }()
	select {
	case err := <-done:
		t.Fatalf("a stalled sync returned %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	st, err := f.Crash(FaultyCrash{})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrPowerLoss) {
		t.Fatalf("a sync stalled across the crash returned %v", err)
	}
	if got, _ := ReadFile(m, "logs/1"); string(got) != "synced;" || st.Cut != 1 {
		t.Fatalf("after the crash the log holds %q (%+v)", got, st)
	}
}

func TestFaultyClearReleasesStalledSyncs(t *testing.T) {
	f := NewFaulty(NewMem())
	w, _ := f.Create("x")
	f.StallSyncs("")
	w.Write([]byte("x"))
	done := make(chan error, 1)
	go func() { done <- w.Sync() }()
	f.ClearFaults()
	if err := <-done; err != nil {
		t.Fatalf("a sync released by ClearFaults: %v", err)
	}
}
