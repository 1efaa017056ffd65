package cli

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// The checks below run at a role's start, before it opens anything, so
// that a bad setting is reported at once by its flag name rather than as
// a failure deep inside.

// badSettings reports invalid settings and returns the usage status, 2.
func badSettings(env Env, cmd string, errs ...error) int {
	err := errors.Join(errs...)
	if err == nil {
		return 0
	}
	fmt.Fprintf(env.Stderr, "cellar %s: invalid settings:\n", cmd)
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(env.Stderr, "  %s\n", line)
	}
	return 2
}

// checkAddr checks a host:port with a numeric port; empty is allowed only
// if optional.
func checkAddr(flagName, v string, optional bool) error {
	if v == "" {
		if optional {
			return nil
		}
		return fmt.Errorf("-%s is required (host:port)", flagName)
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("-%s %q is not host:port", flagName, v)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("-%s %q: port %q is not a number from 0 to 65535", flagName, v, port)
	}
	return nil
}

// checkAddrList checks a comma-separated list of at least one host:port.
func checkAddrList(flagName, v string) error {
	list := splitList(v)
	if len(list) == 0 {
		return fmt.Errorf("-%s is required (host:port, comma-separated)", flagName)
	}
	var errs []error
	for _, a := range list {
		errs = append(errs, checkAddr(flagName, a, false))
	}
	return errors.Join(errs...)
}

// checkPositive checks a duration above zero.
func checkPositive(flagName string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("-%s %v must be above zero", flagName, d)
	}
	return nil
}

// checkNotNegative checks a size or count of zero or more.
func checkNotNegative(flagName string, n int64) error {
	if n < 0 {
		return fmt.Errorf("-%s %d must not be negative", flagName, n)
	}
	return nil
}

// checkPath checks that a required path is set.
func checkPath(flagName, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("-%s is required (a directory)", flagName)
	}
	return nil
}

// checkPair checks that two flags are set together or not at all.
func checkPair(a, av, b, bv string) error {
	if (av == "") != (bv == "") {
		return fmt.Errorf("-%s and -%s go together", a, b)
	}
	return nil
}
