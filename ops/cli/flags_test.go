package cli

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/cellardb/cellar/coord/cell"
)

func TestParseFlagsMixesArgumentsAndReadsEnvironment(t *testing.T) {
	env := Env{Stderr: io.Discard, Getenv: func(k string) string {
		return map[string]string{"CELLAR_X_ADDR": "env:1", "CELLAR_X_LONG": "true"}[k]
	}}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "default:1", "")
	long := fs.Bool("long", false, "")
	n := fs.Int("n", 0, "")
	pos, err := parseFlags(fs, []string{"a", "-n", "3", "b", "--", "-c"}, env, "CELLAR_X")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pos, []string{"a", "b", "-c"}) || *addr != "env:1" || !*long || *n != 3 {
		t.Fatalf("pos %q addr %q long %v n %d", pos, *addr, *long, *n)
	}

	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr = fs.String("addr", "default:1", "")
	if _, err := parseFlags(fs, []string{"-addr", "flag:1"}, env, "CELLAR_X"); err != nil || *addr != "flag:1" {
		t.Fatalf("the command line must win: %q %v", *addr, err)
	}

	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("n", 0, "")
	bad := Env{Getenv: func(k string) string { return map[string]string{"CELLAR_X_N": "many"}[k] }}
	if _, err := parseFlags(fs, nil, bad, "CELLAR_X"); err == nil || !strings.Contains(err.Error(), "CELLAR_X_N") {
		t.Fatalf("a bad environment value must name its variable: %v", err)
	}
}

func TestParsePeers(t *testing.T) {
	peers, err := parsePeers("1=h:1/h:2, 2=h:3/h:4")
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]cell.Peer{1: {RaftAddr: "h:1", ClientAddr: "h:2"}, 2: {RaftAddr: "h:3", ClientAddr: "h:4"}}
	if !reflect.DeepEqual(peers, want) || formatPeers(peers) != "1=h:1/h:2,2=h:3/h:4" {
		t.Fatalf("%v %s", peers, formatPeers(peers))
	}
	for _, bad := range []string{"", "1=h:1", "0=h:1/h:2", "x=h:1/h:2", "1=h:1/h:2,1=h:3/h:4", "1=/h:2"} {
		if _, err := parsePeers(bad); err == nil {
			t.Errorf("parsePeers(%q) accepted", bad)
		}
	}
}

func TestChubbyRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"chubby"},
		{"chubby", "-id", "3", "-peers", "1=127.0.0.1:1/127.0.0.1:2"},
		{"chubby", "-id", "1", "-peers", "1=h:1"},
	} {
		code, _, stderr := run(args...)
		if code == 0 || !strings.Contains(stderr, "cellar chubby:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}
