package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
)

// The operator's table and tablet commands of cellar admin: tables with
// their families and GC rules, the tablets and where they are served, and
// forced splits, moves, merges and major compactions. They all talk to the active
// master's admin RPCs (kv/masterpb).

const adminTablesUsage = `       cellar admin table create [-splits a,b] TABLE FAMILY[=GC]...
       cellar admin table alter [-add FAMILY[=GC]]... [-drop FAMILY]... [-gc FAMILY=GC]... TABLE
       cellar admin table drop TABLE
       cellar admin table describe TABLE
       cellar admin table ls
       cellar admin tablets [TABLE]
       cellar admin split [-tablet SERVER/ID] TABLE [KEY]
       cellar admin move TABLET [SERVER]        (TABLET is SERVER/ID as cellar admin tablets shows it)
       cellar admin merge TABLE [ROW]           (the tablet holding ROW, or the first, with the next one)
       cellar admin compact TABLE [TABLET]
  GC is none, versions:N, age:DURATION (e.g. 90s, 12h, 30d), or union(GC,GC...) / intersection(GC,GC...).
  Every subcommand takes -h for its flags; they all take -chubby, -cell, -secret and -timeout.`

// isAdminTableCommand reports whether cellar admin NAME is served here.
func isAdminTableCommand(name string) bool {
	switch name {
	case "table", "tablets", "split", "move", "merge", "compact":
		return true
	}
	return false
}

// adminTableCmd is one subcommand: its usage line, its positional arguments,
// and what it does with a connection to the master.
type adminTableCmd struct {
	usage    string
	min, max int // positional arguments; max -1: any number
	flags    func(fs *flag.FlagSet) func(ctx context.Context, d *adminDialer, pos []string, env Env) error
	// streams: the command may run past -timeout (which then bounds only
	// connecting), as a compaction does.
	streams bool
}

func adminTableCmds() map[string]adminTableCmd {
	return map[string]adminTableCmd{
		"table create": {usage: "cellar admin table create [-splits a,b] TABLE FAMILY[=GC]...", min: 2, max: -1, flags: tableCreate},
		"table alter": {usage: "cellar admin table alter [-add FAMILY[=GC]]... [-drop FAMILY]... [-gc FAMILY=GC]... TABLE",
			min: 1, max: 1, flags: tableAlter},
		"table drop":     {usage: "cellar admin table drop TABLE", min: 1, max: 1, flags: noFlags(tableDrop)},
		"table describe": {usage: "cellar admin table describe TABLE", min: 1, max: 1, flags: noFlags(tableDescribe)},
		"table ls":       {usage: "cellar admin table ls", min: 0, max: 0, flags: noFlags(tableList)},
		"tablets":        {usage: "cellar admin tablets [TABLE]", min: 0, max: 1, flags: noFlags(tabletsList)},
		"split":          {usage: "cellar admin split [-tablet SERVER/ID] TABLE [KEY]", min: 1, max: 2, flags: splitCmd},
		"move":           {usage: "cellar admin move TABLET [SERVER]   (TABLET is SERVER/ID; no SERVER: the least loaded other server)", min: 1, max: 2, flags: noFlags(moveCmd)},
		"merge":          {usage: "cellar admin merge TABLE [ROW]   (the tablet holding ROW, or the table's first, with the tablet after it)", min: 1, max: 2, flags: noFlags(mergeCmd)},
		"compact":        {usage: "cellar admin compact TABLE [TABLET]   (TABLET is SERVER/ID)", min: 1, max: 2, flags: noFlags(compactCmd), streams: true},
	}
}

