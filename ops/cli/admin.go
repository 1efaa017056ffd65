package cli

import (
	"bufio"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cellardb/cellar/pgwire"
)

// runAdmin manages what the gateway needs: today, its users.
func runAdmin(args []string, env Env) int {
	usage := "usage: cellar admin user add [-users FILE] [-superuser] [-md5] NAME   (the password is read from stdin)\n" + adminTablesUsage
	if len(args) > 0 && isAdminTableCommand(args[0]) {
		return runAdminTables(args, env)
	}
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(env.Stdout, usage)
		return 0
	}
	if len(args) < 2 || args[0] != "user" || args[1] != "add" {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("admin user add", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	file := fs.String("users", filepath.Join("cellar-data", "users.json"), "the users file the gateway reads")
	super := fs.Bool("superuser", false, "make the user a superuser")
	md5 := fs.Bool("md5", false, "also keep an md5 hash, for clients that only speak md5 authentication")
	pos, err := parseFlags(fs, args[2:], env, "CELLAR_ADMIN")
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return fail(env, "admin user add", fmt.Errorf("no password on stdin (%v)", err))
	}
	u, err := pgwire.NewUser(pos[0], password, *super, *md5)
	if err != nil {
		return fail(env, "admin user add", err)
	}
	if err := (&pgwire.FileUsers{Path: *file}).Put(u); err != nil {
		return fail(env, "admin user add", err)
	}
	fmt.Fprintf(env.Stdout, "user %s saved in %s (SCRAM-SHA-256, %d iterations)\n", pos[0], *file, pgwire.SCRAMIterations)
	return 0
}
