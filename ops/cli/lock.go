package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/client"
	"github.com/cellardb/cellar/ops/coordlock"
)

// DefaultChubbyAddr is where cellar demo's cell serves clients.
const DefaultChubbyAddr = "127.0.0.1:7070"

type lockCmd struct {
	usage, summary string
	args           int // positional arguments wanted; -1: one or two
	run            func(ctx context.Context, c *client.Client, lf *lockFlags, args []string, env Env) error
}

// lockFlags are the flags of every lock subcommand; not all use all.
type lockFlags struct {
	addr, cell, principal, secret string
	timeout                       time.Duration
	long                          bool
	ifGen                         int64
	shared, try, create           bool
	lockDelay                     time.Duration
	parents                       bool
	read, write, changeACL        string
	events                        chan client.Event // acquire's
}

func lockCommands() map[string]lockCmd {
	return map[string]lockCmd{
		"ls":      {"ls [path]", "list a directory (default /ls/local/)", -1, lockLs},
		"cat":     {"cat path", "print a file's contents", 1, lockCat},
		"stat":    {"stat path", "print a node's metadata", 1, lockStat},
		"put":     {"put [-if-generation n] path [contents]", "write a file, creating it if missing; contents from stdin if not given", -1, lockPut},
		"mkdir":   {"mkdir [-p] path", "create a directory", 1, lockMkdir},
		"rm":      {"rm path", "delete a file or an empty directory", 1, lockRm},
		"setacl":  {"setacl [-read n] [-write n] [-change-acl n] path", "set a node's ACL names (files under /ls/<cell>/acl/)", 1, lockSetACL},
		"acquire": {"acquire [-shared] [-try] [-lock-delay d] path", "take a lock and hold it until Ctrl-C", 1, lockAcquire},
	}
}

func lockUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: cellar lock <command> [flags] [args]\n\nCommands:")
	for _, name := range []string{"ls", "cat", "stat", "put", "mkdir", "rm", "setacl", "acquire"} {
		c := lockCommands()[name]
		fmt.Fprintf(w, "  %-50s %s\n", c.usage, c.summary)
	}
	fmt.Fprintf(w, "\nNames look like /ls/<cell>/dir/file; the cell \"local\" is the cell at -addr.\n")
	fmt.Fprintf(w, "Every command takes -addr (default %s), -cell, -principal, -secret and -timeout;\n", DefaultChubbyAddr)
	fmt.Fprintln(w, "\"cellar lock <command> -h\" lists them with their environment variables.")
}

