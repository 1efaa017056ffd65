package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/tablet"
)

// runDemo runs every part of cellar that exists in one process. Today
// that is the storage engine of one tablet server and the HTTP status
// endpoints; the Chubby cell, the master, the SQL gateway and the Bigtable
// API join it as they are built.
func runDemo(args []string, env Env) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	data := fs.String("data", "./cellar-data", "directory for all data; it survives restarts")
	httpAddr := fs.String("http", "127.0.0.1:8080", "address of the status pages, /healthz and /readyz")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	storeDir := filepath.Join(*data, "tabletserver")
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		return fail(env, "demo", err)
	}
	store := tablet.New(dfs.NewLocal(storeDir), "", tablet.Options{
		Events: tablet.Events{
			BackgroundError: func(id uint64, err error) {
				fmt.Fprintf(env.Stderr, "tablet %d: background work failed (will retry): %v\n", id, err)
			},
			LogCorruption: func(err error) { fmt.Fprintf(env.Stderr, "commit log: recovery stopped at corrupt data: %v\n", err) },
		},
	})
	if err := store.Open(ctx); err != nil {
		return fail(env, "demo", fmt.Errorf("open %s: %w", storeDir, err))
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		store.Close(context.Background())
		return fail(env, "demo", fmt.Errorf("status pages: %w", err))
	}
	srv := &http.Server{Handler: statusHandler(store, env.Version), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)

	st := store.Stats()
	fmt.Fprintf(env.Stdout, "cellar demo %s\n", env.Version)
	fmt.Fprintf(env.Stdout, "  data:    %s (%d tables, %d tablets)\n", *data, len(store.Tables()), len(st.Tablets))
	fmt.Fprintf(env.Stdout, "  status:  http://%s/   (/healthz, /readyz)\n", ln.Addr())
	fmt.Fprintln(env.Stdout, "  running: the tablet storage engine (commit log, memtables, SSTables, compactions)")
	fmt.Fprintln(env.Stdout, "  not yet: the Chubby cell, the master, the SQL gateway (psql on 127.0.0.1:5433)")
	fmt.Fprintln(env.Stdout, "           and the Bigtable API (127.0.0.1:8086); they arrive with later issues.")
	fmt.Fprintln(env.Stdout, "Press Ctrl-C to stop.")

	<-ctx.Done()
	fmt.Fprintln(env.Stdout, "\nstopping...")
	shut, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = errors.Join(srv.Shutdown(shut), store.Close(shut))
	if err != nil {
		return fail(env, "demo", err)
	}
	fmt.Fprintln(env.Stdout, "stopped cleanly")
	return 0
}

var statusPage = template.Must(template.New("status").Parse(`<!doctype html>
<title>cellar status</title>
<style>body{font-family:sans-serif;margin:2em} table{border-collapse:collapse} td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}</style>
<h1>cellar {{.Version}}</h1>
<p>Memtables: {{.Stats.MemtableBytes}} bytes. Commit log: {{.Stats.LogBytes}} bytes in {{.Stats.LogSegments}} segments.
Block cache: {{.Stats.BlockCache.Bytes}} bytes, {{.Stats.BlockCache.Hits}} hits, {{.Stats.BlockCache.Misses}} misses.
State generation {{.Stats.StateGeneration}}.</p>
<table>
<tr><th>tablet</th><th>table</th><th>rows</th><th>memtable bytes</th><th>frozen</th><th>SSTables per locality group</th></tr>
{{range .Stats.Tablets}}<tr><td>{{.ID}}</td><td>{{.Table}}</td><td>{{.Range}}</td><td>{{.MemtableBytes}}</td><td>{{.FrozenMemtables}}</td>
<td>{{range .Groups}}{{.Name}}: {{len .Files}} {{end}}</td></tr>
{{end}}</table>
`))

func statusHandler(store *tablet.Store, version string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		statusPage.Execute(w, struct {
			Version string
			Stats   tablet.Stats
		}{version, store.Stats()})
	})
	return mux
}
