package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cellardb/cellar/ops/sqltest"
)

// runSQLTest runs sqllogictest files against a PostgreSQL-protocol
// endpoint and reports each difference.
func runSQLTest(args []string, env Env) int {
	fs := flag.NewFlagSet("sqltest", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	url := fs.String("url", "postgresql://cellar@127.0.0.1:5433/cellar", "the endpoint, as a PostgreSQL connection URL")
	endpoint := fs.String("endpoint", "cellar", "the endpoint's name for skipif and onlyif (cellar, postgresql)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	files, err := parseFlags(fs, args, env, "CELLAR_SQLTEST")
	if err != nil {
		return flagExit(err)
	}
	if len(files) == 0 {
		fmt.Fprintln(env.Stderr, "usage: cellar sqltest [-url URL] [-endpoint NAME] FILE...")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var recs []sqltest.Record
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return fail(env, "sqltest", err)
		}
		r, err := sqltest.Parse(f, fh)
		fh.Close()
		if err != nil {
			return fail(env, "sqltest", err)
		}
		recs = append(recs, r...)
	}
	conn, err := pgx.Connect(ctx, *url)
	if err != nil {
		return fail(env, "sqltest", fmt.Errorf("connect to %s: %w", *url, err))
	}
	defer conn.Close(context.Background())
	res := sqltest.Run(ctx, pgxConn{conn}, recs, *endpoint)
	for _, f := range res.Failures {
		fmt.Fprintln(env.Stdout, f)
	}
	fmt.Fprintf(env.Stdout, "%d passed, %d failed, %d skipped\n", res.Passed, len(res.Failures), res.Skipped)
	if len(res.Failures) > 0 {
		return 1
	}
	return 0
}

// pgxConn runs records through the simple protocol, so that every value
// comes back in PostgreSQL's text form.
type pgxConn struct{ c *pgx.Conn }

func (p pgxConn) Exec(ctx context.Context, sql string) error {
	_, err := p.c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	return err
}

func (p pgxConn) Query(ctx context.Context, sql string) ([][]*string, error) {
	rows, err := p.c.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]*string
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]*string, len(raw))
		for i, v := range raw {
			if v != nil {
				s := string(v)
				row[i] = &s
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
