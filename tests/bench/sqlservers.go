package main

// The sql suite's servers: PostgreSQL initdb'd and started in a fresh
// directory, `cellar demo` in a fresh directory, or an endpoint that is
// already running, and the psql client the suite talks to them with.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sqlSide is one running endpoint of the comparison.
type sqlSide struct {
	label string // "cellar" or "postgres": the column it fills
	// kind says what actually runs, for the report.
	kind                 string
	version              string
	host, port, user, db string
	tools                sqlTools
	// isPostgres sides get VACUUM ANALYZE and CHECKPOINT after the load.
	isPostgres bool
	// afterLoad, if set, is a cellar side's counterpart of that: a major
	// compaction of the table (cellar admin compact).
	afterLoad func(ctx context.Context) error
	// external sides were running before the suite; their table bench is
	// dropped first.
	external bool
	// dataDir is measured after the load; empty when unknown.
	dataDir       string
	diskAfterLoad int64
	proc          *exec.Cmd
	exited        chan struct{} // closed when proc has exited
	waitErr       error         // proc's Wait, once exited is closed
	logPath       string
}

// sqlClientEnv is the environment of psql and pgbench: none of the
// caller's PG* settings, no TLS (neither side is given a certificate, and
// the comparison is of the databases, not of TLS).
func sqlClientEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return append(env, "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10")
}

func (s *sqlSide) connArgs() []string {
	return []string{"-h", s.host, "-p", s.port, "-U", s.user, "-d", s.db}
}

// query runs one statement through psql (the simple query protocol) and
// returns its rows, the columns of each joined by "|".
func (s *sqlSide) query(ctx context.Context, q string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	args := append([]string{"-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", "-c", q}, s.connArgs()...)
	cmd := exec.CommandContext(ctx, s.tools.psql, args...)
	cmd.Env = sqlClientEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s: %s", shorten(q, 80), shorten(strings.TrimPrefix(msg, "psql:"), 400))
	}
	out := strings.TrimRight(stdout.String(), "\n")
	if out == "" {
		return nil, nil
	}
	return strings.Split(out, "\n"), nil
}