func noFlags(run func(ctx context.Context, d *adminDialer, pos []string, env Env) error) func(*flag.FlagSet) func(context.Context, *adminDialer, []string, Env) error {
	return func(*flag.FlagSet) func(context.Context, *adminDialer, []string, Env) error { return run }
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// runAdminTables runs cellar admin table|tablets|split|move|merge|compact.
func runAdminTables(args []string, env Env) int {
	name := args[0]
	rest := args[1:]
	if name == "table" {
		if len(rest) == 0 || isHelp(rest[0]) {
			w, code := env.Stderr, 2
			if len(rest) > 0 {
				w, code = env.Stdout, 0
			}
			fmt.Fprintln(w, "usage: cellar admin table create|alter|drop|describe|ls ... (each takes -h)\n"+adminTablesUsage)
			return code
		}
		name, rest = "table "+rest[0], rest[1:]
	}
	cmd, ok := adminTableCmds()[name]
	if !ok {
		fmt.Fprintf(env.Stderr, "cellar admin: unknown subcommand %q\nusage:\n%s\n", name, adminTablesUsage)
		return 2
	}
	fs := flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var cf clusterFlags
	cf.register(fs)
	run := cmd.flags(fs)
	for _, a := range rest {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(env.Stdout)
			fmt.Fprintf(env.Stdout, "usage: %s\n", cmd.usage)
			parseFlags(fs, []string{"-h"}, env, "CELLAR")
			return 0
		}
	}
	pos, err := parseFlags(fs, rest, env, "CELLAR")
	if err != nil {
		fmt.Fprintf(env.Stderr, "usage: %s\n", cmd.usage)
		return flagExit(err)
	}
	if len(pos) < cmd.min || (cmd.max >= 0 && len(pos) > cmd.max) {
		fmt.Fprintf(env.Stderr, "cellar admin %s: wrong number of arguments\nusage: %s\n", name, cmd.usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dialCtx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	d := &adminDialer{cf: &cf, ctx: dialCtx}
	defer d.close()
	runCtx := dialCtx
	if cmd.streams {
		runCtx = ctx
	}
	if err := run(runCtx, d, pos, env); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "cellar admin %s: %v\nusage: %s\n", name, err, cmd.usage)
			return 2
		}
		return fail(env, "admin "+name, d.explain(err))
	}
	return 0
}

// usageError is bad input found after the flags were parsed (exit 2).
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// adminConn is a connection to the active master.
type adminConn struct {
	sess *coordlock.Session
	cc   *grpc.ClientConn
	m    masterpb.MasterClient
	addr string
}

func dialMaster(ctx context.Context, cf *clusterFlags) (*adminConn, error) {
	sess, err := cf.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w\nIs the cluster running? Start one with `make run` (or `cellar demo`), or point -chubby at its Chubby cell", err)
	}
	addr, err := sess.MasterAddr("")(ctx)
	if err != nil {
		sess.Close(context.Background())
		return nil, fmt.Errorf("find the master in the cell at %s: %w\nStart a master with `cellar master` (or the whole cluster with `make run`)", cf.chubby, err)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, kvclient.AuthDialOptions(cf.secret)...)...)
	if err != nil {
		sess.Close(context.Background())
		return nil, err
	}
	return &adminConn{sess: sess, cc: cc, m: masterpb.NewMasterClient(cc), addr: addr}, nil
}

func (c *adminConn) close() {
	c.cc.Close()
	c.sess.Close(context.Background())
}

// adminDialer connects to the master when a command first needs it, after
// the command checked its arguments, so that bad input fails at once.
type adminDialer struct {
	cf   *clusterFlags
	ctx  context.Context // bounds connecting (-timeout)
	c    *adminConn
	addr string
}

func (d *adminDialer) conn() (*adminConn, error) {
	if d.c == nil {
		c, err := dialMaster(d.ctx, d.cf)
		if err != nil {
			return nil, err
		}
		d.c, d.addr = c, c.addr
	}
	return d.c, nil
}

func (d *adminDialer) close() {
	if d.c != nil {
		d.c.close()
	}
}

