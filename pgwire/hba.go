package pgwire

import (
	"fmt"
	"net"
	"strings"
)

// Authentication methods, as pg_hba.conf names them.
const (
	MethodTrust    = "trust"
	MethodPassword = "password"
	MethodMD5      = "md5"
	MethodSCRAM    = "scram-sha-256"
	MethodReject   = "reject"
)

// Rule chooses an authentication method for connections, like a line of
// pg_hba.conf. The first rule that matches a connection applies; none
// matching means reject.
type Rule struct {
	// Source is "local" (loopback addresses), "all", or a CIDR.
	Source string
	// User and Database are a name, or "" / "all" for any.
	User, Database string
	Method         string
}

// DemoRules are cellar demo's rules: trust for user cellar on database
// cellar from loopback, SCRAM for everything else.
func DemoRules() []Rule {
	return []Rule{
		{Source: "local", User: "cellar", Database: "cellar", Method: MethodTrust},
		{Source: "all", Method: MethodSCRAM},
	}
}

func (r Rule) validate() error {
	switch r.Method {
	case MethodTrust, MethodPassword, MethodMD5, MethodSCRAM, MethodReject:
	default:
		return fmt.Errorf("pgwire: unknown authentication method %q", r.Method)
	}
	if r.Source != "local" && r.Source != "all" {
		if _, _, err := net.ParseCIDR(r.Source); err != nil {
			return fmt.Errorf("pgwire: rule source %q is neither local, all nor a CIDR", r.Source)
		}
	}
	return nil
}

func (r Rule) matches(addr net.Addr, user, database string) bool {
	any := func(v string) bool { return v == "" || v == "all" }
	if !any(r.User) && r.User != user || !any(r.Database) && r.Database != database {
		return false
	}
	ip := addrIP(addr)
	switch r.Source {
	case "all":
		return true
	case "local":
		return ip != nil && ip.IsLoopback() || isUnix(addr)
	}
	_, n, err := net.ParseCIDR(r.Source)
	return err == nil && ip != nil && n.Contains(ip)
}

func addrIP(a net.Addr) net.IP {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return nil
	}
	return net.ParseIP(strings.Trim(host, "[]"))
}

func isUnix(a net.Addr) bool { return a != nil && a.Network() == "unix" }

// methodFor returns the method of the first matching rule.
func methodFor(rules []Rule, addr net.Addr, user, database string) string {
	for _, r := range rules {
		if r.matches(addr, user, database) {
			return r.Method
		}
	}
	return MethodReject
}
