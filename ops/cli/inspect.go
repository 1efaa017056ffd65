package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/cellardb/cellar/kv/commitlog"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/sstable"
)

func runSSTable(args []string, env Env) int {
	const usage = "usage: cellar sstable dump [-values] FILE | cellar sstable check FILE..."
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(env.Stdout, usage)
		return 0
	}
	if len(args) == 0 {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "dump":
		fs := flag.NewFlagSet("sstable dump", flag.ContinueOnError)
		fs.SetOutput(env.Stderr)
		values := fs.Bool("values", false, "print values as well as keys")
		if err := fs.Parse(args[1:]); err != nil {
			return flagExit(err)
		}
		if fs.NArg() != 1 {
			fmt.Fprintln(env.Stderr, "usage: cellar sstable dump [-values] FILE")
			return 2
		}
		r, err := openSSTable(fs.Arg(0))
		if err != nil {
			return fail(env, "sstable dump", err)
		}
		defer r.Close()
		if err := r.Dump(env.Stdout, *values); err != nil {
			return fail(env, "sstable dump", err)
		}
		return 0
	case "check":
		if len(args) < 2 {
			fmt.Fprintln(env.Stderr, "usage: cellar sstable check FILE...")
			return 2
		}
		status := 0
		for _, name := range args[1:] {
			r, err := openSSTable(name)
			if err == nil {
				err = r.Check()
				r.Close()
			}
			if err != nil {
				fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
				status = 1
				continue
			}
			p := r.Properties()
			fmt.Fprintf(env.Stdout, "%s: ok (%d entries, %d blocks)\n", name, p.NumEntries, p.NumDataBlocks)
		}
		return status
	}
	fmt.Fprintf(env.Stderr, "cellar sstable: unknown subcommand %q (dump, check)\n", args[0])
	return 2
}

func openSSTable(path string) (*sstable.Reader, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	fs := dfs.NewLocal(dir)
	f, err := fs.Open(base)
	if err != nil {
		return nil, err
	}
	r, err := sstable.Open(f, path, sstable.ReaderOptions{})
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func runLog(args []string, env Env) int {
	const usage = "usage: cellar log dump [-from LSN] DIR"
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(env.Stdout, usage)
		return 0
	}
	if len(args) == 0 || args[0] != "dump" {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("log dump", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	from := fs.Uint64("from", 0, "first LSN to print")
	if err := fs.Parse(args[1:]); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(env.Stderr, "usage: cellar log dump [-from LSN] DIR")
		return 2
	}
	st, err := commitlog.Replay(context.Background(), dfs.NewLocal(fs.Arg(0)), "", *from, func(r *commitlog.Record) error {
		fmt.Fprintf(env.Stdout, "lsn=%d tablet=%d table=%q seq=%d row=%q\n", r.LSN, r.Tablet, r.Table, r.Seq, r.Mutation.Row)
		for _, m := range r.Mutation.Mutations {
			switch m.Kind {
			case model.KindSetCell:
				fmt.Fprintf(env.Stdout, "  set %s:%q @%d (%d bytes)\n", m.Family, m.Qualifier, m.Timestamp, len(m.Value))
			case model.KindDeleteColumn:
				fmt.Fprintf(env.Stdout, "  delete %s:%q in [%d, %d)\n", m.Family, m.Qualifier, m.Range.Start, m.Range.End)
			case model.KindDeleteFamily:
				fmt.Fprintf(env.Stdout, "  delete family %s\n", m.Family)
			case model.KindDeleteRow:
				fmt.Fprintf(env.Stdout, "  delete row\n")
			}
		}
		return nil
	})
	if err != nil {
		return fail(env, "log dump", err)
	}
	fmt.Fprintf(env.Stdout, "end: segment %d offset %d, last LSN %d, %d live segments\n", st.End.Segment, st.End.Offset, st.LastLSN, len(st.Segments))
	if st.Corruption != nil {
		return fail(env, "log dump", fmt.Errorf("replay stopped early: %w", st.Corruption))
	}
	return 0
}
