package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/masterpb"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/ops/coordlock"
)

// clusterFlags are the flags of the commands that talk to a cluster.
type clusterFlags struct {
	chubby, cell, secret string
	secretFile           string
	timeout              time.Duration
}

func (cf *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&cf.chubby, "chubby", DefaultChubbyAddr, "client addresses of the Chubby cell's replicas, comma-separated")
	fs.StringVar(&cf.cell, "cell", "", "the Chubby cell's name (default: the cell the replicas serve)")
	fs.StringVar(&cf.secret, "secret", "", "the cluster's shared secret (the Chubby cell's and the kv RPCs')")
	fs.StringVar(&cf.secretFile, "secret-file", defaultSecretFile, secretFileUsage+"; the default is cellar demo's, if it exists")
	fs.DurationVar(&cf.timeout, "timeout", 30*time.Second, "give up after this long")
}

// session opens a Chubby session for a cluster command.
func (cf *clusterFlags) session(ctx context.Context) (*coordlock.Session, error) {
	var err error
	if cf.secret, err = readSecret(cf.secret, cf.secretFile, cf.secretFile == defaultSecretFile); err != nil {
		return nil, err
	}
	svc := &coordlock.Service{Client: client.Options{Cell: cf.cell, Addrs: splitList(cf.chubby), Principal: "cli", Secret: cf.secret}}
	s, err := svc.NewSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the Chubby cell at %s: %w", cf.chubby, err)
	}
	return s, nil
}

// runTable manages tables through the active master.
func runTable(args []string, env Env) int {
	usage := "usage: cellar table create [-splits a,b] NAME FAMILY... | alter NAME FAMILY... | drop NAME | ls"
	minArgs := map[string]int{"create": 2, "alter": 2, "drop": 1, "ls": 0}
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(env.Stdout, usage)
		return 0
	}
	if _, ok := minArgs[args0(args)]; !ok {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("table "+args[0], flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var cf clusterFlags
	cf.register(fs)
	splits := fs.String("splits", "", "rows at which the table's tablets start, comma-separated")
	pos, err := parseFlags(fs, args[1:], env, "CELLAR")
	if err != nil {
		return flagExit(err)
	}
	if len(pos) < minArgs[args[0]] || (args[0] == "ls" && len(pos) > 0) || (args[0] == "drop" && len(pos) != 1) {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	name := "table " + args[0]
	conn, err := dialMaster(ctx, &cf)
	if err != nil {
		return fail(env, name, err)
	}
	defer conn.close()
	m := conn.m
	switch args[0] {
	case "create":
		var schema model.Schema
		for _, f := range pos[1:] {
			schema.Families = append(schema.Families, model.Family{Name: f})
		}
		js, _ := json.Marshal(schema)
		var sp [][]byte
		for _, s := range splitList(*splits) {
			sp = append(sp, []byte(s))
		}
		if _, err := m.CreateTable(ctx, &masterpb.CreateTableRequest{Table: pos[0], Schema: js, Splits: sp}); err != nil {
			return fail(env, name, err)
		}
		fmt.Fprintf(env.Stdout, "created table %s\n", pos[0])
	case "alter":
		// The new family list: families not named are dropped with their
		// data, new ones added; GC rules of the kept ones stay.
		resp, err := m.ListTables(ctx, &masterpb.ListTablesRequest{})
		if err != nil {
			return fail(env, name, err)
		}
		var old model.Schema
		found := false
		for _, t := range resp.Tables {
			if t.Name == pos[0] {
				found = json.Unmarshal(t.Schema, &old) == nil
			}
		}
		if !found {
			return fail(env, name, fmt.Errorf("table %q does not exist", pos[0]))
		}
		next := model.Schema{LocalityGroups: old.LocalityGroups}
		for _, f := range pos[1:] {
			fam, ok := old.Family(f)
			if !ok {
				fam = model.Family{Name: f}
			}
			next.Families = append(next.Families, fam)
		}
		js, _ := json.Marshal(next)
		if _, err := m.UpdateSchema(ctx, &masterpb.UpdateSchemaRequest{Table: pos[0], Schema: js}); err != nil {
			return fail(env, name, err)
		}
		fmt.Fprintf(env.Stdout, "table %s has families %s\n", pos[0], strings.Join(pos[1:], ","))
	case "drop":
		if _, err := m.DeleteTable(ctx, &masterpb.DeleteTableRequest{Table: pos[0]}); err != nil {
			return fail(env, name, err)
		}
		fmt.Fprintf(env.Stdout, "dropped table %s\n", pos[0])
	case "ls":
		resp, err := m.ListTables(ctx, &masterpb.ListTablesRequest{})
		if err != nil {
			return fail(env, name, err)
		}
		for _, t := range resp.Tables {
			var schema model.Schema
			json.Unmarshal(t.Schema, &schema)
			var fams []string
			for _, f := range schema.Families {
				fams = append(fams, f.Name)
			}
			fmt.Fprintf(env.Stdout, "%s\t%s\n", t.Name, strings.Join(fams, ","))
		}
	}
	return 0
}

func args0(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// runKV reads and writes rows through the client library.
func runKV(args []string, env Env) int {
	usage := "usage: cellar kv put TABLE ROW FAMILY:QUALIFIER VALUE | get TABLE ROW | scan [-start R] [-end R] [-limit N] TABLE"
	want := map[string]int{"put": 4, "get": 2, "scan": 1}
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(env.Stdout, usage)
		return 0
	}
	if len(args) == 0 || want[args[0]] == 0 {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("kv "+args[0], flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var cf clusterFlags
	cf.register(fs)
	start := fs.String("start", "", "scan: first row")
	end := fs.String("end", "", "scan: row to stop before (default: the table's end)")
	limit := fs.Int64("limit", 0, "scan: most rows (0: all)")
	pos, err := parseFlags(fs, args[1:], env, "CELLAR")
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != want[args[0]] {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	name := "kv " + args[0]
	sess, err := cf.session(ctx)
	if err != nil {
		return fail(env, name, err)
	}
	defer sess.Close(context.Background())
	kv := kvclient.New(kvclient.Options{Root: coordlock.RootFile{Session: sess}, Secret: cf.secret})
	defer kv.Close()
	printRow := func(r model.Row) {
		for _, c := range r.Cells {
			fmt.Fprintf(env.Stdout, "%s\t%s:%s\t@%d\t%s\n", r.Key, c.Family, c.Qualifier, c.Timestamp, c.Value)
		}
	}
	switch args[0] {
	case "put":
		family, qualifier, ok := strings.Cut(pos[2], ":")
		if !ok {
			return fail(env, name, fmt.Errorf("column %q is not FAMILY:QUALIFIER", pos[2]))
		}
		err = kv.Apply(ctx, pos[0], &model.RowMutation{Row: []byte(pos[1]), Mutations: []model.Mutation{
			model.SetCell(family, []byte(qualifier), model.ServerTimestamp, []byte(pos[3]))}})
	case "get":
		var row model.Row
		var found bool
		row, found, err = kv.ReadRow(ctx, pos[0], []byte(pos[1]), kvclient.Filter{})
		if err == nil && !found {
			return fail(env, name, fmt.Errorf("row %q of %s not found", pos[1], pos[0]))
		}
		if err == nil {
			printRow(row)
		}
	case "scan":
		sc := kv.Scan(ctx, pos[0], model.RowRange{Start: []byte(*start), End: []byte(*end)}, kvclient.Filter{}, *limit)
		for sc.Next() {
			printRow(sc.Row())
		}
		err = sc.Err()
	}
	if err != nil {
		return fail(env, name, err)
	}
	return 0
}