// explain turns an RPC error into a message that says what to do.
func (d *adminDialer) explain(err error) error {
	c := d
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := s.Message()
	switch s.Code() {
	case codes.Unavailable:
		if strings.Contains(msg, "connection error") || strings.Contains(msg, "transport") {
			return fmt.Errorf("no master answers at %s (%s)\nIs the cluster running? Start it with `make run`, or start a master with `cellar master`", c.addr, msg)
		}
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s\nThe master did not finish in time; raise -timeout, or check its log", msg)
	case codes.Unimplemented:
		return fmt.Errorf("the master at %s does not know this command (%s); upgrade it", c.addr, msg)
	}
	return errors.New(msg)
}

// schemaOf reads a table's schema and its stored JSON.
func (c *adminConn) schemaOf(ctx context.Context, table string) (model.Schema, []byte, error) {
	resp, err := c.m.ListTables(ctx, &masterpb.ListTablesRequest{})
	if err != nil {
		return model.Schema{}, nil, err
	}
	var names []string
	for _, t := range resp.Tables {
		names = append(names, t.Name)
		if t.Name == table {
			var s model.Schema
			if err := json.Unmarshal(t.Schema, &s); err != nil {
				return model.Schema{}, nil, fmt.Errorf("the schema of %q is not readable: %v", table, err)
			}
			return s, t.Schema, nil
		}
	}
	if len(names) == 0 {
		return model.Schema{}, nil, fmt.Errorf("table %q does not exist; there are no tables yet (create one with `cellar admin table create`)", table)
	}
	return model.Schema{}, nil, fmt.Errorf("table %q does not exist; the tables are: %s", table, strings.Join(names, ", "))
}

func tableCreate(fs *flag.FlagSet) func(context.Context, *adminDialer, []string, Env) error {
	splits := fs.String("splits", "", "rows at which the table's tablets start, comma-separated")
	return func(ctx context.Context, d *adminDialer, pos []string, env Env) error {
		var schema model.Schema
		for _, spec := range pos[1:] {
			f, err := parseFamilySpec(spec)
			if err != nil {
				return usageError{err}
			}
			schema.Families = append(schema.Families, f)
		}
		if err := schema.Validate(); err != nil {
			return usageError{err}
		}
		js, err := json.Marshal(schema)
		if err != nil {
			return err
		}
		var sp [][]byte
		for _, s := range splitList(*splits) {
			sp = append(sp, []byte(s))
		}
		c, err := d.conn()
		if err != nil {
			return err
		}
		if _, err := c.m.CreateTable(ctx, &masterpb.CreateTableRequest{Table: pos[0], Schema: js, Splits: sp}); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "created table %s with %d tablets\n", pos[0], len(sp)+1)
		return nil
	}
}

// listFlag is a flag that may be given many times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func tableAlter(fs *flag.FlagSet) func(context.Context, *adminDialer, []string, Env) error {
	var add, drop, gc listFlag
	fs.Var(&add, "add", "add a family, FAMILY or FAMILY=GC (repeatable)")
	fs.Var(&drop, "drop", "drop a family and its data (repeatable)")
	fs.Var(&gc, "gc", "set a family's GC rule, FAMILY=GC (repeatable)")
	return func(ctx context.Context, d *adminDialer, pos []string, env Env) error {
		if len(add)+len(drop)+len(gc) == 0 {
			return usagef("nothing to change: give -add, -drop or -gc")
		}
		table := pos[0]
		// A conditional update: if someone else changed the schema since
		// it was read, read it again and redo the change.
		c, err := d.conn()
		if err != nil {
			return err
		}
		for attempt := 0; ; attempt++ {
			old, oldJS, err := c.schemaOf(ctx, table)
			if err != nil {
				return err
			}
			next, err := alterSchema(old, add, drop, gc)
			if err != nil {
				return usageError{err}
			}
			js, err := json.Marshal(next)
			if err != nil {
				return err
			}
			_, err = c.m.UpdateSchema(ctx, &masterpb.UpdateSchemaRequest{Table: table, Schema: js, Expected: oldJS})
			if status.Code(err) == codes.Aborted && attempt < 3 {
				continue
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "altered table %s:\n", table)
			describeFamilies(env.Stdout, next)
			return nil
		}
	}
}

