package netfault

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Processes names the processes a test runs, by pid, so that a proxy can
// tell which of them opened a connection: Source is an Options.Source.
//
// It works on Linux for connections over IPv4 loopback, where both ends
// are sockets of this machine: it finds the other end's socket inode in
// /proc/net/tcp and then the named process whose file descriptors hold
// it. A process that is not named (or a lookup that fails) is "".
//
// Processes are named and not told apart by port because a process picks
// its outgoing ports itself, and dragonboat or gRPC give no hook to fix
// them; the proxy sees only an ephemeral port.
type Processes struct {
	mu    sync.Mutex
	names map[int]string
}

// NewProcesses returns an empty set.
func NewProcesses() *Processes { return &Processes{names: map[int]string{}} }

// Set names the process pid (a restarted process gets its new pid under
// the same name; Remove the old one).
func (p *Processes) Set(name string, pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names[pid] = name
}

// Remove forgets pid.
func (p *Processes) Remove(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.names, pid)
}

// Source names the process at the other end of c, an accepted loopback
// connection, or returns "".
func (p *Processes) Source(c net.Conn) string {
	name, _ := p.Lookup(c.RemoteAddr(), c.LocalAddr())
	return name
}

// Lookup names the process that holds the socket bound to local and
// connected to remote (both as that process sees them).
func (p *Processes) Lookup(local, remote net.Addr) (string, error) {
	inode, err := socketInode(local, remote)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	pids := make(map[int]string, len(p.names))
	for pid, name := range p.names {
		pids[pid] = name
	}
	p.mu.Unlock()
	want := "socket:[" + inode + "]"
	for pid, name := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // the process is gone
		}
		for _, e := range entries {
			if link, err := os.Readlink(dir + "/" + e.Name()); err == nil && link == want {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("netfault: no named process holds the socket %s->%s", local, remote)
}

// socketInode finds the inode of the IPv4 TCP socket local->remote in
// /proc/net/tcp, whose addresses are the 32-bit address in the host's
// byte order and the port, both in hex.
func socketInode(local, remote net.Addr) (string, error) {
	key := func(a net.Addr) (string, error) {
		ta, ok := a.(*net.TCPAddr)
		var ip4 net.IP
		if ok {
			ip4 = ta.IP.To4()
		}
		if ip4 == nil {
			return "", fmt.Errorf("netfault: %v is not a TCP IPv4 address", a)
		}
		return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip4), ta.Port), nil
	}
	l, err := key(local)
	if err != nil {
		return "", err
	}
	r, err := key(remote)
	if err != nil {
		return "", err
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", fmt.Errorf("netfault: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local rem st queues timer retrnsmt uid timeout inode ...
		fs := strings.Fields(sc.Text())
		if len(fs) >= 10 && fs[1] == l && fs[2] == r {
			if _, err := strconv.ParseUint(fs[9], 10, 64); err == nil && fs[9] != "0" {
				return fs[9], nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("netfault: read /proc/net/tcp: %w", err)
	}
	return "", fmt.Errorf("netfault: no socket %s->%s in /proc/net/tcp", local, remote)
}