// psqlScript feeds one psql process the statements write produces; write
// calls flush after each, which sends what it wrote so far.
func (s *sqlSide) psqlScript(ctx context.Context, m *sqlMeter, write func(out *bytes.Buffer, flush func() error) error) error {
	args := append([]string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"}, s.connArgs()...)
	cmd := exec.CommandContext(ctx, s.tools.psql, args...)
	cmd.Env = sqlClientEnv()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var buf bytes.Buffer
	werr := write(&buf, func() error {
		_, err := in.Write(buf.Bytes())
		buf.Reset()
		return err
	})
	in.Close()
	err = cmd.Wait()
	m.addClient(cmd.ProcessState)
	if msg := strings.TrimSpace(stderr.String()); err != nil && msg != "" {
		return fmt.Errorf("psql: %s", shorten(msg, 400))
	}
	return errors.Join(err, werr)
}

// waitReady polls the side with SELECT 1 until it answers, the process
// exits or the timeout passes.
func (s *sqlSide) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := s.query(ctx, "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		if s.exited != nil {
			select {
			case <-s.exited:
				return fmt.Errorf("%s exited: %v\n%s", s.kind, s.proc.ProcessState, s.logTail())
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %v: %v\n%s", s.kind, timeout, err, s.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *sqlSide) logTail() string {
	if s.logPath == "" {
		return ""
	}
	b, _ := os.ReadFile(s.logPath)
	return tail(string(b), 2000)
}

// stop interrupts the server (a fast shutdown for PostgreSQL, a clean
// stop for cellar) and waits for it, killing it after a minute.
func (s *sqlSide) stop() error {
	if s.proc == nil {
		return nil
	}
	s.proc.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
		if s.waitErr != nil && !isInterrupted(s.proc) {
			return fmt.Errorf("%s: %v\n%s", s.kind, s.waitErr, s.logTail())
		}
		return nil
	case <-time.After(time.Minute):
		s.proc.Process.Kill()
		<-s.exited
		return fmt.Errorf("%s did not stop within a minute; killed", s.kind)
	}
}

func isInterrupted(c *exec.Cmd) bool {
	ws, ok := c.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}

// startProc starts the server and records when it exits and how.
func (s *sqlSide) startProc(cmd *exec.Cmd) error {
	log, err := os.Create(s.logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// If the bench dies, so does the server.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return err
	}
	s.proc, s.exited = cmd, make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return nil
}

// startPostgres initdb's a cluster under dir and starts it on a free
// loopback port, with PostgreSQL's defaults (fsync and synchronous_commit
// on). Run as root, both run as the postgres user, since PostgreSQL
// refuses root; the directories on the way to dir then need to be
// searchable, which the suite arranges for those under base.
func startPostgres(tools sqlTools, dir, label, base string) (*sqlSide, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, PostgreSQL needs the postgres user (Debian's postgresql-15 makes it): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		if err := searchableUpTo(filepath.Dir(dir), base); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(tools.initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, tail(string(out), 2000))
	}
	addrs, err := freeAddrs(1)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(addrs[0])
	s := &sqlSide{label: label, kind: "PostgreSQL", host: host, port: port, user: "postgres", db: "postgres",
		tools: tools, isPostgres: true, dataDir: data, logPath: filepath.Join(dir, "postgres.log")}
	if label != "postgres" {
		s.kind = "PostgreSQL (standing in for " + label + ")"
	}
	cmd := exec.Command(tools.postgres, "-D", data, "-p", port, "-c", "listen_addresses="+host, "-c", "unix_socket_directories=")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := s.startProc(cmd); err != nil {
		return nil, err
	}
	if err := s.waitReady(time.Minute); err != nil {
		s.stop()
		return nil, err
	}
	rows, err := s.query(context.Background(), "SHOW server_version")
	if err != nil || len(rows) != 1 {
		s.stop()
		return nil, fmt.Errorf("server version: %v", err)
	}
	s.version = "PostgreSQL " + rows[0]
	return s, nil
}

// searchableUpTo makes dir and its parents up to base searchable by
// others (the postgres user), and fails if a parent above base is not.
func searchableUpTo(dir, base string) error {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if rel, err := filepath.Rel(base, p); err != nil || strings.HasPrefix(rel, "..") {
				return fmt.Errorf("PostgreSQL runs as the postgres user, which cannot enter %s; use -dir elsewhere", p)
			}
			if err := os.Chmod(p, fi.Mode().Perm()|0o011); err != nil {
				return err
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// startCellarDemo runs `cellar demo` on a fresh data directory under dir,
// every address but the gateway's on a free port, and waits until its
// gateway answers (user cellar, database cellar: trusted on loopback).
func startCellarDemo(tools sqlTools, bin string, built bool, dir string) (*sqlSide, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(addrs[0])
	data := filepath.Join(dir, "data")
	s := &sqlSide{label: "cellar", kind: "cellar demo", host: host, port: port, user: "cellar", db: "cellar",
		tools: tools, dataDir: data, logPath: filepath.Join(dir, "cellar.log")}
	s.afterLoad = func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, bin, "admin", "compact", "-chubby", addrs[1], "-secret-file", filepath.Join(data, "secret"), "bench")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cellar admin compact bench: %v: %s", err, tail(string(out), 1000))
		}
		return nil
	}
	cmd := exec.Command(bin, "demo", "-data", data, "-pgwire", addrs[0], "-http", "127.0.0.1:0",
		"-chubby", addrs[1], "-chubby-replicas", "1", "-tabletserver", "127.0.0.1:0", "-tabletservers", "3",
		"-master", "127.0.0.1:0", "-bigtable", "")
	cmd.Dir = dir
	// The demo reads unset flags from CELLAR_DEMO_*; none of the caller's.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CELLAR_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := s.startProc(cmd); err != nil {
		return nil, err
	}
	if err := s.waitReady(2 * time.Minute); err != nil {
		s.stop()
		return nil, err
	}
	s.version = cellarVersion(s.logPath, built)
	return s, nil
}

