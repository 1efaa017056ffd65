package cli

import (
	"fmt"
)

// runAdmin manages what the gateway and the tablet servers need: users,
// per-family ACLs and Bigtable API tokens (admin_acl.go).
func runAdmin(args []string, env Env) int {
	if len(args) > 0 && isAdminTableCommand(args[0]) {
		return runAdminTables(args, env)
	}
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(env.Stdout, adminACLUsage+"\n"+adminTablesUsage)
		return 0
	}
	if code, ok := runAdminACL(args, env); ok {
		return code
	}
	fmt.Fprintln(env.Stderr, adminACLUsage+"\n"+adminTablesUsage)
	return 2
}
