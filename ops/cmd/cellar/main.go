// Command cellar is the one binary of cellar: every role and every tool is
// a subcommand. See "cellar help".
package main

import (
	"os"
	"runtime"

	"github.com/cellardb/cellar/ops/cli"
)

// version is set by the Makefile with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	oversubscribe(os.Getenv("GOMAXPROCS"))
	os.Exit(cli.Main(os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Version: version, Getenv: os.Getenv}))
}

// oversubscribe runs twice as many Ps as the runtime's default (the CPUs
// the process may use), unless GOMAXPROCS is set.
//
// cellar's servers mostly wait on sockets. With one P per CPU and every P
// busy, a request that arrives waits until some goroutine blocks and its P
// polls the network; no thread is asleep in epoll_wait for the kernel to
// wake. With spare Ps one is, so the kernel wakes it at once and schedules
// it against the busy threads, much as it wakes one PostgreSQL backend per
// connection. On the 2-core bench machine with pgbench on the same cores,
// six alternating rounds of the point SELECT read 25.8-27.8k tps (median
// 27.0k) with 2 Ps and 26.5-29.3k (median 29.0k) with 4, at less CPU a
// transaction, and pgbench blocked in ppoll 0.58 times a transaction
// instead of 0.87 (docs/benchmarks.md).
func oversubscribe(env string) {
	if env == "" {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
	}
}
