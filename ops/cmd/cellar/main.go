// Command cellar is the one binary of cellar: every role and every tool is
// a subcommand. See "cellar help".
package main

import (
	"os"

	"github.com/cellardb/cellar/ops/cli"
)

// version is set by the Makefile with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Version: version, Getenv: os.Getenv}))
}
