package chaos

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/masterpb"
)

// Role is what a process of the cluster runs.
type Role string

// The roles of a cluster's processes, as cellar's commands name them.
const (
	RoleChubby       Role = "chubby"
	RoleMaster       Role = "master"
	RoleTabletServer Role = "tabletserver"
	RoleGateway      Role = "gateway"
)

// Options configure a cluster. The zero value gets the defaults below.
type Options struct {
	// Bin is the built cellar binary (required).
	Bin string
	// Dir holds every process's config file, log and local state, and
	// the shared dfs root (required).
	Dir string
	// Lease is the Chubby session lease (default 3s); Grace is added to
	// every lease at a Chubby master failover (default 3s). Short ones
	// make failovers and fencing quick.
	Lease, Grace time.Duration
	// ScanInterval is how often a master looks at the tablet servers
	// (default 200ms).
	ScanInterval time.Duration
	// StartTimeout bounds starting the cluster and restarting one process
	// (default 2m).
	StartTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Lease <= 0 {
		o.Lease = 3 * time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 3 * time.Second
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = 200 * time.Millisecond
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	return o
}

// Cluster is a running multi-process cluster.
type Cluster struct {
	opts   Options
	secret string
	procs  []*Proc
	// PG is the gateway's pgwire address, Bigtable its Bigtable API's.
	PG, Bigtable string
	// Chubby lists the Chubby replicas' client addresses, comma-separated.
	Chubby string

	mu      sync.Mutex
	masters map[string]*grpc.ClientConn // by admin RPC address
	exits   []Exit
}

// Proc is one process of the cluster. Kill, Stop, Cont and Restart act
// on its current incarnation.
type Proc struct {
	Name string
	Role Role
	// Addr is the process's main endpoint: a Chubby replica's client
	// address, a master's admin RPC address, a tablet server's data RPC
	// address, the gateway's pgwire address.
	Addr string
	// HTTP is its status, /metrics and /servers address.
	HTTP string
	// Config and Log are its config file and log file (appended to by
	// every incarnation).
	Config, Log string

	c        *Cluster
	settings [][2]string
	ready    string // a line of the log that says it serves

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the incarnation exits
	stopped bool
	logOff  int64
	// expectExit: the harness killed it, or a nemesis expects it to
	// fence itself; any other exit is recorded as unexpected.
	expectExit bool
	// incs are its incarnations, for the serving intervals.
	incs []Incarnation
}

// Exit is a process's exit that no nemesis caused or expected.
type Exit struct {
	Proc string
	At   time.Time
	Err  string
	Last string // the last line of its log
}

func (c *Cluster) unexpected(e Exit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exits = append(c.exits, e)
}

// UnexpectedExits are the exits no nemesis caused or expected, in order.
func (c *Cluster) UnexpectedExits() []Exit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Exit(nil), c.exits...)
}

// ExpectExit marks the current incarnation's exit as expected: a paused
// process that must fence itself when it runs again.
func (p *Proc) ExpectExit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expectExit = true
}

// Start starts a cluster and waits until it answers: every tablet server
// is live at the active master and the gateway runs SQL.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	if opts.Bin == "" || opts.Dir == "" {
		return nil, errors.New("chaos.Start: Options.Bin and Options.Dir are required")
	}
	c := &Cluster{opts: opts, masters: map[string]*grpc.ClientConn{}}
	if err := c.plan(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	for _, p := range c.procs {
		if err := p.start(ctx); err != nil {
			c.Close(context.Background())
			return nil, err
		}
	}
	if err := c.WaitServing(ctx, 3); err != nil {
		c.Close(context.Background())
		return nil, err
	}
	return c, nil
}

// portPicker hands out distinct free loopback ports below Linux's
// ephemeral range (32768 and up), so that no outgoing connection takes
// one while its process is down between a kill and a restart. Each port
// stays bound until release, so that the kernel cannot give it twice. The
// range is 26000-31999: package tests, which make test runs at the same
// time, picks from 20000-25999.
type portPicker struct {
	held []net.Listener
}

func (pp *portPicker) pick() (string, error) {
	for range 1000 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 26000+mrand.IntN(6000)))
		if err == nil {
			pp.held = append(pp.held, ln)
			return ln.Addr().String(), nil
		}
	}
	return "", errors.New("no free loopback port in 26000-31999")
}

func (pp *portPicker) release() {
	for _, ln := range pp.held {
		ln.Close()
	}
}

