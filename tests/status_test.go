package tests

import (
	"context"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// httpGet fetches url and returns the status code and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// waitCode polls url until it answers code.
func waitCode(t *testing.T, url string, code int, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, body := httpGet(t, url)
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d after %v, want %d: %s", url, got, within, code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkHealth checks that a process's /healthz answers and its /readyz
// becomes ready.
func checkHealth(t *testing.T, base string) {
	t.Helper()
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("%s/healthz: %d %q", base, code, body)
	}
	body := waitCode(t, base+"/readyz", 200, 30*time.Second)
	if !strings.HasSuffix(body, "ok\n") {
		t.Fatalf("%s/readyz: %q", base, body)
	}
}

var hrefRe = regexp.MustCompile(`<a href="(/[^"]*)">`)

// statusLinks returns the role pages the index links to.
func statusLinks(t *testing.T, base string) []string {
	t.Helper()
	code, body := httpGet(t, base+"/")
	if code != 200 {
		t.Fatalf("index: %d %s", code, body)
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range hrefRe.FindAllStringSubmatch(body, -1) {
		p := m[1]
		if p == "/" || p == "/healthz" || p == "/readyz" || p == "/metrics" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// TestStatusPagesOfTheDemo starts cellar demo, gives it a table, rows and
// a running statement, and reads every status page the index links to;
// then headless Chromium renders each page to a screenshot that must show
// more than a blank page.
func TestStatusPagesOfTheDemo(t *testing.T) {
	bin := buildCellar(t)
	d := startDemo(t, bin, t.TempDir())
	checkHealth(t, d.url)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.pg+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{`CREATE TABLE status_web (_key TEXT PRIMARY KEY, "info:rank" BIGINT)`,
		`INSERT INTO status_web VALUES ('com.example', 1), ('org.example', 2)`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// A statement that runs while the gateway page is read.
	sleeper, err := pgx.Connect(ctx, d.pg+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer sleeper.Close(context.Background())
	slept := make(chan error, 1)
	go func() {
		_, err := sleeper.Exec(ctx, "SELECT pg_sleep(3)", pgx.QueryExecModeSimpleProtocol)
		slept <- err
	}()

	links := statusLinks(t, d.url)
	var tsPages []string
	for _, l := range links {
		if strings.HasPrefix(l, "/tabletserver/") {
			tsPages = append(tsPages, l)
		}
	}
	if !slices.Contains(links, "/chubby/1") || !slices.Contains(links, "/master") || !slices.Contains(links, "/gateway") || len(tsPages) != 3 {
		t.Fatalf("the index links to %v", links)
	}
	wants := map[string][]string{
		"/chubby/1": {"this replica", "epoch", "tabletserver:demo1", "gateway", "/ls/cellar/cellar/master", "exclusive", "<svg"},
		"/master":   {"Active", "demo1-", "status_web", "Recent events", "created table", "tablet sizes", "<svg"},
		"/gateway":  {"PostgreSQL sessions", "SELECT pg_sleep(3)", "active", "SQL statements: ops/s", "Bigtable RPCs: p99 latency"},
	}
	for _, p := range tsPages {
		wants[p] = []string{"Tablets (", "commit log", "block cache", "tablet RPCs: ops/s", "tablet sizes (SSTables + memtable)"}
	}
	// The table's tablet is on one of the servers.
	found := false
	deadline := time.Now().Add(30 * time.Second)
	for !found {
		for _, p := range tsPages {
			if _, body := httpGet(t, d.url+p); strings.Contains(body, "status_web") {
				found = true
			}
		}
		if !found && time.Now().After(deadline) {
			t.Fatal("no tablet server page shows the table status_web")
		}
	}
	for _, p := range links {
		code, body := httpGet(t, d.url+p)
		if code != 200 {
			t.Fatalf("%s: %d %s", p, code, body)
		}
		for _, w := range wants[p] {
			if !strings.Contains(body, w) {
				t.Errorf("%s: no %q in\n%s", p, w, body)
			}
		}
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	if code, _ := httpGet(t, d.url+"/tabletserver/nobody"); code != http.StatusNotFound {
		t.Fatalf("an unknown tablet server's page: %d", code)
	}

	t.Run("chromium", func(t *testing.T) {
		chromium, err := exec.LookPath("chromium")
		if err != nil {
			t.Fatalf("chromium is not installed (scripts/deps.sh installs it): %v", err)
		}
		dir := t.TempDir()
		for _, p := range append([]string{"/"}, links...) {
			file := filepath.Join(dir, strings.NewReplacer("/", "_").Replace(p)+".png")
			screenshot(t, chromium, d.url+p, file, filepath.Join(dir, "profile"))
			checkNotBlank(t, p, file)
		}
	})
	d.stop(t)
}

// screenshot renders url in headless Chromium into file.
func screenshot(t *testing.T, chromium, url, file, profile string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+profile,
		"--screenshot="+file, "--window-size=1200,900", url)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, out)
	}
}

// checkNotBlank decodes a screenshot and checks that the page drew
// something: enough non-white pixels, in enough colours.
func checkNotBlank(t *testing.T, page, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("%s: no screenshot: %v", page, err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: the screenshot does not decode: %v", page, err)
	}
	b := img.Bounds()
	if b.Dx() != 1200 || b.Dy() != 900 {
		t.Fatalf("%s: screenshot of %v", page, b)
	}
	colours := map[[3]uint32]bool{}
	nonWhite := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 240 || g>>8 < 240 || bl>>8 < 240 {
				nonWhite++
			}
		}
	}
	// The header bar alone covers about 6% of the page; text, tables and
	// charts add many shades.
	if frac := float64(nonWhite) / float64(b.Dx()*b.Dy()); frac < 0.05 || len(colours) < 32 {
		t.Fatalf("%s: the screenshot looks blank: %.1f%% non-white pixels, %d colours", page, 100*frac, len(colours))
	}
}

// TestHealthOfEachProcess starts cellar chubby, two cellar masters (one
// active, one standby), a cellar tabletserver and a cellar gateway as
// separate processes: each answers /healthz, becomes ready on /readyz and
// serves its role's page. Once the Chubby cell is killed, the tablet
// server and the gateway stop being ready while staying alive; once it is
// back, the gateway is ready again.
func TestHealthOfEachProcess(t *testing.T) {
	bin := buildCellar(t)
	dir := t.TempDir()
	chubby := freeLoopbackPort(t)
	chubbyHTTP, activeHTTP, standbyHTTP, tsHTTP, gwHTTP := freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t)
	cellArgs := []string{"chubby", "-id", "1", "-peers", "1=" + freeLoopbackPort(t) + "/" + chubby,
		"-data", filepath.Join(dir, "chubby"), "-lease", "2s", "-grace", "2s", "-rtt", "10ms", "-http", chubbyHTTP}
	cell, _ := startProcess(t, bin, "clients:", cellArgs...)
	startProcess(t, bin, "active master", "master", "-listen", activeHTTP, "-rpc", freeLoopbackPort(t), "-chubby", chubby,
		"-scan-interval", "100ms", "-dfs", filepath.Join(dir, "dfs"))
	startProcess(t, bin, "standby", "master", "-listen", standbyHTTP, "-rpc", freeLoopbackPort(t), "-chubby", chubby,
		"-scan-interval", "100ms", "-dfs", filepath.Join(dir, "dfs"))
	_, _, tsLine := startProcessLine(t, bin, "serving on", "tabletserver", "-id", "ts1", "-listen", "127.0.0.1:0",
		"-chubby", chubby, "-dfs", filepath.Join(dir, "dfs"), "-http", tsHTTP)
	path := registeredAs(t, tsLine)
	tsName := path[strings.LastIndex(path, "/")+1:]
	startProcess(t, bin, "Press Ctrl-C", "gateway", "-chubby", chubby, "-pgwire", "127.0.0.1:0", "-bigtable", "127.0.0.1:0",
		"-users", filepath.Join(dir, "users.json"), "-http", gwHTTP)

	pages := map[string]struct {
		page  string
		wants []string
	}{
		chubbyHTTP:  {"/chubby/1", []string{"this replica", "master", "tabletserver:ts1", "gateway", "/ls/"}},
		activeHTTP:  {"/master", []string{"Active", tsName}},
		standbyHTTP: {"/master", []string{"Standby"}},
		tsHTTP:      {"/tabletserver/" + tsName, []string{"Tablets (", "tablet RPCs: ops/s"}},
		gwHTTP:      {"/gateway", []string{"PostgreSQL sessions (0)", "SQL statements: ops/s"}},
	}
	for addr, p := range pages {
		base := "http://" + addr
		checkHealth(t, base)
		if links := statusLinks(t, base); len(links) != 1 || links[0] != p.page {
			t.Fatalf("%s: the index links to %v, want only %s", base, links, p.page)
		}
		// The master's view catches up with the servers at its next scans.
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, body := httpGet(t, base+p.page)
			if code != 200 {
				t.Fatalf("%s%s: %d %s", base, p.page, code, body)
			}
			missing := ""
			for _, w := range p.wants {
				if !strings.Contains(body, w) {
					missing = w
				}
			}
			if missing == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s%s: no %q in\n%s", base, p.page, missing, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Without the cell, the sessions lapse: not ready, but alive.
	cell.Process.Signal(syscall.SIGKILL)
	for _, addr := range []string{tsHTTP, gwHTTP} {
		body := waitCode(t, "http://"+addr+"/readyz", http.StatusServiceUnavailable, 30*time.Second)
		if !strings.Contains(body, "not ready") {
			t.Fatalf("%s/readyz: %q", addr, body)
		}
		if code, body := httpGet(t, "http://"+addr+"/healthz"); code != 200 || body != "ok\n" {
			t.Fatalf("%s/healthz after the cell died: %d %q", addr, code, body)
		}
	}
	// Once the cell is back, the gateway's probe opens a new session: ready
	// again without any client traffic.
	cell.Wait()
	startProcess(t, bin, "clients:", cellArgs...)
	waitCode(t, "http://"+chubbyHTTP+"/readyz", 200, 30*time.Second)
	waitCode(t, "http://"+gwHTTP+"/readyz", 200, 30*time.Second)
}
