package status

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"
	"time"
)

// The charts are inline SVG written here rather than by a template: they
// are mostly numbers, and the only text in them (titles, tablet names)
// goes through template.HTMLEscapeString.

const (
	chartW, chartH = 380, 130
	plotL, plotR   = 62, 10 // margins of the plot area inside the chart
	plotT, plotB   = 22, 20
)

// lineChart draws one value of points over the window ending at now.
// Points without a value (no operations, so no p99) leave a gap.
func lineChart(title string, points []Point, value func(Point) (float64, bool), format func(float64) string, window time.Duration, now time.Time) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#f7f9fc" stroke="#c5d0e0"/>`, chartW, chartH)
	fmt.Fprintf(&b, `<text x="8" y="15" font-size="12" font-family="sans-serif" fill="#223">%s</text>`, template.HTMLEscapeString(title))
	pw, ph := float64(chartW-plotL-plotR), float64(chartH-plotT-plotB)
	top := 0.0
	for _, p := range points {
		if v, ok := value(p); ok && v > top {
			top = v
		}
	}
	top = niceCeil(top)
	for i := 0; i <= 2; i++ {
		y := float64(plotT) + ph*float64(i)/2
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dde3ec"/>`, plotL, y, chartW-plotR, y)
		if top == 0 && i < 2 {
			continue // an empty chart has only its zero line labelled
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10" font-family="sans-serif" fill="#556" text-anchor="end">%s</text>`,
			plotL-4, y+3, template.HTMLEscapeString(format(top*float64(2-i)/2)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" font-family="sans-serif" fill="#556">-%s</text>`, plotL, chartH-5, shortDuration(window))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" font-family="sans-serif" fill="#556" text-anchor="end">now</text>`, chartW-plotR, chartH-5)
	start := now.Add(-window)
	var seg []string
	flush := func() {
		if len(seg) == 1 {
			xy := strings.Split(seg[0], ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2" fill="#2a6fdb"/>`, xy[0], xy[1])
		} else if len(seg) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="#2a6fdb" stroke-width="2" points="%s"/>`, strings.Join(seg, " "))
		}
		seg = seg[:0]
	}
	drawn := 0
	for _, p := range points {
		v, ok := value(p)
		if !ok || p.At.Before(start) {
			flush()
			continue
		}
		x := float64(plotL) + pw*p.At.Sub(start).Seconds()/window.Seconds()
		y := float64(plotT) + ph
		if top > 0 {
			y -= ph * v / top
		}
		seg = append(seg, fmt.Sprintf("%.1f,%.1f", math.Min(x, float64(chartW-plotR)), y))
		drawn++
	}
	flush()
	if drawn == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" font-family="sans-serif" fill="#889" text-anchor="middle">no samples yet</text>`,
			float64(plotL)+pw/2, float64(plotT)+ph/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// Bar is one bar of a bar chart.
type Bar struct {
	Label string
	Value float64
}

const maxBars = 24

// barChart draws bars, largest first, with their values formatted.
func barChart(title string, bars []Bar, format func(float64) string) template.HTML {
	bars = append([]Bar(nil), bars...)
	sort.SliceStable(bars, func(i, j int) bool { return bars[i].Value > bars[j].Value })
	more := 0
	if len(bars) > maxBars {
		more, bars = len(bars)-maxBars, bars[:maxBars]
	}
	const labelW, barW, rowH = 200, 260, 16
	h := 26 + rowH*max(len(bars), 1) + 6
	if more > 0 {
		h += rowH
	}
	w := labelW + barW + 90
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		w, h, w, h, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#f7f9fc" stroke="#c5d0e0"/>`, w, h)
	fmt.Fprintf(&b, `<text x="8" y="15" font-size="12" font-family="sans-serif" fill="#223">%s</text>`, template.HTMLEscapeString(title))
	top := 0.0
	for _, bar := range bars {
		top = math.Max(top, bar.Value)
	}
	if len(bars) == 0 {
		fmt.Fprintf(&b, `<text x="8" y="%d" font-size="11" font-family="sans-serif" fill="#889">none</text>`, 26+12)
	}
	for i, bar := range bars {
		y := 26 + i*rowH
		label := bar.Label
		if r := []rune(label); len(r) > 30 {
			label = string(r[:29]) + "…"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" font-family="monospace" fill="#223" text-anchor="end">%s</text>`,
			labelW-6, y+11, template.HTMLEscapeString(label))
		width := 0.0
		if top > 0 {
			width = float64(barW) * bar.Value / top
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="#3fa46a"/>`, labelW, y+2, math.Max(width, 1), rowH-4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" font-family="sans-serif" fill="#445">%s</text>`,
			float64(labelW)+math.Max(width, 1)+4, y+11, template.HTMLEscapeString(format(bar.Value)))
	}
	if more > 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" font-family="sans-serif" fill="#667">and %d smaller</text>`, labelW, 26+len(bars)*rowH+11, more)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func shortDuration(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
	return d.String()
}

// formatRate formats operations per second.
func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0/s"
	case v >= 100:
		return fmt.Sprintf("%.0f/s", v)
	case v >= 1:
		return fmt.Sprintf("%.1f/s", v)
	default:
		return fmt.Sprintf("%.2f/s", v)
	}
}

// formatSeconds formats a latency in seconds.
func formatSeconds(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1:
		return fmt.Sprintf("%.2fs", v)
	case v >= 1e-3:
		return fmt.Sprintf("%.1fms", v*1e3)
	default:
		return fmt.Sprintf("%.0fµs", v*1e6)
	}
}

// formatBytes formats a size in bytes with a binary unit.
func formatBytes(v float64) string {
	const unit = 1024
	if v < unit {
		return fmt.Sprintf("%.0f B", v)
	}
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		if v < unit || u == "TiB" {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return ""
}
