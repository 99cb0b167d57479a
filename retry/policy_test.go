package retry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schedule drains b and returns its sleeps, failing the test if b has not
// stopped after limit of them.
func schedule(t *testing.T, b backoff.BackOff, limit int) []time.Duration {
	t.Helper()
	var sleeps []time.Duration
	for range limit {
		d := b.NextBackOff()
		if d == backoff.Stop {
			return sleeps
		}
		sleeps = append(sleeps, d)
	}
	require.Equal(t, backoff.Stop, b.NextBackOff(), "still retrying after %d sleeps", limit)
	return sleeps
}

// withIntN fixes the jitter source of an exponential policy.
func withIntN(t *testing.T, p Policy, intN func(int) int) Policy {
	t.Helper()
	require.NotNil(t, p.exp, "not an exponential policy")
	p.exp.intN = intN
	return p
}

func highest(n int) int { return n - 1 }
func lowest(int) int    { return 0 }

func TestExponentialSchedule(t *testing.T) {
	var ns []int
	p := withIntN(t, Exponential(10*time.Millisecond, 4), func(n int) int {
		ns = append(ns, n)
		return n - 1
	})
	got := schedule(t, p.backOff(nil), 100)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 30 * ms, 70 * ms, 150 * ms}, got)
	assert.Equal(t, []int{2, 4, 8, 16}, ns, "jitter range doubles with each retry")
}

func TestExponentialLowestJitterIsBase(t *testing.T) {
	p := withIntN(t, Exponential(10*time.Millisecond, 3), lowest)
	got := schedule(t, p.backOff(nil), 100)
	ms := time.Millisecond
	// Curator's max(1, rand): a draw of 0 still sleeps one base.
	assert.Equal(t, []time.Duration{10 * ms, 10 * ms, 10 * ms}, got)
}

func TestExponentialRandomStaysInBounds(t *testing.T) {
	src := rand.New(rand.NewPCG(1, 2))
	base := 7 * time.Millisecond
	p := withIntN(t, Exponential(base, MaxExponentialRetries), src.IntN)
	for round := range 20 {
		got := schedule(t, p.backOff(nil), 100)
		require.Len(t, got, MaxExponentialRetries)
		for i, d := range got {
			hi := base * time.Duration(1<<(i+1)-1)
			assert.GreaterOrEqual(t, d, base, "round %d retry %d", round, i)
			assert.LessOrEqual(t, d, hi, "round %d retry %d", round, i)
			assert.Zero(t, d%base, "round %d retry %d: sleeps are whole multiples of base", round, i)
		}
	}
}

func TestExponentialCapsRetriesLikeCurator(t *testing.T) {
	p := withIntN(t, Exponential(time.Millisecond, 1000), lowest)
	assert.Len(t, schedule(t, p.backOff(nil), 1000), 29)
}

func TestExponentialDoesNotOverflow(t *testing.T) {
	p := withIntN(t, Exponential(time.Hour, MaxExponentialRetries), highest)
	got := schedule(t, p.backOff(nil), 100)
	require.Len(t, got, MaxExponentialRetries)
	for i := 1; i < len(got); i++ {
		assert.GreaterOrEqual(t, got[i], got[i-1], "retry %d", i)
	}
	assert.Equal(t, time.Duration(math.MaxInt64), got[len(got)-1])
}

func TestExponentialNegativeArguments(t *testing.T) {
	assert.Empty(t, schedule(t, Exponential(time.Second, -1).backOff(nil), 10))
	p := withIntN(t, Exponential(-time.Second, 2), highest)
	assert.Equal(t, []time.Duration{0, 0}, schedule(t, p.backOff(nil), 10))
}

func TestExponentialReset(t *testing.T) {
	b := withIntN(t, Exponential(time.Millisecond, 2), highest).backOff(nil)
	first := schedule(t, b, 10)
	b.Reset()
	assert.Equal(t, first, schedule(t, b, 10))
}

func TestBackOffsAreIndependent(t *testing.T) {
	p := withIntN(t, Exponential(time.Millisecond, 2), highest)
	a, b := p.backOff(nil), p.backOff(nil)
	assert.Equal(t, time.Millisecond, a.NextBackOff())
	assert.Equal(t, time.Millisecond, b.NextBackOff(), "a second operation starts from scratch")
}

func TestBoundedExponential(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		policy   Policy
		expected []time.Duration
	}{
		{"capped", BoundedExponential(10*ms, 50*ms, 4), []time.Duration{10 * ms, 30 * ms, 50 * ms, 50 * ms}},
		{"base above max", BoundedExponential(time.Second, 20*ms, 2), []time.Duration{20 * ms, 20 * ms}},
		{"negative max", BoundedExponential(time.Second, -ms, 2), []time.Duration{0, 0}},
		{"negative retries", BoundedExponential(ms, time.Second, -3), nil},
		{"retries capped", BoundedExponential(0, 0, 50), make([]time.Duration, MaxExponentialRetries)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := withIntN(t, tt.policy, highest)
			assert.Equal(t, tt.expected, schedule(t, p.backOff(nil), 100))
		})
	}
}

