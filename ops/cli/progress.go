package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressLine shows how a long command is doing on stderr: on a terminal
// one line redrawn in place, otherwise (a pipe, a log file) a plain line
// now and then, so that logs stay readable.
type progressLine struct {
	w     io.Writer
	tty   bool
	every time.Duration
	now   func() time.Time
	last  time.Time
	drawn int // length of the line on screen, to blank what is left over
}

func newProgressLine(w io.Writer, now func() time.Time) *progressLine {
	p := &progressLine{w: w, now: now, every: time.Second}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty, p.every = true, 100*time.Millisecond
		}
	}
	return p
}

// update shows text if the last update is old enough.
func (p *progressLine) update(text string) {
	now := p.now()
	if !p.last.IsZero() && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	p.draw(text)
}

func (p *progressLine) draw(text string) {
	if !p.tty {
		fmt.Fprintln(p.w, text)
		return
	}
	pad := ""
	if n := p.drawn - len(text); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(p.w, "\r%s%s", text, pad)
	p.drawn = len(text)
}

// finish shows the final text and ends the line.
func (p *progressLine) finish(text string) {
	p.draw(text)
	if p.tty {
		fmt.Fprintln(p.w)
		p.drawn = 0
	}
}

// humanBytes formats a byte count with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// bar is a text bar of width cells, filled to done/total.
func bar(done, total int64, width int) string {
	fill := width
	if total > 0 {
		fill = int(int64(width) * min(done, total) / total)
	}
	return "[" + strings.Repeat("=", fill) + strings.Repeat(" ", width-fill) + "]"
}
