package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// cellar cluster runs a multi-process cluster on loopback, each role a
// child process of this binary with its own config file, log file and
// local state under one directory. The processes outlive the command
// (each runs in a session of its own); cluster.json in the directory
// records them, so that down and status find them again.

// clusterProc is one process of the cluster.
type clusterProc struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Addr is the address the process serves its main endpoint on.
	Addr string `json:"addr"`
	Pid  int    `json:"pid"`
	// Config is the process's config file; Settings are its contents.
	Config   string      `json:"config"`
	Log      string      `json:"log"`
	Settings [][2]string `json:"settings"`
	// logOffset is where this run's output starts in Log.
	logOffset int64
}

// clusterState is cluster.json.
type clusterState struct {
	Chubby   string        `json:"chubby"`
	PG       string        `json:"pgwire"`
	Bigtable string        `json:"bigtable"`
	Procs    []clusterProc `json:"processes"`
}

const clusterStateFile = "cluster.json"

func runCluster(args []string, env Env) int {
	const usage = "usage: cellar cluster up|down|status [flags]   (cellar cluster up -h lists the flags)"
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(env.Stdout, usage)
		return 0
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "up":
		return clusterUp(args[1:], env)
	case "down":
		return clusterDown(args[1:], env)
	case "status":
		return clusterStatus(args[1:], env)
	default:
		fmt.Fprintf(env.Stderr, "cellar cluster: unknown subcommand %q; want up, down or status\n", args[0])
		return 2
	}
}

func clusterCmdFlags(name string, env Env) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("cluster "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	dir := fs.String("dir", "cellar-cluster", "the cluster's directory: cluster.json, the shared dfs root, and each process's config, log and local state")
	return fs, dir
}