// cellarVersion is the version the demo printed first, with the commit of
// this checkout if the binary was built from it.
func cellarVersion(log string, built bool) string {
	v := "cellar"
	if f, err := os.Open(log); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "cellar demo "); ok {
				v = "cellar " + strings.TrimSpace(rest)
				break
			}
		}
		f.Close()
	}
	if !built {
		return v + " (-sql-cellar-bin)"
	}
	git := exec.Command("git", "describe", "--always", "--dirty")
	git.Dir = filepath.Join("..", "..")
	if out, err := git.Output(); err == nil {
		v += " (" + strings.TrimSpace(string(out)) + ")"
	}
	return v
}

// externalSide is an endpoint that is already running, from a URL.
func externalSide(tools sqlTools, label, rawURL string) (*sqlSide, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("-sql-cellar: %w", err)
	}
	s := &sqlSide{label: label, kind: "endpoint " + u.Host, host: u.Hostname(), port: u.Port(), user: u.User.Username(),
		db: strings.TrimPrefix(u.Path, "/"), tools: tools, external: true}
	if s.port == "" {
		s.port = "5432"
	}
	if s.host == "" {
		s.host = "127.0.0.1"
	}
	if s.user == "" {
		s.user = "cellar"
	}
	if s.db == "" {
		s.db = s.user
	}
	if err := s.waitReady(10 * time.Second); err != nil {
		return nil, err
	}
	if rows, err := s.query(context.Background(), "SELECT version()"); err == nil && len(rows) == 1 {
		s.version = shorten(rows[0], 60)
	}
	return s, nil
}

// serverCPU is the CPU time the side's server has used: its own, its
// reaped children's (PostgreSQL's backends, once they exit) and its living
// children's. It is -1 for an endpoint the suite did not start.
func (s *sqlSide) serverCPU() time.Duration {
	if s.proc == nil {
		return -1
	}
	pid := s.proc.Process.Pid
	total := procStatCPU(pid, true)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if f := procStatFields(child); len(f) > 12 && f[1] == strconv.Itoa(pid) {
			total += procStatCPU(child, false)
		}
	}
	return total
}

// procStatFields are the fields of /proc/pid/stat after the command name:
// state, ppid, ... utime (11), stime, cutime, cstime (14).
func procStatFields(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndex(data, []byte(") "))
	if i < 0 {
		return nil
	}
	return strings.Fields(string(data[i+2:]))
}

func procStatCPU(pid int, withChildren bool) time.Duration {
	f := procStatFields(pid)
	if len(f) < 15 {
		return 0
	}
	var ticks int64
	fields := []int{11, 12}
	if withChildren {
		fields = append(fields, 13, 14)
	}
	for _, i := range fields {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// sqlMeter measures one workload's CPU: the server's, and other processes'
// (beyond the server and the clients the suite runs), which on a shared
// machine tells whether the numbers were disturbed.
type sqlMeter struct {
	side    *sqlSide
	start   time.Time
	busy    time.Duration
	server  time.Duration
	clients time.Duration
}

func startSQLMeter(s *sqlSide) *sqlMeter {
	return &sqlMeter{side: s, start: time.Now(), busy: sqlMachineBusy(), server: s.serverCPU(), clients: -selfCPU()}
}

// sqlMachineBusy is the CPU time all cores spent in processes (user, nice,
// system) and stolen by the hypervisor since boot. Interrupt and softirq
// time, which the workload's own loopback traffic and disk writes mostly
// cause but no process is charged with, is left out.
func sqlMachineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 8} { // user nice system steal
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// selfCPU is this process's CPU time: the suite's own work (generating
// the load's statements) is the clients', not other load.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// addClient counts a finished client process's CPU as the suite's own.
func (m *sqlMeter) addClient(ps *os.ProcessState) {
	if ps != nil {
		m.clients += ps.UserTime() + ps.SystemTime()
	}
}

// finish fills in r's server CPU and other load.
func (m *sqlMeter) finish(r *sqlResult) {
	// PostgreSQL's backends exit, and are reaped, just after their
	// clients disconnect.
	time.Sleep(200 * time.Millisecond)
	wall := time.Since(m.start)
	busy := sqlMachineBusy() - m.busy
	m.clients += selfCPU()
	r.serverCPU = -1
	server := time.Duration(0)
	if m.server >= 0 {
		server = m.side.serverCPU() - m.server
		r.serverCPU = server
	}
	if other := busy - server - m.clients; other > 0 && wall > 0 {
		r.otherCores = other.Seconds() / wall.Seconds()
	}
}
