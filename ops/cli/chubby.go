package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cellardb/cellar/coord/cell"
	"github.com/cellardb/cellar/ops/faults"
)

// DefaultCell is the cell name of cellar demo and the default of
// cellar chubby.
const DefaultCell = "cellar"

// runChubby runs one replica of a cell until SIGINT or SIGTERM.
func runChubby(args []string, env Env) int {
	fs := flag.NewFlagSet("chubby", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	cellName := fs.String("cell", DefaultCell, "the cell's name, as in /ls/<cell>/")
	id := fs.Uint64("id", 0, "this replica's id, one of the ids in -peers")
	peersFlag := fs.String("peers", "", "every replica as id=raft-host:port/client-host:port, comma-separated")
	data := fs.String("data", "", "directory of this replica's Raft log and snapshots (default ./cellar-data/chubby-<id>)")
	listen := fs.String("listen", "", "address to serve clients on, if not the replica's client address in -peers")
	raftListen := fs.String("raft-listen", "", "address the Raft transport listens on, if not the replica's Raft address in -peers (which its peers dial, perhaps through a proxy)")
	secret := fs.String("secret", "", "shared secret every client must present")
	secretFile := fs.String("secret-file", "", secretFileUsage)
	lease := fs.Duration("lease", 12*time.Second, "session lease granted by each KeepAlive")
	grace := fs.Duration("grace", 45*time.Second, "grace period added to every lease when a new master takes over")
	rtt := fs.Duration("rtt", 20*time.Millisecond, "round trip between replicas; elections take 10 of them")
	httpAddr := fs.String("http", "127.0.0.1:0", httpFlagUsage)
	faultInjection := fs.Bool("fault-injection", false, faultInjectionUsage)
	procFl := addProcessFlags(fs)
	pos, err := parseFlags(fs, args, env, "CELLAR_CHUBBY")
	if err != nil {
		return flagExit(err)
	}
	log, err := procFl.logger(env)
	if err != nil {
		return fail(env, "chubby", err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "cellar chubby: unexpected argument %q\n", pos[0])
		return 2
	}
	if *secret, err = readSecret(*secret, *secretFile, false); err != nil {
		return fail(env, "chubby", err)
	}
	peers, err := parsePeers(*peersFlag)
	if err != nil {
		return fail(env, "chubby", err)
	}
	if code := badSettings(env, "chubby", checkAddr("listen", *listen, true), checkAddr("raft-listen", *raftListen, true), checkPositive("lease", *lease),
		checkNotNegative("grace", int64(*grace)), checkPositive("rtt", *rtt)); code != 0 {
		return code
	}
	if *data == "" {
		*data = filepath.Join("cellar-data", fmt.Sprintf("chubby-%d", *id))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pm, err := newRoleMetrics(chubbyServer(*id))
	if err != nil {
		return fail(env, "chubby", err)
	}
	clock := &faults.Clock{}
	r := cell.New(cell.Options{
		Cell: *cellName, ReplicaID: *id, Peers: peers, Dir: *data, ClientListen: *listen, RaftListen: *raftListen,
		Secret: *secret, Lease: *lease, Grace: *grace, RTT: *rtt, Clock: clock.Now,
		Logger: log.With("role", "chubby"), KeepAlive: keepAliveHook(pm, *id),
	})
	if err := r.Open(ctx); err != nil {
		return fail(env, "chubby", err)
	}
	web, err := listenHTTP(*httpAddr, chubbyStatus(env, pm.reg, r))
	if err == nil && web != nil {
		pm.mount(web.Mux)
	}
	if err == nil {
		err = addReplicaMetrics(pm, r)
	}
	if err == nil && *faultInjection {
		err = mountFaults(web, faults.Options{Clock: clock, Logger: log.With("role", "chubby")})
	}
	if err != nil {
		web.close(context.Background())
		closeReplicas(env, "chubby", r)
		return fail(env, "chubby", err)
	}
	fmt.Fprintf(env.Stdout, "cellar chubby %s: replica %d of cell %q (%d replicas)\n", env.Version, *id, *cellName, len(peers))
	raftAt := peers[*id].RaftAddr
	if *raftListen != "" {
		raftAt += " (listening on " + *raftListen + ")"
	}
	fmt.Fprintf(env.Stdout, "  clients: %s\n  raft:    %s\n  data:    %s\n", r.ClientAddr(), raftAt, *data)
	fmt.Fprintf(env.Stdout, "  http:    %s\n", web.url())
	<-ctx.Done()
	web.close(context.Background()) // no scrape reads a closing replica
	if code := closeReplicas(env, "chubby", r); code != 0 {
		return code
	}
	fmt.Fprintln(env.Stdout, "stopped cleanly")
	return 0
}

// closeReplicas stops replicas, giving them 30 s.
func closeReplicas(env Env, cmd string, rs ...*cell.Replica) int {
	shut, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := 0
	for _, r := range rs {
		if err := r.Close(shut); err != nil {
			code = fail(env, cmd, fmt.Errorf("replica %d: %w", r.ID(), err))
		}
	}
	return code
}

// parsePeers reads "1=h:p/h:p,2=h:p/h:p".
func parsePeers(s string) (map[uint64]cell.Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("-peers is required: every replica as id=raft-host:port/client-host:port, comma-separated")
	}
	peers := map[uint64]cell.Peer{}
	for _, part := range strings.Split(s, ",") {
		idStr, addrs, ok := strings.Cut(strings.TrimSpace(part), "=")
		raft, client, ok2 := strings.Cut(addrs, "/")
		id, err := strconv.ParseUint(idStr, 10, 64)
		if !ok || !ok2 || err != nil || id == 0 || raft == "" || client == "" {
			return nil, fmt.Errorf("-peers: %q is not id=raft-host:port/client-host:port with an id above 0", part)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("-peers: replica %d is listed twice", id)
		}
		peers[id] = cell.Peer{RaftAddr: raft, ClientAddr: client}
	}
	return peers, nil
}

// formatPeers is parsePeers' inverse, in id order.
func formatPeers(peers map[uint64]cell.Peer) string {
	ids := make([]uint64, 0, len(peers))
	for id := range peers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%d=%s/%s", id, peers[id].RaftAddr, peers[id].ClientAddr)
	}
	return strings.Join(parts, ",")
}