// runLock browses and changes a cell's namespace.
func runLock(args []string, env Env) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		lockUsage(env.Stdout)
		return 0
	}
	sub, ok := lockCommands()[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "cellar lock: unknown command %q\n\n", args[0])
		lockUsage(env.Stderr)
		return 2
	}
	name := "lock " + args[0]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	user := env.getenv("USER")
	if user == "" {
		user = "anonymous"
	}
	var lf lockFlags
	fs.StringVar(&lf.addr, "addr", DefaultChubbyAddr, "client addresses of the cell's replicas, comma-separated")
	fs.StringVar(&lf.cell, "cell", "", "the cell's name (default: the cell the replicas serve)")
	fs.StringVar(&lf.principal, "principal", user, "the principal to act as")
	fs.StringVar(&lf.secret, "secret", "", "the cell's shared secret")
	fs.DurationVar(&lf.timeout, "timeout", 30*time.Second, "give up after this long (acquire: only while connecting)")
	switch args[0] {
	case "ls":
		fs.BoolVar(&lf.long, "l", false, "show each node's metadata")
	case "put":
		fs.Int64Var(&lf.ifGen, "if-generation", -1, "write only if the content generation is this (compare-and-swap; 0: only if the file is new)")
	case "mkdir":
		fs.BoolVar(&lf.parents, "p", false, "create missing parents too, and succeed if the directory exists")
	case "setacl":
		fs.StringVar(&lf.read, "read", "", "ACL name for reading (empty: anyone)")
		fs.StringVar(&lf.write, "write", "", "ACL name for writing and locking (empty: anyone)")
		fs.StringVar(&lf.changeACL, "change-acl", "", "ACL name for changing the ACL names (empty: anyone)")
	case "acquire":
		fs.BoolVar(&lf.shared, "shared", false, "take the lock in shared (reader) mode")
		fs.BoolVar(&lf.try, "try", false, "fail at once if the lock is held")
		fs.BoolVar(&lf.create, "create", true, "create the file if it is missing")
		fs.DurationVar(&lf.lockDelay, "lock-delay", 0, "keep the lock from others this long if this process dies holding it (at most 1m)")
	}
	pos, err := parseFlags(fs, args[1:], env, "CELLAR_CHUBBY")
	if err != nil {
		return flagExit(err)
	}
	if (sub.args >= 0 && len(pos) != sub.args) || (sub.args < 0 && len(pos) > 2) || (args[0] == "put" && len(pos) == 0) {
		fmt.Fprintf(env.Stderr, "usage: cellar lock %s\n", sub.usage)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	openCtx, cancel := context.WithTimeout(ctx, lf.timeout)
	defer cancel()
	if args[0] == "acquire" {
		lf.events = make(chan client.Event, 64)
	}
	c := client.New(client.Options{
		Cell: lf.cell, Addrs: splitList(lf.addr), Principal: lf.principal, Secret: lf.secret,
		OnEvent: func(e client.Event) {
			select {
			case lf.events <- e:
			default: // only acquire listens; it must not stall the library
			}
		},
	})
	if err := c.Open(openCtx); err != nil {
		return fail(env, name, fmt.Errorf("connect to %s: %w", lf.addr, err))
	}
	defer func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Close(shut)
	}()
	runCtx := openCtx
	if args[0] == "acquire" {
		runCtx = ctx // holds until interrupted; it bounds its own waits
	}
	if err := sub.run(runCtx, c, &lf, pos, env); err != nil {
		return fail(env, name, err)
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func withPath(args []string, i int, def string) string {
	if i < len(args) {
		return args[i]
	}
	return def
}

func lockLs(ctx context.Context, c *client.Client, lf *lockFlags, args []string, env Env) error {
	if len(args) > 1 {
		return fmt.Errorf("usage: cellar lock ls [path]")
	}
	h, _, err := c.OpenNode(ctx, withPath(args, 0, "/ls/local/"), client.OpenOptions{Mode: coord.ModeRead})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	entries, err := h.ReadDir(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name
		if e.Stat.IsDirectory {
			name += "/"
		}
		if !lf.long {
			fmt.Fprintln(env.Stdout, name)
			continue
		}
		fmt.Fprintf(env.Stdout, "%s %-9s %8d  gen %-6d %s\n", kindOf(e.Stat), lockOf(e.Stat), e.Stat.Length, e.Stat.ContentGeneration, name)
	}
	return nil
}

func kindOf(s coord.Stat) string {
	switch {
	case s.IsDirectory:
		return "d"
	case s.Ephemeral:
		return "e"
	}
	return "-"
}

func lockOf(s coord.Stat) string {
	switch s.LockMode {
	case coord.Exclusive:
		return "exclusive"
	case coord.Shared:
		return fmt.Sprintf("shared:%d", s.LockHolders)
	}
	return "-"
}

func lockCat(ctx context.Context, c *client.Client, _ *lockFlags, args []string, env Env) error {
	h, _, err := c.OpenNode(ctx, args[0], client.OpenOptions{Mode: coord.ModeRead})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	data, _, err := h.GetContentsAndStat(ctx)
	if err != nil {
		return err
	}
	_, err = env.Stdout.Write(data)
	return err
}

func lockStat(ctx context.Context, c *client.Client, _ *lockFlags, args []string, env Env) error {
	h, _, err := c.OpenNode(ctx, args[0], client.OpenOptions{Mode: coord.ModeRead})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	s, err := h.GetStat(ctx)
	if err != nil {
		return err
	}
	kind := map[string]string{"d": "directory", "e": "ephemeral file", "-": "file"}[kindOf(s)]
	w := env.Stdout
	fmt.Fprintf(w, "name:               %s\n", h.Name())
	fmt.Fprintf(w, "kind:               %s\n", kind)
	fmt.Fprintf(w, "length:             %d\n", s.Length)
	fmt.Fprintf(w, "checksum:           %016x\n", s.Checksum)
	fmt.Fprintf(w, "instance:           %d\n", s.Instance)
	fmt.Fprintf(w, "content generation: %d\n", s.ContentGeneration)
	fmt.Fprintf(w, "lock generation:    %d\n", s.LockGeneration)
	fmt.Fprintf(w, "acl generation:     %d\n", s.ACLGeneration)
	fmt.Fprintf(w, "acl:                read=%q write=%q change-acl=%q\n", s.ACL.Read, s.ACL.Write, s.ACL.ChangeACL)
	fmt.Fprintf(w, "lock:               %s\n", lockOf(s))
	return nil
}

func lockPut(ctx context.Context, c *client.Client, lf *lockFlags, args []string, env Env) error {
	var data []byte
	if len(args) == 2 {
		data = []byte(args[1])
	} else {
		var err error
		if env.Stdin == nil {
			return fmt.Errorf("no contents given and no standard input")
		}
		if data, err = io.ReadAll(env.Stdin); err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
	}
	// With a generation to compare, the file must exist, except that 0
	// means "only if it is new".
	opts := client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: lf.ifGen <= 0, MustCreate: lf.ifGen == 0, Contents: data}
	h, created, err := c.OpenNode(ctx, args[0], opts)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	if created {
		return nil
	}
	var set []client.SetOption
	if lf.ifGen > 0 {
		set = append(set, client.IfGeneration(uint64(lf.ifGen)))
	}
	_, err = h.SetContents(ctx, data, set...)
	return err
}

