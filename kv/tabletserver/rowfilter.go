package tabletserver

import (
	"crypto/rand"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"sync"

	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Cloud Bigtable row filters (model.RowFilter) on the tablet server: the
// wire form's decoding, and the source of randomness for row samples.
// compileFilter compiles a request's row filter once; each request then
// evaluates it through an evaluator of its own (filter.evaluator), after
// the other filter steps.

// maxRowFilterNodes bounds the filters of one tree. The service limits a
// serialized RowFilter to 20480 bytes, and every filter costs at least two
// bytes there, so no filter the service accepts comes near it; it keeps a
// large message from turning into a tree that every row must walk.
const maxRowFilterNodes = 1 << 14

// rowFilterFromProto decodes a row filter from the wire. The tree comes
// from the network, so the decoding trusts nothing: it stops below
// model.MaxRowFilterDepth levels and maxRowFilterNodes filters (the proto
// decoder allows thousands of levels, and model.CompileRowFilter would
// only reject them after the copy), and it rejects enum values that do
// not fit the model's uint8 kinds, so that none wraps onto a valid one.
// Everything else is model.CompileRowFilter's to check. Errors wrap
// model.ErrInvalidArgument.
func rowFilterFromProto(p *pb.RowFilter) (model.RowFilter, error) {
	d := rowFilterDecoder{}
	var out model.RowFilter
	err := d.decode(&out, p, "", 0)
	return out, err
}

type rowFilterDecoder struct{ nodes int }

func rowFilterErr(path, format string, args ...any) error {
	where := "row filter"
	if path != "" {
		where += " " + path
	}
	return fmt.Errorf("%w: %s: %s", model.ErrInvalidArgument, where, fmt.Sprintf(format, args...))
}

// decode fills dst from p; path names p as model.CompileRowFilter's
// errors do (chain[1].condition.true), and depth counts the levels as it
// does too.
func (d *rowFilterDecoder) decode(dst *model.RowFilter, p *pb.RowFilter, path string, depth int) error {
	if depth > model.MaxRowFilterDepth {
		return rowFilterErr(path, "filters nest deeper than %d levels", model.MaxRowFilterDepth)
	}
	if d.nodes++; d.nodes > maxRowFilterNodes {
		return rowFilterErr(path, "more than %d filters", maxRowFilterNodes)
	}
	k := p.GetKind()
	if k < 0 || k > math.MaxUint8 {
		return rowFilterErr(path, "unknown filter kind %d", k)
	}
	*dst = model.RowFilter{
		Kind:        model.RowFilterKind(k),
		Regex:       p.GetRegex(),
		Probability: p.GetProbability(),
		Family:      p.GetFamily(),
		N:           p.GetN(),
		Label:       p.GetLabel(),
		Mask:        p.GetMask(),
		FlagFalse:   p.GetFlagFalse(),
	}
	var err error
	if dst.Start, err = boundFromProto(p.GetStart(), path, "start"); err != nil {
		return err
	}
	if dst.End, err = boundFromProto(p.GetEnd(), path, "end"); err != nil {
		return err
	}
	if t := p.GetTime(); t != nil {
		dst.Time = model.TimeRange{Start: t.Start, End: t.End}
	}
	if fs := p.GetFilters(); len(fs) > 0 {
		name := dst.Kind.String()
		dst.Filters = make([]model.RowFilter, len(fs))
		for i, f := range fs {
			if err := d.decode(&dst.Filters[i], f, joinPath(path, fmt.Sprintf("%s[%d]", name, i)), depth+1); err != nil {
				return err
			}
		}
	}
	for _, br := range []struct {
		p    *pb.RowFilter
		dst  **model.RowFilter
		name string
	}{
		{p.GetPredicate(), &dst.Predicate, "condition.predicate"},
		{p.GetTrueFilter(), &dst.True, "condition.true"},
		{p.GetFalseFilter(), &dst.False, "condition.false"},
	} {
		// Unset stays nil: for a condition, an unset predicate passes all
		// but an unset branch outputs nothing, so presence matters.
		if br.p == nil {
			continue
		}
		*br.dst = new(model.RowFilter)
		if err := d.decode(*br.dst, br.p, joinPath(path, br.name), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func boundFromProto(b *pb.Bound, path, which string) (model.Bound, error) {
	if b == nil {
		return model.Bound{}, nil
	}
	if b.Kind < 0 || b.Kind > math.MaxUint8 {
		return model.Bound{}, rowFilterErr(path, "%s: unknown bound kind %d", which, b.Kind)
	}
	return model.Bound{Kind: model.BoundKind(b.Kind), Value: b.Value}, nil
}

func joinPath(path, elem string) string {
	if path == "" {
		return elem
	}
	return path + "." + elem
}

// lockedRand is the server's own source for row samples when
// Options.Rand is not set: seeded once from the system's randomness, and
// locked because concurrent requests draw from it.
type lockedRand struct {
	mu sync.Mutex
	r  *mrand.Rand
}

func newLockedRand() *lockedRand {
	var seed [32]byte
	rand.Read(seed[:]) // never fails (crypto/rand crashes the process instead)
	return &lockedRand{r: mrand.New(mrand.NewChaCha8(seed))}
}

func (l *lockedRand) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}
