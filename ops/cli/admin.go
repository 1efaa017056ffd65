package cli

import (
	"fmt"
)

// runAdmin manages what the gateway and the tablet servers need: users,
// per-family ACLs and Bigtable API tokens (admin_acl.go).
func runAdmin(args []string, env Env) int {
	if code, ok := runAdminACL(args, env); ok {
		return code
	}
	fmt.Fprintln(env.Stderr, adminACLUsage)
	return 2
}