func clusterUp(args []string, env Env) int {
	fs, dir := clusterCmdFlags("up", env)
	host := fs.String("host", "127.0.0.1", "the loopback (or other local) address every process listens on")
	basePort := fs.Int("base-port", 15000, "first of the ports the cluster uses (see docs/operations.md for the layout); 0: free ports")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the cluster to answer SQL")
	pos, err := parseFlags(fs, args, env, "CELLAR_CLUSTER")
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "cellar cluster up: unexpected argument %q\n", pos[0])
		return 2
	}
	if code := badSettings(env, "cluster up", checkPath("dir", *dir), checkHost(*host), checkPositive("wait", *wait),
		checkPortRange("base-port", *basePort, 42)); code != 0 {
		return code
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return fail(env, "cluster up", err)
	}
	lock, err := lockDir(abs, "cellar cluster command")
	if err != nil {
		return fail(env, "cluster up", err)
	}
	defer lock.Close()
	st, err := readClusterState(abs)
	switch {
	case err == nil:
		if alive := st.alive(); alive > 0 {
			return fail(env, "cluster up", fmt.Errorf("the cluster in %s is running (%d of %d processes alive); run cellar cluster down -dir %s first", abs, alive, len(st.Procs), *dir))
		}
		// A Chubby replica keeps its Raft address for life: a restart
		// reuses the recorded plan.
		fmt.Fprintf(env.Stdout, "restarting the cluster in %s with its recorded addresses\n", abs)
	case errors.Is(err, os.ErrNotExist):
		if st, err = planCluster(abs, *host, *basePort); err != nil {
			return fail(env, "cluster up", err)
		}
	default:
		return fail(env, "cluster up", err)
	}
	bin, err := os.Executable()
	if err != nil {
		return fail(env, "cluster up", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	if err := startCluster(ctx, bin, abs, st, env); err != nil {
		fmt.Fprintf(env.Stderr, "cellar cluster up: %v\nstopping the processes that started\n", err)
		stopClusterProcs(env, st, 30*time.Second)
		writeClusterState(abs, st)
		return 1
	}
	pgHost, pgPort, _ := net.SplitHostPort(st.PG)
	fmt.Fprintf(env.Stdout, "cellar cluster: %d processes running; state, logs and data in %s\n", len(st.Procs), abs)
	fmt.Fprintf(env.Stdout, "  sql:      psql \"postgresql://cellar@%s:%s/cellar\"\n", pgHost, pgPort)
	fmt.Fprintf(env.Stdout, "  bigtable: export BIGTABLE_EMULATOR_HOST=%s\n", st.Bigtable)
	secretFile := filepath.Join(*dir, "secret")
	fmt.Fprintf(env.Stdout, "  secret:   %s; tools take it with -secret-file, e.g. cellar admin tablets -chubby %s -secret-file %s\n", secretFile, st.Chubby, secretFile)
	fmt.Fprintf(env.Stdout, "  chubby:   cellar lock ls -addr %s -secret \"$(cat %s)\" /ls/cellar/\n", strings.Split(st.Chubby, ",")[0], secretFile)
	fmt.Fprintf(env.Stdout, "  status:   cellar cluster status -dir %s\n  stop:     cellar cluster down -dir %s\n", *dir, *dir)
	return 0
}

func checkHost(host string) error {
	if host == "" || strings.ContainsAny(host, ":/ ") && net.ParseIP(host) == nil {
		return fmt.Errorf("-host %q is not a host name or IP address", host)
	}
	return nil
}

// checkPortRange checks that base and the n ports after it are valid.
func checkPortRange(flagName string, base, n int) error {
	if base != 0 && (base < 1 || base+n > 65535) {
		return fmt.Errorf("-%s %d: the cluster needs ports %d to %d, which must lie in 1-65535", flagName, base, base, base+n)
	}
	return nil
}

// planCluster lays the cluster out: 3 Chubby replicas, 2 masters, 3
// tablet servers over dir/dfs, and a gateway. Ports are base+offset, or
// free ones if base is 0:
//
//	+0..2 Chubby clients   +10..12 Chubby Raft
//	+20,21 master status   +22,23 master admin RPCs
//	+30..32 tablet servers +40 pgwire  +41 Bigtable API
func planCluster(dir, host string, base int) (*clusterState, error) {
	port := func(off int) (string, error) {
		if base == 0 {
			return freePort(host)
		}
		return net.JoinHostPort(host, strconv.Itoa(base+off)), nil
	}
	var errs []error
	addr := func(off int) string {
		a, err := port(off)
		errs = append(errs, err)
		return a
	}
	st := &clusterState{}
	var peers, clients []string
	for i := 1; i <= 3; i++ {
		c, r := addr(i-1), addr(9+i)
		peers = append(peers, fmt.Sprintf("%d=%s/%s", i, r, c))
		clients = append(clients, c)
	}
	st.Chubby = strings.Join(clients, ",")
	dfsRoot := filepath.Join(dir, "dfs")
	// Every process shares the cluster's secret: the Chubby cell and the
	// kv RPCs refuse calls without it.
	secretFile := filepath.Join(dir, "secret")
	proc := func(name, role, main string, settings ...[2]string) {
		settings = append(settings, [2]string{"secret-file", secretFile})
		pd := filepath.Join(dir, name)
		st.Procs = append(st.Procs, clusterProc{Name: name, Role: role, Addr: main, Settings: settings,
			Config: filepath.Join(pd, role+".conf"), Log: filepath.Join(pd, role+".log")})
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("chubby-%d", i)
		proc(name, "chubby", clients[i-1], [2]string{"id", strconv.Itoa(i)}, [2]string{"peers", strings.Join(peers, ",")},
			[2]string{"data", filepath.Join(dir, name, "raft")})
	}
	for i := 1; i <= 2; i++ {
		status, rpc := addr(19+i), addr(21+i)
		proc(fmt.Sprintf("master-%d", i), "master", status, [2]string{"listen", status}, [2]string{"rpc", rpc},
			[2]string{"chubby", st.Chubby}, [2]string{"dfs", dfsRoot})
	}
	for i := 1; i <= 3; i++ {
		a := addr(29 + i)
		name := fmt.Sprintf("ts-%d", i)
		proc(name, "tabletserver", a, [2]string{"id", name}, [2]string{"listen", a}, [2]string{"chubby", st.Chubby},
			[2]string{"dfs", dfsRoot})
	}
	st.PG, st.Bigtable = addr(40), addr(41)
	proc("gateway", "gateway", st.PG, [2]string{"chubby", st.Chubby}, [2]string{"pgwire", st.PG},
		[2]string{"bigtable", st.Bigtable}, [2]string{"users", filepath.Join(dir, "users.json")})
	return st, errors.Join(errs...)
}

// startCluster starts the processes in order, each once the ones before
// it answer, and then waits until the gateway answers SQL and the active
// master sees every tablet server.
func startCluster(ctx context.Context, bin, dir string, st *clusterState, env Env) error {
	if err := os.MkdirAll(filepath.Join(dir, "dfs"), 0o755); err != nil {
		return err
	}
	if _, err := demoSecret(dir, ""); err != nil {
		return err
	}
	exited := map[string]chan error{}
	start := func(p *clusterProc) error {
		if err := os.MkdirAll(filepath.Dir(p.Config), 0o755); err != nil {
			return err
		}
		var conf strings.Builder
		fmt.Fprintf(&conf, "# %s: written by cellar cluster up\n", p.Name)
		for _, s := range p.Settings {
			fmt.Fprintf(&conf, "%s = %s\n", s[0], strconv.Quote(s[1]))
		}
		if err := os.WriteFile(p.Config, []byte(conf.String()), 0o644); err != nil {
			return err
		}
		logf, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer logf.Close()
		// The log so far: the lines waited for below are this run's.
		off, _ := logf.Seek(0, io.SeekEnd)
		cmd := exec.Command(bin, p.Role, "-config", p.Config)
		cmd.Dir = filepath.Dir(p.Config)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Env = childEnv(os.Environ())
		// A session of its own: the process outlives this command and
		// the terminal's Ctrl-C.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		p.Pid = cmd.Process.Pid
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		exited[p.Name] = done
		p.logOffset = off
		fmt.Fprintf(env.Stdout, "started %-9s pid %-7d %s (log %s)\n", p.Name, p.Pid, p.Addr, p.Log)
		return writeClusterState(dir, st)
	}
	// waitLog waits for text in the process's log, or its exit.
	waitLog := func(p *clusterProc, text string) error {
		for {
			b, _ := os.ReadFile(p.Log)
			if int64(len(b)) > p.logOffset && bytes.Contains(b[p.logOffset:], []byte(text)) {
				return nil
			}
			select {
			case err := <-exited[p.Name]:
				return fmt.Errorf("%s exited (%v); its log %s ends:\n%s", p.Name, err, p.Log, tail(b, 10))
			case <-ctx.Done():
				return fmt.Errorf("%s did not print %q in time; its log %s ends:\n%s", p.Name, text, p.Log, tail(b, 10))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	ready := map[string]string{"chubby": "clients:", "tabletserver": "serving on", "gateway": "Press Ctrl-C"}
	for i := range st.Procs {
		p := &st.Procs[i]
		if err := start(p); err != nil {
			return err
		}
		text := ready[p.Role]
		if p.Role == "master" {
			// The first master takes the lock; the second waits as a
			// standby.
			text = "standby, waiting"
			if p.Name == "master-1" {
				text = "active master"
			}
		}
		if err := waitLog(p, text); err != nil {
			return err
		}
	}
	// The cluster answers: every tablet server is live at the active
	// master, and SQL goes through the gateway.
	var masters []string
	servers := 0
	for _, p := range st.Procs {
		switch p.Role {
		case "master":
			masters = append(masters, p.Addr)
		case "tabletserver":
			servers++
		}
	}
	for {
		err := clusterAnswers(ctx, st.PG, masters, servers)
		if err == nil {
			return nil
		}
		for name, ch := range exited {
			select {
			case werr := <-ch:
				return fmt.Errorf("%s exited (%v)", name, werr)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not answer in time: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// clusterAnswers checks that a master reports n live tablet servers and
// that the gateway runs a statement.
func clusterAnswers(ctx context.Context, pg string, masters []string, n int) error {
	live := -1
	for _, m := range masters {
		if l := liveServers(ctx, m); l > live {
			live = l
		}
	}
	if live < n {
		return fmt.Errorf("the active master sees %d of %d tablet servers", max(live, 0), n)
	}
	host, port, _ := net.SplitHostPort(pg)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, fmt.Sprintf("postgresql://cellar@%s/cellar?sslmode=disable", net.JoinHostPort(host, port)))
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(cctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	return nil
}

// liveServers reads a master's /servers; -1 if it does not answer.
func liveServers(ctx context.Context, addr string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/servers", nil)
	if err != nil {
		return -1
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var body struct {
		Live []json.RawMessage `json:"live"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return -1
	}
	return len(body.Live)
}

// childEnv drops the environment variables of the role commands, which
// would override the config files that cellar cluster writes.
func childEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		skip := false
		for _, role := range []string{"CHUBBY", "MASTER", "TABLETSERVER", "GATEWAY"} {
			if strings.HasPrefix(name, "CELLAR_"+role+"_") {
				skip = true
			}
		}
		if !skip {
			out = append(out, kv)
		}
	}
	return out
}

func tail(b []byte, lines int) string {
	s := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(s) > lines {
		s = s[len(s)-lines:]
	}
	return "  " + strings.Join(s, "\n  ")
}

func clusterDown(args []string, env Env) int {
	fs, dir := clusterCmdFlags("down", env)
	timeout := fs.Duration("timeout", 30*time.Second, "how long each group of processes has to stop after SIGTERM before SIGKILL")
	pos, err := parseFlags(fs, args, env, "CELLAR_CLUSTER")
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "cellar cluster down: unexpected argument %q\n", pos[0])
		return 2
	}
	if code := badSettings(env, "cluster down", checkPositive("timeout", *timeout)); code != 0 {
		return code
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return fail(env, "cluster down", err)
	}
	st, err := readClusterState(abs)
	if err != nil {
		return fail(env, "cluster down", noCluster(abs, err))
	}
	lock, err := lockDir(abs, "cellar cluster command")
	if err != nil {
		return fail(env, "cluster down", err)
	}
	defer lock.Close()
	if st.alive() == 0 {
		fmt.Fprintf(env.Stdout, "the cluster in %s is not running\n", abs)
		return 0
	}
	if !stopClusterProcs(env, st, *timeout) {
		return 1
	}
	fmt.Fprintln(env.Stdout, "the cluster stopped cleanly")
	return 0
}

// stopClusterProcs stops the cluster in groups: the gateway, then the
// masters (so that none reassigns the tablets of the servers that stop),
// then the tablet servers, which flush and release their locks, and the
// Chubby cell last. It reports false if a process had to be killed.
func stopClusterProcs(env Env, st *clusterState, timeout time.Duration) bool {
	clean := true
	for _, role := range []string{"gateway", "master", "tabletserver", "chubby"} {
		var group []clusterProc
		for _, p := range st.Procs {
			if p.Role == role && p.alive() {
				group = append(group, p)
				syscall.Kill(p.Pid, syscall.SIGTERM)
			}
		}
		deadline := time.Now().Add(timeout)
		for _, p := range group {
			for p.alive() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if p.alive() {
				clean = false
				fmt.Fprintf(env.Stderr, "%s (pid %d) did not stop within %v; killing it (see %s)\n", p.Name, p.Pid, timeout, p.Log)
				syscall.Kill(p.Pid, syscall.SIGKILL)
				for end := time.Now().Add(5 * time.Second); p.alive() && time.Now().Before(end); {
					time.Sleep(50 * time.Millisecond)
				}
				continue
			}
			fmt.Fprintf(env.Stdout, "stopped %-9s pid %d\n", p.Name, p.Pid)
		}
	}
	return clean
}

func clusterStatus(args []string, env Env) int {
	fs, dir := clusterCmdFlags("status", env)
	pos, err := parseFlags(fs, args, env, "CELLAR_CLUSTER")
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "cellar cluster status: unexpected argument %q\n", pos[0])
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return fail(env, "cluster status", err)
	}
	st, err := readClusterState(abs)
	if err != nil {
		return fail(env, "cluster status", noCluster(abs, err))
	}
	fmt.Fprintf(env.Stdout, "%-10s %-13s %-8s %-7s %-22s %s\n", "NAME", "ROLE", "PID", "STATE", "ADDRESS", "LOG")
	alive := 0
	for _, p := range st.Procs {
		state := "dead"
		if p.alive() {
			state = "alive"
			alive++
		}
		fmt.Fprintf(env.Stdout, "%-10s %-13s %-8d %-7s %-22s %s\n", p.Name, p.Role, p.Pid, state, p.Addr, p.Log)
	}
	fmt.Fprintf(env.Stdout, "%d of %d processes alive; sql: postgresql://cellar@%s/cellar\n", alive, len(st.Procs), st.PG)
	if alive != len(st.Procs) {
		return 1
	}
	return 0
}

func noCluster(dir string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no cluster in %s (%s is missing); start one with cellar cluster up", dir, clusterStateFile)
	}
	return err
}

func readClusterState(dir string) (*clusterState, error) {
	path := filepath.Join(dir, clusterStateFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st clusterState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &st, nil
}

// writeClusterState replaces cluster.json atomically.
func writeClusterState(dir string, st *clusterState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, clusterStateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, clusterStateFile))
}

func (st *clusterState) alive() int {
	n := 0
	for _, p := range st.Procs {
		if p.alive() {
			n++
		}
	}
	return n
}

// alive reports whether the process runs: it exists, is no zombie (a
// process whose parent is gone may stay one), and is the same program
// (its command line names its config file), not a later process that
// got the pid.
func (p clusterProc) alive() bool {
	if p.Pid <= 0 {
		return false
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return syscall.Kill(p.Pid, 0) == nil // no /proc
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid))
	return err == nil && bytes.Contains(cmdline, []byte(p.Config))
}