func lockMkdir(ctx context.Context, c *client.Client, lf *lockFlags, args []string, env Env) error {
	if lf.parents {
		return coordlock.MkdirAll(ctx, c, args[0])
	}
	h, _, err := c.OpenNode(ctx, args[0], client.OpenOptions{Mode: coord.ModeRead, Create: true, MustCreate: true, Directory: true})
	if err != nil {
		return err
	}
	return h.Close(ctx)
}

func lockRm(ctx context.Context, c *client.Client, _ *lockFlags, args []string, env Env) error {
	h, _, err := c.OpenNode(ctx, args[0], client.OpenOptions{Mode: coord.ModeWrite})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	return h.Delete(ctx)
}

func lockSetACL(ctx context.Context, c *client.Client, lf *lockFlags, args []string, env Env) error {
	h, _, err := c.OpenNode(ctx, args[0], client.OpenOptions{Mode: coord.ModeChangeACL})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	_, err = h.SetACL(ctx, coord.ACL{Read: lf.read, Write: lf.write, ChangeACL: lf.changeACL})
	return err
}

// lockAcquire takes a lock, prints its sequencer and holds it until the
// process is told to stop, or until it loses the lock.
func lockAcquire(ctx context.Context, c *client.Client, lf *lockFlags, args []string, env Env) error {
	events := lf.events
	mode := coord.Exclusive
	if lf.shared {
		mode = coord.Shared
	}
	openCtx, cancel := context.WithTimeout(ctx, lf.timeout)
	defer cancel()
	h, _, err := c.OpenNode(openCtx, args[0], client.OpenOptions{
		Mode: coord.ModeRead | coord.ModeWrite, Create: lf.create, LockDelay: lf.lockDelay,
		Events: coord.Mask(coord.EventConflictingLock, coord.EventHandleInvalid),
	})
	if err != nil {
		return err
	}
	defer func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Close(shut)
	}()
	if lf.try {
		ok, err := h.TryAcquire(openCtx, mode)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s is locked by another session", h.Name())
		}
	} else {
		fmt.Fprintf(env.Stderr, "waiting for the %s lock on %s...\n", mode, h.Name())
		if err := h.Acquire(ctx, mode); err != nil {
			if errors.Is(err, context.Canceled) {
				return fmt.Errorf("interrupted before the lock was granted")
			}
			return err
		}
	}
	seq, err := h.GetSequencer()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "holding the %s lock on %s\nsequencer: %s\nPress Ctrl-C to release it.\n", mode, h.Name(), seq)
	for {
		select {
		case <-ctx.Done():
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := h.Release(shut); err != nil {
				return fmt.Errorf("release: %w", err)
			}
			fmt.Fprintln(env.Stdout, "released")
			return nil
		case e := <-events:
			switch e.Type {
			case coord.EventConflictingLock:
				fmt.Fprintf(env.Stderr, "another session is waiting for %s\n", h.Name())
			case coord.EventJeopardy:
				fmt.Fprintln(env.Stderr, "lost contact with the cell; the lock is in doubt until it answers again")
			case coord.EventSafe:
				fmt.Fprintln(env.Stderr, "contact with the cell restored; still holding the lock")
			case coord.EventMasterFailover:
				fmt.Fprintln(env.Stderr, "the cell's master failed over; still holding the lock")
			case coord.EventSessionExpired:
				return fmt.Errorf("the session expired: the lock on %s is lost", h.Name())
			case coord.EventHandleInvalid:
				return fmt.Errorf("%s was deleted: the lock is lost", h.Name())
			}
		}
	}
}