// plan lays the cluster out on free ports and writes the secret.
func (c *Cluster) plan() error {
	dir := c.opts.Dir
	if err := os.MkdirAll(filepath.Join(dir, "dfs"), 0o755); err != nil {
		return err
	}
	var key [16]byte
	rand.Read(key[:])
	c.secret = hex.EncodeToString(key[:])
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(c.secret+"\n"), 0o600); err != nil {
		return err
	}
	var errs []error
	var pp portPicker
	defer pp.release()
	port := func() string {
		a, err := pp.pick()
		errs = append(errs, err)
		return a
	}
	var peers, clients []string
	for i := 1; i <= 3; i++ {
		cl, raft := port(), port()
		peers = append(peers, fmt.Sprintf("%d=%s/%s", i, raft, cl))
		clients = append(clients, cl)
	}
	c.Chubby = strings.Join(clients, ",")
	dfsRoot := filepath.Join(dir, "dfs")
	add := func(name string, role Role, addr, ready string, settings ...[2]string) {
		pd := filepath.Join(dir, name)
		p := &Proc{Name: name, Role: role, Addr: addr, HTTP: port(), c: c, ready: ready,
			Config: filepath.Join(pd, string(role)+".conf"), Log: filepath.Join(pd, string(role)+".log")}
		httpFlag := "http"
		if role == RoleMaster {
			httpFlag = "listen" // a master's status address
		}
		p.settings = append(settings, [2]string{"secret-file", secretFile}, [2]string{httpFlag, p.HTTP})
		c.procs = append(c.procs, p)
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("chubby-%d", i)
		add(name, RoleChubby, clients[i-1], "clients:", [2]string{"id", strconv.Itoa(i)},
			[2]string{"peers", strings.Join(peers, ",")}, [2]string{"data", filepath.Join(dir, name, "raft")},
			[2]string{"lease", c.opts.Lease.String()}, [2]string{"grace", c.opts.Grace.String()})
	}
	for i := 1; i <= 2; i++ {
		rpc := port()
		// Both print "standby" first; which one becomes active is the
		// Chubby lock's choice.
		add(fmt.Sprintf("master-%d", i), RoleMaster, rpc, "standby, waiting", [2]string{"rpc", rpc},
			[2]string{"chubby", c.Chubby}, [2]string{"dfs", dfsRoot}, [2]string{"scan-interval", c.opts.ScanInterval.String()})
	}
	for i := 1; i <= 3; i++ {
		a := port()
		name := fmt.Sprintf("ts-%d", i)
		add(name, RoleTabletServer, a, "serving on", [2]string{"id", name}, [2]string{"listen", a},
			[2]string{"chubby", c.Chubby}, [2]string{"dfs", dfsRoot})
	}
	c.PG, c.Bigtable = port(), port()
	add("gateway", RoleGateway, c.PG, "Press Ctrl-C", [2]string{"chubby", c.Chubby}, [2]string{"pgwire", c.PG},
		[2]string{"bigtable", c.Bigtable}, [2]string{"users", filepath.Join(dir, "users.json")})
	return errors.Join(errs...)
}

// Procs returns the cluster's processes in start order: Chubby replicas,
// masters, tablet servers, the gateway.
func (c *Cluster) Procs() []*Proc { return append([]*Proc(nil), c.procs...) }

// ByRole returns the processes of one role.
func (c *Cluster) ByRole(r Role) []*Proc {
	var out []*Proc
	for _, p := range c.procs {
		if p.Role == r {
			out = append(out, p)
		}
	}
	return out
}

// Secret is the cluster's shared secret.
func (c *Cluster) Secret() string { return c.secret }

