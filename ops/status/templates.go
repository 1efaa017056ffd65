package status

// pageTemplates are the pages; html/template escapes everything they
// print, and the charts come in as already escaped SVG.
const pageTemplates = `
{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="10">
<title>{{.Title}} — {{.Process}}</title>
<style>
body{font-family:sans-serif;margin:0;color:#1d2330;background:#fff}
header{background:#23395d;color:#fff;padding:.6em 1.2em}
header h1{font-size:1.2em;margin:0}
header small{color:#c8d4ea}
nav{background:#e8eef7;padding:.4em 1.2em;border-bottom:1px solid #c5d0e0}
nav a{margin-right:1em;color:#23395d}
main{padding:0 1.2em 2em}
h2{font-size:1.05em;margin:1.4em 0 .5em;color:#23395d}
table{border-collapse:collapse;font-size:.9em}
td,th{border:1px solid #ccd5e2;padding:.2em .6em;text-align:left;vertical-align:top}
th{background:#eef2f8}
td.num{text-align:right}
.charts{display:flex;flex-wrap:wrap;gap:12px;margin-top:1em}
.ok{color:#1b7f3b;font-weight:bold}.bad{color:#b3261e;font-weight:bold}
code{font-size:.95em}
</style></head><body>
<header><h1>{{.Title}}</h1><small>{{.Process}} {{.Version}} · {{.Now.Format "2006-01-02 15:04:05 MST"}}</small></header>
<nav>{{range .Nav}}<a href="{{.Href}}">{{.Name}}</a>{{end}}</nav>
<main>
{{if .Charts}}<div class="charts">{{range .Charts}}{{.}}{{end}}</div>{{end}}
{{end}}

{{define "foot"}}</main></body></html>
{{end}}

{{define "index"}}{{template "head" .}}
<h2>Roles</h2>
<ul>{{range .Nav}}{{if ne .Href "/"}}<li><a href="{{.Href}}">{{.Name}}</a></li>{{end}}{{end}}</ul>
<h2>Readiness</h2>
<table><tr><th>role</th><th>state</th></tr>
{{range .Data.Checks}}<tr><td>{{.Name}}</td><td>{{if .Err}}<span class="bad">not ready</span>: {{.Err}}{{else}}<span class="ok">ready</span>{{end}}</td></tr>
{{end}}</table>
<p>Endpoints: <a href="/healthz">/healthz</a> (the process is alive), <a href="/readyz">/readyz</a> (every role is ready), <a href="/metrics">/metrics</a>.</p>
{{template "foot" .}}{{end}}

{{define "chubby"}}{{template "head" .}}{{with .Data}}
<h2>Replica</h2>
<table>
<tr><th>cell</th><td>{{.Status.Cell}}</td></tr>
<tr><th>replica</th><td>{{.Status.ReplicaID}}</td></tr>
<tr><th>Raft leader</th><td>{{if .Status.LeaderID}}replica {{.Status.LeaderID}}{{else}}none known{{end}}</td></tr>
<tr><th>Chubby master</th><td>{{if .Status.IsMaster}}<span class="ok">this replica</span>, epoch {{.Status.Epoch}}{{else}}another replica{{end}}</td></tr>
</table>
{{if .Err}}<p class="bad">Sessions and locks are unavailable: {{.Err}}</p>{{else}}
<h2>Sessions ({{len .Status.Sessions}})</h2>
<table><tr><th>id</th><th>principal</th><th>lease expires</th><th>last KeepAlive</th></tr>
{{range .Status.Sessions}}<tr><td class="num">{{.ID}}</td><td>{{.Principal}}</td><td>{{if $.Data.Status.IsMaster}}{{until .LeaseExpires}}{{else}}kept by the master{{end}}</td><td>{{if $.Data.Status.IsMaster}}{{ago .LastKeepAlive}}{{else}}kept by the master{{end}}</td></tr>
{{end}}</table>
<h2>Locks ({{len .Status.Locks}})</h2>
<table><tr><th>node</th><th>mode</th><th>holders (session, principal, handle)</th></tr>
{{range .Status.Locks}}<tr><td><code>{{.Path}}</code></td><td>{{.Mode}}</td><td>{{range .Holders}}{{.Session}} {{.Principal}} (handle {{.Handle}})<br>{{end}}</td></tr>
{{end}}</table>
{{end}}{{end}}
{{template "foot" .}}{{end}}

{{define "master"}}{{template "head" .}}{{with .Data}}
<p>{{if .Active}}<span class="ok">Active</span>: this master holds the master lock.{{else}}<span class="bad">Standby</span>: waiting for the master lock.{{end}}</p>
<h2>Tablet servers ({{len .Servers}})</h2>
<table><tr><th>server</th><th>address</th><th>tablets</th><th>size</th><th>missed scans</th></tr>
{{range .Servers}}<tr><td>{{.ID}}</td><td>{{.Addr}}</td><td class="num">{{len .Tablets}}</td><td class="num">{{bytes .Bytes}}</td><td class="num">{{.Misses}}</td></tr>
{{end}}</table>
{{if .Dead}}<p>Dead servers: {{range .Dead}}<code>{{.}}</code> {{end}}</p>{{end}}
<h2>Tablets and their assignment ({{len .Assigned}})</h2>
<table><tr><th>table</th><th>start</th><th>end</th><th>tablet</th><th>size</th><th>server</th></tr>
{{range .Assigned}}<tr><td>{{.Table}}</td><td><code>{{key .Start}}</code></td><td><code>{{if .End}}{{key .End}}{{else}}+∞{{end}}</code></td><td class="num">{{.ID}}</td><td class="num">{{bytes .Size}}</td><td>{{.Server}}</td></tr>
{{end}}</table>
<h2>Recent events</h2>
<table><tr><th>time</th><th>kind</th><th>event</th></tr>
{{range .Events}}<tr><td>{{ago .Time}}</td><td>{{.Kind}}</td><td>{{.Text}}</td></tr>
{{else}}<tr><td colspan="3">none yet</td></tr>{{end}}</table>
{{end}}
{{template "foot" .}}{{end}}

{{define "tabletserver"}}{{template "head" .}}{{with .Data}}
<h2>Server</h2>
<table>
<tr><th>memtables</th><td>{{bytes .Stats.MemtableBytes}}</td></tr>
<tr><th>commit log</th><td>{{bytes .Stats.LogBytes}} in {{.Stats.LogSegments}} segments</td></tr>
<tr><th>block cache</th><td>{{bytes .Stats.BlockCache.Bytes}}, {{.Stats.BlockCache.Hits}} hits, {{.Stats.BlockCache.Misses}} misses</td></tr>
<tr><th>scan cache</th><td>{{bytes .Stats.ScanCache.Bytes}}, {{.Stats.ScanCache.Hits}} hits, {{.Stats.ScanCache.Misses}} misses</td></tr>
</table>
<h2>Tablets ({{len .Tablets}})</h2>
<table><tr><th>tablet</th><th>table</th><th>start</th><th>end</th><th>memtable</th><th>frozen</th><th>SSTables</th><th>SSTable bytes</th><th>per locality group</th><th>compaction</th></tr>
{{range .Tablets}}<tr><td class="num">{{.ID}}</td><td>{{.Table}}</td><td><code>{{key .Range.Start}}</code></td><td><code>{{if .Range.End}}{{key .Range.End}}{{else}}+∞{{end}}</code></td>
<td class="num">{{bytes .MemtableBytes}}</td><td class="num">{{.FrozenMemtables}}</td><td class="num">{{.SSTables}}</td><td class="num">{{bytes .SSTableBytes}}</td>
<td>{{range .Groups}}{{.Name}}: {{len .Files}} {{end}}</td>
<td>{{if .Compaction}}{{if .Compaction.Major}}major{{else}}merging{{end}} of {{.Compaction.Group}}: {{.Percent}}% of {{.Compaction.TotalBytes}} bytes{{else}}—{{end}}</td></tr>
{{end}}</table>
{{if .Stats.Recovering}}<h2>Recovering from a dead server's log ({{len .Stats.Recovering}})</h2>
<table><tr><th>table</th><th>start</th><th>end</th><th>log</th><th>records replayed</th><th>started</th></tr>
{{range .Stats.Recovering}}<tr><td>{{.Table}}</td><td><code>{{key .Range.Start}}</code></td><td><code>{{if .Range.End}}{{key .Range.End}}{{else}}+∞{{end}}</code></td><td><code>{{.Log}}</code></td><td class="num">{{.Records}}</td><td>{{ago .Started}}</td></tr>
{{end}}</table>{{end}}
{{end}}
{{template "foot" .}}{{end}}

{{define "gateway"}}{{template "head" .}}{{with .Data}}
{{if .PG}}<h2>PostgreSQL sessions ({{len .Sessions}})</h2>
<table><tr><th>pid</th><th>user</th><th>database</th><th>client</th><th>connected</th><th>state</th><th>statement</th><th>started</th></tr>
{{range .Sessions}}<tr><td class="num">{{.PID}}</td><td>{{.User}}</td><td>{{.Database}}</td><td>{{.ClientAddr}}{{if .TLS}} (TLS){{end}}</td><td>{{ago .ConnectedAt}}</td><td>{{.State}}</td><td><code>{{clip .Statement}}</code></td><td>{{if .Statement}}{{ago .StatementStart}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>This gateway serves only the Bigtable API.</p>{{end}}
{{end}}
{{template "foot" .}}{{end}}
`