// alterSchema applies -add, -drop and -gc to a schema.
func alterSchema(old model.Schema, add, drop, gc []string) (model.Schema, error) {
	next := old
	next.Families = append([]model.Family(nil), old.Families...)
	index := func(name string) int {
		for i, f := range next.Families {
			if f.Name == name {
				return i
			}
		}
		return -1
	}
	names := func() string {
		var n []string
		for _, f := range next.Families {
			n = append(n, f.Name)
		}
		return strings.Join(n, ", ")
	}
	for _, name := range drop {
		i := index(name)
		if i < 0 {
			return next, fmt.Errorf("-drop %s: no such family; the families are: %s", name, names())
		}
		next.Families = append(next.Families[:i], next.Families[i+1:]...)
	}
	for _, spec := range add {
		f, err := parseFamilySpec(spec)
		if err != nil {
			return next, fmt.Errorf("-add %s: %w", spec, err)
		}
		if index(f.Name) >= 0 {
			return next, fmt.Errorf("-add %s: the table already has family %s (change its GC rule with -gc)", spec, f.Name)
		}
		next.Families = append(next.Families, f)
	}
	for _, spec := range gc {
		name, rule, ok := strings.Cut(spec, "=")
		if !ok {
			return next, fmt.Errorf("-gc %s: use FAMILY=GC, e.g. -gc %s=versions:3", spec, spec)
		}
		i := index(name)
		if i < 0 {
			return next, fmt.Errorf("-gc %s: no such family; the families are: %s", spec, names())
		}
		r, err := parseGCRule(rule)
		if err != nil {
			return next, fmt.Errorf("-gc %s: %w", spec, err)
		}
		next.Families[i].GC = r
	}
	if err := next.Validate(); err != nil {
		return next, err
	}
	return next, nil
}

func tableDrop(ctx context.Context, d *adminDialer, pos []string, env Env) error {
	c, err := d.conn()
	if err != nil {
		return err
	}
	if _, err := c.m.DeleteTable(ctx, &masterpb.DeleteTableRequest{Table: pos[0]}); err != nil {
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("table %q does not exist; list the tables with `cellar admin table ls`", pos[0])
		}
		return err
	}
	fmt.Fprintf(env.Stdout, "dropped table %s\n", pos[0])
	return nil
}

func tableDescribe(ctx context.Context, d *adminDialer, pos []string, env Env) error {
	c, err := d.conn()
	if err != nil {
		return err
	}
	schema, _, err := c.schemaOf(ctx, pos[0])
	if err != nil {
		return err
	}
	tablets, err := c.m.ListTablets(ctx, &masterpb.ListTabletsRequest{Table: pos[0]})
	if err != nil {
		return err
	}
	var size, mem int64
	for _, t := range tablets.Tablets {
		size += t.SizeBytes
		mem += t.MemtableBytes
	}
	fmt.Fprintf(env.Stdout, "table %s: %d tablets, %s in SSTables, %s in memtables\n", pos[0], len(tablets.Tablets), humanBytes(size), humanBytes(mem))
	describeFamilies(env.Stdout, schema)
	if len(schema.LocalityGroups) > 0 {
		fmt.Fprintln(env.Stdout, "locality groups:")
		for _, g := range schema.LocalityGroups {
			comp := "snappy"
			if g.Compression == model.CompressionNone {
				comp = "none"
			}
			fmt.Fprintf(env.Stdout, "  %s: in_memory=%v compression=%s bloom=%v\n", g.Name, g.InMemory, comp, !g.NoBloom)
		}
	}
	if _, ok := schema.Meta["sql"]; ok {
		fmt.Fprintln(env.Stdout, "SQL columns: declared (see \\d in psql)")
	}
	return nil
}