// start starts a new incarnation and waits for its ready line.
func (p *Proc) start(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(p.Config), 0o755); err != nil {
		return err
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "# %s: written by the chaos harness\n", p.Name)
	for _, s := range p.settings {
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
	off, _ := logf.Seek(0, io.SeekEnd)
	fmt.Fprintf(logf, "=== chaos harness: starting %s at %s\n", p.Name, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.c.opts.Bin, string(p.Role), "-config", p.Config)
	cmd.Dir = filepath.Dir(p.Config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = childEnv(os.Environ())
	// A process group of its own: a signal to the test does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.stopped, p.logOff, p.expectExit = cmd, exited, false, off, false
	p.incs = append(p.incs, Incarnation{Started: started})
	inc := len(p.incs) - 1
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		// After Wait: the process is gone, so it serves nothing after this.
		gone := time.Now()
		p.mu.Lock()
		expected := p.expectExit
		p.incs[inc].Exited = gone
		p.mu.Unlock()
		if !expected {
			b, _ := os.ReadFile(p.Log)
			p.c.unexpected(Exit{Proc: p.Name, At: time.Now(), Err: fmt.Sprint(err), Last: strings.TrimSpace(tail(b, 1))})
		}
		close(exited)
	}()
	for {
		b, _ := os.ReadFile(p.Log)
		if int64(len(b)) > off && bytes.Contains(b[off:], []byte(p.ready)) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited while starting; its log %s ends:\n%s", p.Name, p.Log, tail(b, 15))
		case <-ctx.Done():
			return fmt.Errorf("%s did not print %q in time: %w; its log %s ends:\n%s", p.Name, p.ready, ctx.Err(), p.Log, tail(b, 15))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// childEnv drops the environment variables of the role commands, which
// would override the config files.
func childEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "CELLAR_") {
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

// Pid is the current incarnation's process id.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Alive reports whether the current incarnation runs (stopped or not).
func (p *Proc) Alive() bool {
	p.mu.Lock()
	ch := p.exited
	p.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// Stopped reports whether the process is alive and SIGSTOPped.
func (p *Proc) Stopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

func (p *Proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || !p.Alive() {
		return fmt.Errorf("%s is not running", p.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s to %s: %w", sig, p.Name, err)
	}
	return nil
}

// Kill sends SIGKILL and waits (up to ctx) for the process to go.
func (p *Proc) Kill(ctx context.Context) error {
	p.ExpectExit()
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	p.mu.Lock()
	ch := p.exited
	p.stopped = false
	p.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s did not exit after SIGKILL: %w", p.Name, ctx.Err())
	}
}

// Stop sends SIGSTOP: the process freezes, sockets and leases included.
// It returns once the process is seen stopped (state T in /proc), or
// after a second, and records that time as the pause's start.
func (p *Proc) Stop() error {
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.Pid())
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		// The state follows the parenthesized command name.
		if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			break
		}
	}
	now := time.Now()
	p.mu.Lock()
	p.stopped = true
	if n := len(p.incs); n > 0 {
		p.incs[n-1].Pauses = append(p.incs[n-1].Pauses, Pause{Stopped: now})
	}
	p.mu.Unlock()
	return nil
}

// Cont sends SIGCONT to a stopped process, recording the time first: the
// process may run again from then on.
func (p *Proc) Cont() error {
	p.mu.Lock()
	p.stopped = false
	if n := len(p.incs); n > 0 {
		if ps := p.incs[n-1].Pauses; len(ps) > 0 && ps[len(ps)-1].Continued.IsZero() {
			ps[len(ps)-1].Continued = time.Now()
		}
	}
	p.mu.Unlock()
	return p.signal(syscall.SIGCONT)
}

// ServingLogs are the tablet servers' logs and incarnations, for
// ServingIntervals.
func (c *Cluster) ServingLogs() ([]ServingLog, error) {
	var out []ServingLog
	for _, p := range c.ByRole(RoleTabletServer) {
		b, err := os.ReadFile(p.Log)
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		incs := make([]Incarnation, len(p.incs))
		for i, inc := range p.incs {
			incs[i] = inc
			incs[i].Pauses = append([]Pause(nil), inc.Pauses...)
		}
		p.mu.Unlock()
		out = append(out, ServingLog{Proc: p.Name, Text: string(b), Incarnations: incs})
	}
	return out, nil
}

// Restart starts a new incarnation of a process that is not running, with
// the same config, ports and local state, and waits for its ready line.
func (p *Proc) Restart(ctx context.Context) error {
	if p.Alive() {
		return fmt.Errorf("restart %s: it is still running (pid %d)", p.Name, p.Pid())
	}
	ctx, cancel := context.WithTimeout(ctx, p.c.opts.StartTimeout)
	defer cancel()
	return p.start(ctx)
}

// LogTail returns the last lines of the process's log.
func (p *Proc) LogTail(lines int) string {
	b, _ := os.ReadFile(p.Log)
	return tail(b, lines)
}

// LogSince returns what the process logged in its current incarnation.
func (p *Proc) LogSince() string {
	p.mu.Lock()
	off := p.logOff
	p.mu.Unlock()
	b, _ := os.ReadFile(p.Log)
	if int64(len(b)) < off {
		return ""
	}
	return string(b[off:])
}

// LogTails is every process's log tail, for a failure report.
func (c *Cluster) LogTails(lines int) string {
	var b strings.Builder
	for _, p := range c.procs {
		state := "dead"
		switch {
		case p.Stopped():
			state = "stopped"
		case p.Alive():
			state = "alive"
		}
		fmt.Fprintf(&b, "--- %s (%s, pid %d, %s) %s:\n%s\n", p.Name, p.Role, p.Pid(), state, p.Log, p.LogTail(lines))
	}
	return b.String()
}

