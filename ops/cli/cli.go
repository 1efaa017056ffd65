// Package cli implements the subcommands of the cellar binary. Each
// subcommand parses its own flags and returns an exit status; nothing here
// keeps global state, so the commands can be run from tests.
package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Env is what a command may touch of its process.
type Env struct {
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Version string
	// Getenv reads the process environment (nil: an empty one).
	Getenv func(string) string
}

func (e Env) getenv(key string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(key)
}

type command struct {
	summary string
	run     func(args []string, env Env) int
}

func commands() map[string]command {
	return map[string]command{
		"demo":         {"run everything in one process, with data under ./cellar-data", runDemo},
		"version":      {"print the version", runVersion},
		"sstable":      {"inspect SSTable files: dump, check", runSSTable},
		"log":          {"inspect a commit log directory: dump", runLog},
		"chubby":       {"run one replica of a Chubby lock cell", runChubby},
		"lock":         {"browse and change a Chubby cell: ls, cat, stat, put, mkdir, rm, setacl, acquire", runLock},
		"tabletserver": {"run one tablet server, registered in the Chubby cell", runTabletServer},
		"master":       {"run a master (a standby until it takes the master lock)", runMaster},
		"gateway":      {"serve the PostgreSQL protocol and the Bigtable API for a running cluster", runGateway},
		"cluster":      {"run a multi-process cluster on loopback: up, down, status", runCluster},
		"table":        {"manage tables through the master: create, alter, drop, ls", runTable},
		"kv":           {"read and write rows through the client library: put, get, scan", runKV},
		"admin":        {"manage tables, tablets and the SQL gateway's users: table, tablets, split, move, compact, user", runAdmin},
		"load":         {"bulk-load CSV or JSON lines into a table, with progress; resumable", runLoad},
		"sqltest":      {"run sqllogictest files against a PostgreSQL-protocol endpoint and report differences", runSQLTest},
		"help":         {"show this help", nil},
	}
}

// Main runs the subcommand named by args[0] and returns the exit status.
func Main(args []string, env Env) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.Stdout, cmds)
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "cellar: unknown command %q\n\n", args[0])
		usage(env.Stderr, cmds)
		return 2
	}
	return c.run(args[1:], env)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "cellar is Bigtable and Chubby rebuilt in Go.")
	fmt.Fprintln(w, "\nUsage: cellar <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-13s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun \"cellar <command> -h\" for a command's flags.")
}

func runVersion(args []string, env Env) int {
	fmt.Fprintf(env.Stdout, "cellar %s\n", env.Version)
	return 0
}

// fail prints an error the way every command does and returns status 1.
func fail(env Env, cmd string, err error) int {
	msg := err.Error()
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprintf(env.Stderr, "cellar %s: %s", cmd, msg)
	return 1
}