func TestDefault(t *testing.T) {
	got := schedule(t, Default().backOff(nil), 100)
	require.Len(t, got, 10)
	for i, d := range got {
		assert.GreaterOrEqual(t, d, 100*time.Millisecond, "retry %d", i)
		assert.LessOrEqual(t, d, 5*time.Second, "retry %d", i)
	}
}

func TestFixedPolicies(t *testing.T) {
	s := time.Second
	tests := []struct {
		name     string
		policy   Policy
		expected []time.Duration
	}{
		{"NTimes", NTimes(3, s), []time.Duration{s, s, s}},
		{"NTimes zero", NTimes(0, s), nil},
		{"NTimes negative count", NTimes(-2, s), nil},
		{"NTimes negative sleep", NTimes(2, -s), []time.Duration{0, 0}},
		{"OneTime", OneTime(2 * s), []time.Duration{2 * s}},
		{"OneTime negative sleep", OneTime(-s), []time.Duration{0}},
		{"Never", Never(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.expected, schedule(t, tt.policy.backOff(nil), 100))
		})
	}
}

func TestForever(t *testing.T) {
	for _, tc := range []struct {
		sleep, expected time.Duration
	}{{time.Second, time.Second}, {-time.Second, 0}} {
		b := Forever(tc.sleep).backOff(nil)
		for i := range 10_000 {
			require.Equal(t, tc.expected, b.NextBackOff(), "retry %d", i)
		}
	}
}

func TestUntilElapsedUsesClock(t *testing.T) {
	clk := newFakeClock()
	b := UntilElapsed(10*time.Second, 3*time.Second).backOff(clk)
	for i, elapsed := range []time.Duration{0, 3, 6} {
		require.Equal(t, 3*time.Second, b.NextBackOff(), "retry %d at %ds", i, elapsed)
		clk.Advance(3 * time.Second)
	}
	// 9s elapsed: another 3s sleep would end past the 10s budget.
	assert.Equal(t, backoff.Stop, b.NextBackOff())

	b.Reset()
	assert.Equal(t, 3*time.Second, b.NextBackOff(), "Reset restarts the budget")
}

func TestUntilElapsedBoundaryIsInclusive(t *testing.T) {
	clk := newFakeClock()
	b := UntilElapsed(10*time.Second, 5*time.Second).backOff(clk)
	clk.Advance(5 * time.Second)
	assert.Equal(t, 5*time.Second, b.NextBackOff(), "5s + 5s is within 10s")
	clk.Advance(5*time.Second + 1)
	assert.Equal(t, backoff.Stop, b.NextBackOff())
}

func TestUntilElapsedZeroOrNegativeBudget(t *testing.T) {
	for _, budget := range []time.Duration{0, -time.Second} {
		b := UntilElapsed(budget, time.Millisecond).backOff(newFakeClock())
		assert.Equal(t, backoff.Stop, b.NextBackOff(), "budget %v", budget)
	}
}

func TestUntilElapsedNilClock(t *testing.T) {
	b := UntilElapsed(time.Hour, time.Second).backOff(nil)
	assert.Equal(t, time.Second, b.NextBackOff())
}

// Custom is Curator's allowRetry: it sees the retries so far and the time
// since the first attempt, and its "no" stops the schedule.
func TestCustomSeesRetriesAndElapsedTime(t *testing.T) {
	clk := newFakeClock()
	type call struct {
		retries int
		elapsed time.Duration
	}
	var seen []call
	p := Custom(func(retries int, elapsed time.Duration) (time.Duration, bool) {
		seen = append(seen, call{retries, elapsed})
		return time.Second, retries < 2
	})
	b := p.backOff(clk)
	assert.Equal(t, time.Second, b.NextBackOff())
	clk.Advance(3 * time.Second)
	assert.Equal(t, time.Second, b.NextBackOff())
	assert.Equal(t, backoff.Stop, b.NextBackOff())
	assert.Equal(t, []call{{0, 0}, {1, 3 * time.Second}, {2, 3 * time.Second}}, seen)
	assert.Equal(t, backoff.Stop, Custom(nil).backOff(clk).NextBackOff())
}

// The zero Policy is Default.
func TestZeroPolicyIsDefault(t *testing.T) {
	assert.Len(t, schedule(t, Policy{}.backOff(nil), 100), 10)
}