func describeFamilies(w io.Writer, s model.Schema) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAMILY\tGC\tLOCALITY GROUP")
	for _, f := range s.Families {
		g := f.LocalityGroup
		if g == "" {
			g = model.DefaultLocalityGroup
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, gcText(f.GC), g)
	}
	tw.Flush()
}

func tableList(ctx context.Context, d *adminDialer, pos []string, env Env) error {
	c, err := d.conn()
	if err != nil {
		return err
	}
	resp, err := c.m.ListTables(ctx, &masterpb.ListTablesRequest{})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tFAMILIES")
	for _, t := range resp.Tables {
		var s model.Schema
		json.Unmarshal(t.Schema, &s)
		var fams []string
		for _, f := range s.Families {
			fams = append(fams, f.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\n", t.Name, strings.Join(fams, ","))
	}
	return tw.Flush()
}

func tabletsList(ctx context.Context, d *adminDialer, pos []string, env Env) error {
	req := &masterpb.ListTabletsRequest{}
	if len(pos) > 0 {
		req.Table = pos[0]
	}
	c, err := d.conn()
	if err != nil {
		return err
	}
	resp, err := c.m.ListTablets(ctx, req)
	if err != nil {
		return err
	}
	printTablets(env.Stdout, append(resp.Tablets, resp.Recovering...))
	return nil
}

func printTablets(w io.Writer, ts []*masterpb.Tablet) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLET\tTABLE\tSTART\tEND\tSERVER\tSIZE\tMEMTABLE\tCOMPACTION")
	for _, t := range ts {
		comp := "-"
		switch {
		case t.Recovering:
			comp = fmt.Sprintf("recovering: %d log records replayed", t.RecoveredRecords)
		case t.CompactionTotalBytes > 0:
			comp = fmt.Sprintf("%d%%", 100*t.CompactionDoneBytes/t.CompactionTotalBytes)
		}
		name := fmt.Sprintf("%s/%d", t.Server, t.Id)
		if t.Recovering {
			name = t.Server + "/-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, t.Table, showKey(t.Start, "<start>"), showKey(t.End, "<end>"),
			t.ServerAddr, humanBytes(t.SizeBytes), humanBytes(t.MemtableBytes), comp)
	}
	tw.Flush()
}

// showKey prints a row key as it is if it is plain text, quoted otherwise.
func showKey(k []byte, empty string) string {
	if len(k) == 0 {
		return empty
	}
	for _, r := range string(k) {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' {
			return strconv.Quote(string(k))
		}
	}
	return string(k)
}

// parseTabletRef reads SERVER/ID.
func parseTabletRef(s string) (*masterpb.TabletRef, error) {
	i := strings.LastIndex(s, "/")
	if i <= 0 {
		return nil, fmt.Errorf("tablet %q is not SERVER/ID; list the tablets with `cellar admin tablets`", s)
	}
	id, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("tablet %q is not SERVER/ID (the id is a number); list the tablets with `cellar admin tablets`", s)
	}
	return &masterpb.TabletRef{Server: s[:i], Id: id}, nil
}

func splitCmd(fs *flag.FlagSet) func(context.Context, *adminDialer, []string, Env) error {
	tab := fs.String("tablet", "", "without KEY: the tablet (SERVER/ID) to split at its midpoint (default: the table's largest)")
	return func(ctx context.Context, d *adminDialer, pos []string, env Env) error {
		req := &masterpb.SplitTabletRequest{Table: pos[0]}
		if len(pos) > 1 {
			if pos[1] == "" {
				return usagef("the split row is empty; a table's first tablet already starts at the empty row")
			}
			if *tab != "" {
				return usagef("give either KEY or -tablet, not both")
			}
			req.Key = []byte(pos[1])
		}
		if *tab != "" {
			ref, err := parseTabletRef(*tab)
			if err != nil {
				return usageError{err}
			}
			req.Tablet = ref
		}
		c, err := d.conn()
		if err != nil {
			return err
		}
		resp, err := c.m.SplitTablet(ctx, req)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "split %s at %s:\n", pos[0], showKey(resp.Tablets[1].Start, "<start>"))
		printTablets(env.Stdout, resp.Tablets)
		return nil
	}
}

