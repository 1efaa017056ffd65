package status

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func testHistogram(reg *prometheus.Registry) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cellar_tablet_rpc_duration_seconds", Help: "test",
		Buckets: []float64{0.001, 0.002, 0.005, 0.01}}, []string{"server", "rpc"})
	reg.MustRegister(h)
	return h
}

func gather(t *testing.T, s *Sampler, reg *prometheus.Registry, at time.Time) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	s.Record(at, fams)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSamplerRatesAndP99(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := testHistogram(reg)
	s := NewSampler(SamplerOptions{Gatherer: reg, Window: time.Minute})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h.WithLabelValues("ts1", "ReadRow").Observe(0.0001) // before the first sample: not in any interval
	gather(t, s, reg, t0)
	// Interval 1, 5 s: 200 operations over two rpcs; half fast, half in
	// the (5ms, 10ms] bucket. Another server's operations do not count.
	for range 100 {
		h.WithLabelValues("ts1", "ReadRow").Observe(0.0005)
		h.WithLabelValues("ts1", "MutateRow").Observe(0.0075)
		h.WithLabelValues("ts2", "ReadRow").Observe(0.0005)
	}
	gather(t, s, reg, t0.Add(5*time.Second))
	// Interval 2, 10 s: nothing.
	gather(t, s, reg, t0.Add(15*time.Second))
	// Interval 3: one slow operation beyond the last bucket.
	h.WithLabelValues("ts1", "Scan").Observe(3)
	gather(t, s, reg, t0.Add(20*time.Second))

	pts := s.Series("cellar_tablet_rpc_duration_seconds", "ts1")
	if len(pts) != 3 {
		t.Fatalf("points: %+v", pts)
	}
	// rank 198 of 200 lies in (5ms, 10ms] after 100 below it: 5ms + 5ms*98/100.
	if !pts[0].At.Equal(t0.Add(5*time.Second)) || !near(pts[0].OpsPerSec, 40) || !pts[0].HasP99 || !near(pts[0].P99, 0.0099) {
		t.Fatalf("interval 1: %+v", pts[0])
	}
	if pts[1].OpsPerSec != 0 || pts[1].HasP99 {
		t.Fatalf("quiet interval: %+v", pts[1])
	}
	if !near(pts[2].OpsPerSec, 0.2) || !pts[2].HasP99 || pts[2].P99 != 0.01 {
		t.Fatalf("interval beyond the last bucket: %+v", pts[2])
	}
	if got := s.Series("cellar_tablet_rpc_duration_seconds", "ts2"); len(got) != 3 || !near(got[0].OpsPerSec, 20) {
		t.Fatalf("ts2: %+v", got)
	}
	if got := s.Series("cellar_tablet_rpc_duration_seconds", "nobody"); len(got) != 0 {
		t.Fatalf("unknown server: %+v", got)
	}

	// Samples older than the window go.
	gather(t, s, reg, t0.Add(80*time.Second))
	if got := s.Series("cellar_tablet_rpc_duration_seconds", "ts1"); len(got) != 1 || !got[0].At.Equal(t0.Add(80*time.Second)) {
		t.Fatalf("after the window moved: %+v", got)
	}
}

func TestSamplerSkipsAReplacedHistogram(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := testHistogram(reg)
	s := NewSampler(SamplerOptions{Gatherer: reg})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 10 {
		h.WithLabelValues("ts1", "ReadRow").Observe(0.0005)
	}
	gather(t, s, reg, t0)
	reg.Unregister(h)
	h = testHistogram(reg)
	h.WithLabelValues("ts1", "ReadRow").Observe(0.0005)
	gather(t, s, reg, t0.Add(time.Second))
	h.WithLabelValues("ts1", "ReadRow").Observe(0.0005)
	gather(t, s, reg, t0.Add(2*time.Second))
	pts := s.Series("cellar_tablet_rpc_duration_seconds", "ts1")
	if len(pts) != 1 || pts[0].OpsPerSec != 1 || pts[0].P99 > 0.001 {
		t.Fatalf("points: %+v", pts)
	}
}

func TestSamplerOptions(t *testing.T) {
	if err := (SamplerOptions{}).Validate(); err == nil {
		t.Fatal("no gatherer accepted")
	}
	if err := (SamplerOptions{Gatherer: prometheus.NewRegistry(), Interval: time.Minute, Window: time.Minute}).Validate(); err == nil {
		t.Fatal("a window of one sample accepted")
	}
	reg := prometheus.NewRegistry()
	h := testHistogram(reg)
	h.WithLabelValues("ts1", "ReadRow").Observe(0.0005)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewSampler(SamplerOptions{Gatherer: reg, Clock: func() time.Time { return now }})
	s.Sample()
	now = now.Add(time.Second)
	h.WithLabelValues("ts1", "ReadRow").Observe(0.0005)
	s.Sample()
	if pts := s.Series("cellar_tablet_rpc_duration_seconds", "ts1"); len(pts) != 1 || pts[0].OpsPerSec != 1 || s.Err() != nil {
		t.Fatalf("Sample with the injected clock: %+v %v", pts, s.Err())
	}
}
