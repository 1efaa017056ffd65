package cli

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestClusterCommandErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cluster"}, 2, "usage: cellar cluster up|down|status"},
		{[]string{"cluster", "sideways"}, 2, `unknown subcommand "sideways"`},
		{[]string{"cluster", "status", "-dir", dir}, 1, "no cluster in " + dir},
		{[]string{"cluster", "down", "-dir", dir}, 1, "no cluster in " + dir},
		{[]string{"cluster", "up", "-dir", dir, "-base-port", "65530"}, 2, "-base-port 65530: the cluster needs ports 65530 to 65572"},
		{[]string{"cluster", "up", "-dir", dir, "-wait", "0s"}, 2, "-wait 0s must be above zero"},
		{[]string{"cluster", "down", "-dir", dir, "-timeout", "-1s"}, 2, "-timeout -1s must be above zero"},
	} {
		code, _, stderr := run(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

func TestClusterPlanAndChildEnv(t *testing.T) {
	st, err := planCluster("/c", "127.0.0.1", 15000)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, p := range st.Procs {
		roles[p.Role]++
	}
	if !reflect.DeepEqual(roles, map[string]int{"chubby": 3, "master": 2, "tabletserver": 3, "gateway": 1}) {
		t.Fatalf("roles %v", roles)
	}
	if st.Chubby != "127.0.0.1:15000,127.0.0.1:15001,127.0.0.1:15002" || st.PG != "127.0.0.1:15040" || st.Bigtable != "127.0.0.1:15041" {
		t.Fatalf("addresses: %+v", st)
	}
	if got := st.Procs[0].Settings[1][1]; got != "1=127.0.0.1:15010/127.0.0.1:15000,2=127.0.0.1:15011/127.0.0.1:15001,3=127.0.0.1:15012/127.0.0.1:15002" {
		t.Fatalf("peers %q", got)
	}
	env := childEnv([]string{"PATH=/bin", "CELLAR_MASTER_LISTEN=x", "CELLAR_TABLETSERVER_DFS=y", "CELLAR_CLUSTER_DIR=z", "HOME=/h"})
	if !reflect.DeepEqual(env, []string{"PATH=/bin", "CELLAR_CLUSTER_DIR=z", "HOME=/h"}) {
		t.Fatalf("child environment %q", env)
	}
}
