package chaos

import (
	"os"
	"strconv"
	"testing"
)

// Seed is the seed of a chaos test: $CELLAR_CHAOS_SEED if set (to replay
// a run; make soak sets a new one each time), else def. It is logged.
func Seed(t testing.TB, def uint64) uint64 {
	t.Helper()
	seed := def
	if s := os.Getenv("CELLAR_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CELLAR_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with CELLAR_CHAOS_SEED=%d)", seed, seed)
	return seed
}
