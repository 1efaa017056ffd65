package status

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// SamplerOptions configure a Sampler.
type SamplerOptions struct {
	// Gatherer is read at every sample: the process's registry.
	Gatherer prometheus.Gatherer
	// Interval is the time between samples (default 5 s).
	Interval time.Duration
	// Window is how far back samples are kept (default 10 min).
	Window time.Duration
	// Clock stamps samples (default time.Now).
	Clock func() time.Time
}

func (o SamplerOptions) withDefaults() SamplerOptions {
	if o.Interval == 0 {
		o.Interval = 5 * time.Second
	}
	if o.Window == 0 {
		o.Window = 10 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Validate checks the options.
func (o SamplerOptions) Validate() error {
	if o.Gatherer == nil {
		return errors.New("status: the sampler needs a Gatherer")
	}
	if o.Interval < 0 || o.Window < 0 {
		return errors.New("status: negative sampler interval or window")
	}
	if o.Interval > 0 && o.Window > 0 && o.Window < 2*o.Interval {
		return fmt.Errorf("status: a window of %v holds fewer than two samples %v apart", o.Window, o.Interval)
	}
	return nil
}

// Sampler keeps, for the last Window, what every cellar histogram (all
// its series of one server label summed) counted at each sample, so that
// pages can chart operations per second and the p99 latency per interval.
type Sampler struct {
	opts SamplerOptions

	mu      sync.Mutex
	samples []sample // oldest first
	lastErr error
}

type sample struct {
	at    time.Time
	hists map[seriesKey]*histSnap
}

// seriesKey names a histogram summed over all labels but server.
type seriesKey struct{ metric, server string }

// histSnap is a histogram's cumulative state: its count and the
// cumulative count at each upper bound.
type histSnap struct {
	count   uint64
	buckets map[float64]uint64
}

// Point is one interval of a series.
type Point struct {
	// At is the end of the interval.
	At time.Time
	// OpsPerSec is the operations counted in the interval per second.
	OpsPerSec float64
	// P99 is the interval's 99th percentile latency in seconds, from the
	// histogram's buckets; valid only if HasP99 (there were operations).
	P99    float64
	HasP99 bool
}

// NewSampler returns a sampler. It does no I/O; Run samples.
func NewSampler(opts SamplerOptions) *Sampler {
	return &Sampler{opts: opts.withDefaults()}
}

// Run samples every Interval until ctx ends.
func (s *Sampler) Run(ctx context.Context) error {
	if err := s.opts.Validate(); err != nil {
		return err
	}
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	s.Sample()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.Sample()
		}
	}
}

// Sample gathers the metrics once and records them at the clock's time.
// A gather error is kept for Err and the sample still records what was
// gathered.
func (s *Sampler) Sample() {
	fams, err := s.opts.Gatherer.Gather()
	s.Record(s.opts.Clock(), fams)
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// Err returns the last gather's error.
func (s *Sampler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Record adds a sample of families taken at at, and forgets samples older
// than the window. It is the sampler's deterministic core.
func (s *Sampler) Record(at time.Time, fams []*dto.MetricFamily) {
	hists := map[seriesKey]*histSnap{}
	for _, f := range fams {
		if f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			k := seriesKey{metric: f.GetName(), server: labelValue(m, "server")}
			snap := hists[k]
			if snap == nil {
				snap = &histSnap{buckets: map[float64]uint64{}}
				hists[k] = snap
			}
			snap.count += h.GetSampleCount()
			for _, b := range h.GetBucket() {
				snap.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, sample{at: at, hists: hists})
	cut := 0
	for cut < len(s.samples) && at.Sub(s.samples[cut].at) > s.opts.Window {
		cut++
	}
	s.samples = append([]sample(nil), s.samples[cut:]...)
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Series returns the intervals between consecutive samples of metric's
// histograms whose server label is server, oldest first. An interval in
// which the count went down (the histogram was replaced) is left out.
func (s *Sampler) Series(metric, server string) []Point {
	k := seriesKey{metric: metric, server: server}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Point
	for i := 1; i < len(s.samples); i++ {
		prev, cur := s.samples[i-1], s.samples[i]
		secs := cur.at.Sub(prev.at).Seconds()
		if secs <= 0 {
			continue
		}
		a, b := prev.hists[k], cur.hists[k]
		if b == nil {
			continue
		}
		if a == nil {
			a = &histSnap{}
		}
		if b.count < a.count {
			continue
		}
		p := Point{At: cur.at, OpsPerSec: float64(b.count-a.count) / secs}
		p.P99, p.HasP99 = quantile(0.99, a, b)
		out = append(out, p)
	}
	return out
}

// quantile estimates the q-quantile of the observations made between two
// snapshots of a histogram, interpolating linearly inside the bucket that
// holds it, as Prometheus's histogram_quantile does. Observations above the
// highest finite bound count as that bound.
func quantile(q float64, a, b *histSnap) (float64, bool) {
	total := b.count - a.count
	if total == 0 {
		return 0, false
	}
	bounds := make([]float64, 0, len(b.buckets))
	for ub := range b.buckets {
		if !math.IsInf(ub, +1) {
			bounds = append(bounds, ub)
		}
	}
	if len(bounds) == 0 {
		return 0, false
	}
	sort.Float64s(bounds)
	rank := q * float64(total)
	lower, below := 0.0, 0.0
	for _, ub := range bounds {
		n := float64(delta(a.buckets[ub], b.buckets[ub]))
		if n >= rank {
			if n == below {
				return ub, true
			}
			return lower + (ub-lower)*(rank-below)/(n-below), true
		}
		lower, below = ub, n
	}
	return bounds[len(bounds)-1], true
}

// delta is to-from, or 0 where a histogram was replaced and counts fell.
func delta(from, to uint64) uint64 {
	if to < from {
		return 0
	}
	return to - from
}
