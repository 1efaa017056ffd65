package dfs

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand"
	"syscall"
	"testing"
)

func conformance(t *testing.T, f FS) {
	t.Helper()
	if err := f.MkdirAll("a/b"); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(f, "a/b/x", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(f, "a/b/x")
	if err != nil || string(got) != "hello" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if n, err := f.Stat("a/b/x"); err != nil || n != 5 {
		t.Fatalf("Stat = %d, %v", n, err)
	}
	if err := f.Rename("a/b/x", "a/b/y"); err != nil {
		t.Fatal(err)
	}
	names, err := f.List("a/b")
	if err != nil || len(names) != 1 || names[0] != "y" {
		t.Fatalf("List = %v, %v", names, err)
	}
	if names, _ := f.List("a"); len(names) != 1 || names[0] != "b" {
		t.Fatalf("List(a) = %v", names)
	}
	if _, err := f.Open("a/b/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a renamed file: %v", err)
	}
	w, err := f.Create("a/b/z")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("0123456789"))
	if err := w.Truncate(4); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("ab"))
	buf := make([]byte, 6)
	if _, err := w.ReadAt(buf, 0); err != nil || string(buf) != "0123ab" {
		t.Fatalf("after truncate: %q %v", buf, err)
	}
	w.Close()
	if err := f.Remove("a/b/z"); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove("a/b/z"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Remove: %v", err)
	}
	l1, err := f.Lock("LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lock("LOCK"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v", err)
	}
	l1.Close()
	l2, err := f.Lock("LOCK")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	l2.Close()
}

func TestLocalConformance(t *testing.T) { conformance(t, NewLocal(t.TempDir())) }
func TestMemConformance(t *testing.T)   { conformance(t, NewMem()) }

func TestLocalRejectsEscapes(t *testing.T) {
	l := NewLocal(t.TempDir())
	if _, err := l.Create("../evil"); err == nil {
		t.Fatal("Create(../evil) succeeded")
	}
}

func TestMemCrashDropsUnsynced(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	f, _ := m.Create("d/synced")
	f.Write([]byte("durable"))
	f.Sync()
	f.Write([]byte("-lost"))
	m.SyncDir("d")
	g, _ := m.Create("d/unsynced-entry")
	g.Write([]byte("x"))
	g.Sync()

	m.Crash(CrashOptions{})
	if got, _ := ReadFile(m, "d/synced"); string(got) != "durable" {
		t.Fatalf("synced file after crash = %q", got)
	}
	if _, err := m.Open("d/unsynced-entry"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file whose directory entry was never synced survived: %v", err)
	}
	if _, err := f.Write([]byte("more")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("write through a pre-crash handle: %v", err)
	}
}

func TestMemCrashTearsTail(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	torn := 0
	for i := 0; i < 50; i++ {
		m := NewMem()
		f, _ := m.Create("f")
		f.Write([]byte("base"))
		f.Sync()
		m.SyncDir("")
		f.Write(bytes.Repeat([]byte{'t'}, 100))
		m.Crash(CrashOptions{Rand: r})
		got, _ := ReadFile(m, "f")
		if !bytes.HasPrefix(got, []byte("base")) || len(got) > 104 {
			t.Fatalf("crash lost synced data or grew the file: %q", got)
		}
		if len(got) > 4 && len(got) < 104 {
			torn++
		}
	}
	if torn == 0 {
		t.Fatal("no torn tails in 50 crashes")
	}
}

func TestMemTruncateBelowSyncedRevertsAtCrash(t *testing.T) {
	m := NewMem()
	f, _ := m.Create("f")
	f.Write([]byte("abcdef"))
	f.Sync()
	m.SyncDir("")
	f.Truncate(2)
	m.Crash(CrashOptions{})
	if got, _ := ReadFile(m, "f"); string(got) != "abcdef" {
		t.Fatalf("unsynced truncate survived a crash: %q", got)
	}
}

func TestMemFaults(t *testing.T) {
	m := NewMem()
	m.SetCapacity(10)
	f, _ := m.Create("f")
	n, err := f.Write(make([]byte, 16))
	if n != 10 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past capacity: n=%d err=%v", n, err)
	}
	m.SetFaultHook(func(op Op, name string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("injected sync failure: %v", err)
	}
	m.SetFaultHook(nil)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