// Close kills every process (continuing stopped ones is not needed:
// SIGKILL ends them too) and closes the harness's connections.
func (c *Cluster) Close(ctx context.Context) {
	for _, p := range c.procs {
		if p.Alive() {
			p.Kill(ctx)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cc := range c.masters {
		cc.Close()
	}
	c.masters = map[string]*grpc.ClientConn{}
}

// ChubbyLeader returns the replica that reports itself the Raft leader
// (cellar_chubby_leader 1 on its /metrics).
func (c *Cluster) ChubbyLeader(ctx context.Context) (*Proc, error) {
	for _, p := range c.ByRole(RoleChubby) {
		if !p.Alive() || p.Stopped() {
			continue
		}
		body, err := httpGet(ctx, "http://"+p.HTTP+"/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "cellar_chubby_leader{") && strings.HasSuffix(line, " 1") {
				return p, nil
			}
		}
	}
	return nil, errors.New("no running Chubby replica reports itself the leader")
}

func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}

// masterClient returns the admin RPC client of a master.
func (c *Cluster) masterClient(p *Proc) (masterpb.MasterClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.masters[p.Addr]
	if !ok {
		var err error
		cc, err = grpc.NewClient("passthrough:///"+p.Addr, append([]grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials())}, kvclient.AuthDialOptions(c.secret)...)...)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", p.Name, err)
		}
		c.masters[p.Addr] = cc
	}
	return masterpb.NewMasterClient(cc), nil
}

// ActiveMaster returns the master that answers admin RPCs: a standby
// listens on its RPC port but serves nothing until it holds the lock.
func (c *Cluster) ActiveMaster(ctx context.Context) (*Proc, masterpb.MasterClient, error) {
	var errs []error
	for _, p := range c.ByRole(RoleMaster) {
		if !p.Alive() || p.Stopped() {
			continue
		}
		m, err := c.masterClient(p)
		if err != nil {
			return nil, nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = m.ListTables(cctx, &masterpb.ListTablesRequest{})
		cancel()
		if err == nil {
			return p, m, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
	}
	return nil, nil, fmt.Errorf("no master answers admin RPCs: %w", errors.Join(errs...))
}

// Tablets lists a table's served tablets through the active master.
func (c *Cluster) Tablets(ctx context.Context, table string) (*masterpb.ListTabletsResponse, error) {
	_, m, err := c.ActiveMaster(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := m.ListTablets(cctx, &masterpb.ListTabletsRequest{Table: table})
	if err != nil {
		return nil, fmt.Errorf("list the tablets of %s: %w", table, err)
	}
	return resp, nil
}

// ServerOf returns the tablet server process that serves key of table.
func (c *Cluster) ServerOf(ctx context.Context, table, key string) (*Proc, error) {
	resp, err := c.Tablets(ctx, table)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Tablets {
		if string(t.Start) <= key && (len(t.End) == 0 || key < string(t.End)) {
			for _, p := range c.ByRole(RoleTabletServer) {
				if p.Addr == t.ServerAddr {
					return p, nil
				}
			}
			return nil, fmt.Errorf("row %q of %s is served at %s, which is none of the cluster's tablet servers", key, table, t.ServerAddr)
		}
	}
	return nil, fmt.Errorf("no live server serves row %q of %s", key, table)
}

// liveServers is the number of tablet servers the active master sees.
func (c *Cluster) liveServers(ctx context.Context) (int, error) {
	p, _, err := c.ActiveMaster(ctx)
	if err != nil {
		return 0, err
	}
	body, err := httpGet(ctx, "http://"+p.HTTP+"/servers")
	if err != nil {
		return 0, err
	}
	var v struct {
		Live []json.RawMessage `json:"live"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return 0, fmt.Errorf("%s /servers: %w", p.Name, err)
	}
	return len(v.Live), nil
}

// WaitServing waits until the active master sees servers tablet servers
// and the gateway runs a statement.
func (c *Cluster) WaitServing(ctx context.Context, servers int) error {
	for {
		err := c.serving(ctx, servers)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not come to serve: %w (%w)", err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *Cluster) serving(ctx context.Context, servers int) error {
	n, err := c.liveServers(ctx)
	if err != nil {
		return err
	}
	if n < servers {
		return fmt.Errorf("the active master sees %d of %d tablet servers", n, servers)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, c.PGURL())
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

// PGURL is the gateway's connection URL (trust auth from loopback).
func (c *Cluster) PGURL() string {
	return fmt.Sprintf("postgresql://cellar@%s/cellar?sslmode=disable", c.PG)
}

// Build builds the cellar binary of the module that holds this package
// into dir and returns its path.
func Build(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	bin := filepath.Join(dir, "cellar")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./ops/cmd/cellar")
	cmd.Dir = strings.TrimSpace(string(out))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}
