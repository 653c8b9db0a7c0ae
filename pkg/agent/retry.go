package agent

import (
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// Retry is the auto-retry policy. The zero value is disabled; use
// DefaultRetry.
type Retry struct {
	Enabled bool
	// MaxRetries is the number of retries after the first failure (10).
	MaxRetries int
	// BaseDelay doubles per attempt, capped at 8 s, times a jitter factor
	// in [0.75, 1.0] (500 ms).
	BaseDelay time.Duration
	// MaxDelay is the largest server-requested delay honoured; a longer
	// retry-after hint means no retry (300 s).
	MaxDelay time.Duration
}

// DefaultRetry is the default policy: up to 10 retries, backoff from
// 500 ms capped at 8 s with jitter, a retry-after honoured up to 5 min.
func DefaultRetry() Retry {
	return Retry{Enabled: true, MaxRetries: 10, BaseDelay: 500 * time.Millisecond, MaxDelay: 300 * time.Second}
}

const backoffCap = 8 * time.Second

// delay returns the wait before retry attempt n (1-based), and false when
// the server asked for more than MaxDelay.
func (r Retry) delay(n int, hint time.Duration) (time.Duration, bool) {
	if hint > 0 {
		if hint > r.MaxDelay {
			return 0, false
		}
		return hint, true
	}
	d := r.BaseDelay << (n - 1)
	if d > backoffCap || d <= 0 {
		d = backoffCap
	}
	return time.Duration(float64(d) * (0.75 + 0.25*rand.Float64())), true
}

var transientStatus = []int{408, 429, 500, 502, 503, 504, 529}

var transientText = []string{"overloaded", "rate limit", "rate_limit", "too many requests", "service unavailable",
	"internal server error", "network", "connection", "socket", "econnreset", "econnrefused", "timeout", "timed out",
	"fetch failed", "terminated", "stream ended unexpectedly"}

var overflowText = []string{"context_length_exceeded", "prompt is too long", "maximum context length", "too many tokens",
	"context window", "exceeds the context", "input is too long", "request_too_large"}

// IsOverflow reports whether a failed assistant message is a context
// overflow (the overflow classifier).
func IsOverflow(m *llm.Message) bool {
	if m.ErrorStatus == 413 {
		return true
	}
	msg := strings.ToLower(m.ErrorMessage)
	return slices.ContainsFunc(overflowText, func(s string) bool { return strings.Contains(msg, s) })
}

// UsageLimit is what OnUsageLimit is told about a turn that failed on a
// provider usage limit.
type UsageLimit struct {
	Model      llm.Model
	Credential llm.Credential
	RetryAfter time.Duration
}

// PolicyDenied is what OnPolicyDenied is told about a turn whose
// credential an account policy refused.
type PolicyDenied struct {
	Model      llm.Model
	Credential llm.Credential
	// ModelOnly: the account is not entitled to Model only (block scope
	// "model-policy:<model>"); otherwise the account is refused outright.
	ModelOnly bool
}

// maxAccountSwitches bounds the immediate retries on another account after
// usage limits within one prompt.
const maxAccountSwitches = 8

// IsUsageLimit reports whether m failed on a provider usage limit: a 429
// whose error reads as one (the reference's isUsageLimitError).
func IsUsageLimit(m *llm.Message) bool {
	return m.StopReason == llm.StopError && m.ErrorStatus == 429 && llm.IsUsageLimitText(m.ErrorMessage)
}

// IsTransient reports whether a failed assistant message is worth a retry:
// a transient status or message, and not an overflow.
func IsTransient(m *llm.Message) bool {
	if m.StopReason != llm.StopError || IsOverflow(m) {
		return false
	}
	if slices.Contains(transientStatus, m.ErrorStatus) {
		return true
	}
	msg := strings.ToLower(m.ErrorMessage)
	return slices.ContainsFunc(transientText, func(s string) bool { return strings.Contains(msg, s) })
}