func moveCmd(ctx context.Context, d *adminDialer, pos []string, env Env) error {
	ref, err := parseTabletRef(pos[0])
	if err != nil {
		return usageError{err}
	}
	req := &masterpb.MoveTabletRequest{Tablet: ref}
	if len(pos) > 1 {
		req.Target = pos[1]
	}
	c, err := d.conn()
	if err != nil {
		return err
	}
	resp, err := c.m.MoveTablet(ctx, req)
	if err != nil {
		return err
	}
	t := resp.Tablet
	fmt.Fprintf(env.Stdout, "moved tablet [%s, %s) of %s to %s; it is now %s/%d\n", showKey(t.Start, "<start>"), showKey(t.End, "<end>"),
		t.Table, t.Server, t.Server, t.Id)
	return nil
}

func mergeCmd(ctx context.Context, d *adminDialer, pos []string, env Env) error {
	req := &masterpb.MergeTabletsRequest{Table: pos[0]}
	if len(pos) > 1 {
		req.Row = []byte(pos[1])
	}
	c, err := d.conn()
	if err != nil {
		return err
	}
	resp, err := c.m.MergeTablets(ctx, req)
	if err != nil {
		return err
	}
	if resp.MovedFrom != "" {
		fmt.Fprintf(env.Stdout, "moved the tablet of %s starting at %s from %s to %s first\n", pos[0], showKey(resp.MovedRangeStart, "<start>"), resp.MovedFrom, resp.Tablet.Server)
	}
	t := resp.Tablet
	fmt.Fprintf(env.Stdout, "merged %s into [%s, %s):\n", pos[0], showKey(t.Start, "<start>"), showKey(t.End, "<end>"))
	printTablets(env.Stdout, []*masterpb.Tablet{t})
	return nil
}

func compactCmd(ctx context.Context, d *adminDialer, pos []string, env Env) error {
	req := &masterpb.CompactTabletsRequest{Table: pos[0]}
	if len(pos) > 1 {
		ref, err := parseTabletRef(pos[1])
		if err != nil {
			return usageError{err}
		}
		req.Tablet = ref
	}
	c, err := d.conn()
	if err != nil {
		return err
	}
	stream, err := c.m.CompactTablets(ctx, req)
	if err != nil {
		return err
	}
	line := newProgressLine(env.Stderr, time.Now)
	start := time.Now()
	shown := false
	text := func(p *masterpb.CompactTabletsProgress) string {
		pct := int64(100)
		if p.BytesTotal > 0 {
			pct = 100 * p.BytesDone / p.BytesTotal
		}
		return fmt.Sprintf("compact %s: %s %3d%%  %d/%d tablets  %s / %s  %s", pos[0], bar(p.BytesDone, p.BytesTotal, 20), pct,
			p.TabletsDone, p.TabletsTotal, humanBytes(p.BytesDone), humanBytes(p.BytesTotal), time.Since(start).Round(100*time.Millisecond))
	}
	for {
		p, err := stream.Recv()
		if err != nil {
			if shown {
				line.finish("compact " + pos[0] + ": stopped")
			}
			return err
		}
		if p.Done {
			line.finish(text(p))
			fmt.Fprintf(env.Stdout, "compacted %d tablets of %s (%s) in %v\n", p.TabletsTotal, pos[0], humanBytes(p.BytesTotal),
				time.Since(start).Round(time.Millisecond))
			return nil
		}
		line.update(text(p))
		shown = true
	}
}

// parseFamilySpec reads FAMILY or FAMILY=GC.
func parseFamilySpec(spec string) (model.Family, error) {
	name, rule, hasRule := strings.Cut(spec, "=")
	if err := model.ValidateFamilyName(name); err != nil {
		return model.Family{}, fmt.Errorf("family %q: %w", name, err)
	}
	f := model.Family{Name: name}
	if hasRule {
		r, err := parseGCRule(rule)
		if err != nil {
			return model.Family{}, fmt.Errorf("family %s: %w", name, err)
		}
		f.GC = r
	}
	return f, nil
}

// parseGCRule reads none, versions:N, age:DURATION, union(...) or
// intersection(...).
func parseGCRule(s string) (model.GCRule, error) {
	p := gcParser{s: strings.ReplaceAll(s, " ", "")}
	r, err := p.rule()
	if err == nil && p.i < len(p.s) {
		err = fmt.Errorf("unexpected %q", p.s[p.i:])
	}
	if err != nil {
		return model.GCRule{}, fmt.Errorf("GC rule %q: %v (use none, versions:N, age:DURATION, union(R,R...) or intersection(R,R...))", s, err)
	}
	if err := r.Validate(); err != nil {
		return model.GCRule{}, fmt.Errorf("GC rule %q: %v", s, err)
	}
	return r, nil
}

type gcParser struct {
	s string
	i int
}

func (p *gcParser) rule() (model.GCRule, error) {
	rest := p.s[p.i:]
	word := rest
	if j := strings.IndexAny(rest, ":(),"); j >= 0 {
		word = rest[:j]
	}
	p.i += len(word)
	switch word {
	case "none":
		return model.GCRule{}, nil
	case "versions", "age":
		if !p.eat(':') {
			return model.GCRule{}, fmt.Errorf("%s needs a value, e.g. %s:3", word, word)
		}
		v := p.s[p.i:]
		if j := strings.IndexAny(v, "),"); j >= 0 {
			v = v[:j]
		}
		p.i += len(v)
		if word == "versions" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return model.GCRule{}, fmt.Errorf("versions:%s is not a positive number", v)
			}
			return model.MaxVersionsRule(n), nil
		}
		d, err := parseDays(v)
		if err != nil || d <= 0 {
			return model.GCRule{}, fmt.Errorf("age:%s is not a positive duration such as 90s, 12h or 30d", v)
		}
		return model.MaxAgeRule(d), nil
	case "union", "intersection":
		if !p.eat('(') {
			return model.GCRule{}, fmt.Errorf("%s needs its rules in parentheses", word)
		}
		var rules []model.GCRule
		for {
			r, err := p.rule()
			if err != nil {
				return model.GCRule{}, err
			}
			rules = append(rules, r)
			if p.eat(',') {
				continue
			}
			if p.eat(')') {
				break
			}
			return model.GCRule{}, fmt.Errorf("missing ) after the rules of %s", word)
		}
		if word == "union" {
			return model.UnionRule(rules...), nil
		}
		return model.IntersectionRule(rules...), nil
	}
	return model.GCRule{}, fmt.Errorf("unknown rule %q", word)
}

func (p *gcParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// parseDays is time.ParseDuration that also takes whole days (30d).
func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, err
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// gcText writes a rule the way parseGCRule reads it.
func gcText(r model.GCRule) string {
	switch r.Kind {
	case model.GCMaxVersions:
		return fmt.Sprintf("versions:%d", r.MaxVersions)
	case model.GCMaxAge:
		for _, u := range []struct {
			d    time.Duration
			name string
		}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
			if r.MaxAge%u.d == 0 {
				return fmt.Sprintf("age:%d%s", r.MaxAge/u.d, u.name)
			}
		}
		return "age:" + r.MaxAge.String()
	case model.GCUnion, model.GCIntersection:
		parts := make([]string, len(r.Rules))
		for i, x := range r.Rules {
			parts[i] = gcText(x)
		}
		op := "union"
		if r.Kind == model.GCIntersection {
			op = "intersection"
		}
		return op + "(" + strings.Join(parts, ",") + ")"
	}
	return "none"
}
