// Package retryafter parses the delay a server asks a client to wait
// before retrying: the Retry-After header (RFC 9110 §10.2.3) and the
// retry-after-ms header some providers (OpenAI, Anthropic) add. It is the
// one parser of the module: the provider adapters under pkg/llm and the
// OAuth and usage adapters under pkg/vault use it rather than their own.
package retryafter

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Max is the longest delay Parse returns: larger values (and dates further
// ahead) saturate to it, so no caller can overflow a time.Duration or wait
// for days on a malformed header.
const Max = 24 * time.Hour

// Parse returns the delay asked for by a Retry-After value and a
// retry-after-ms value (either may be ""), relative to now. A positive
// retry-after-ms wins; else Retry-After is read as delta-seconds (an
// integer, or a decimal as some providers send) or as an HTTP date in any
// of the three forms of http.ParseTime (RFC 1123, RFC 850, ANSI C; RFC
// 1123 is also accepted with a zone other than GMT, e.g. "UTC" or
// "+0000"). The
// result is in [0, Max]: 0 when neither value is usable or the date is not
// in the future, Max when the value is larger. Surrounding whitespace is
// ignored; NaN, infinities and negative numbers are unusable.
func Parse(retryAfter, retryAfterMS string, now time.Time) time.Duration {
	if d, ok := number(retryAfterMS, time.Millisecond); ok && d > 0 {
		return d
	}
	return Header(retryAfter, now)
}

// Header is Parse without a retry-after-ms value.
func Header(retryAfter string, now time.Time) time.Duration {
	v := strings.TrimSpace(retryAfter)
	if v == "" {
		return 0
	}
	if d, ok := number(v, time.Second); ok {
		return d
	}
	t, err := http.ParseTime(v)
	if err != nil {
		// Not GMT: RFC 1123 with another zone name or a numeric zone.
		if t, err = time.Parse(time.RFC1123, v); err != nil {
			if t, err = time.Parse(time.RFC1123Z, v); err != nil {
				return 0
			}
		}
	}
	if !t.After(now) {
		return 0
	}
	return min(t.Sub(now), Max) // Sub saturates at the Duration range
}

// Seconds converts a delay in seconds read from a response body (OpenAI's
// resets_in_seconds) to a Duration in [0, Max]: NaN and values ≤ 0 give 0.
func Seconds(s float64) time.Duration {
	switch {
	case !(s > 0): // also NaN
		return 0
	case s >= float64(Max/time.Second):
		return Max
	}
	return time.Duration(s * float64(time.Second))
}

// Clamp bounds a delay read in some other form (a google.rpc.RetryInfo
// duration) to [0, Max].
func Clamp(d time.Duration) time.Duration { return min(max(d, 0), Max) }

// number parses a non-negative decimal count of unit ("7", "1.5", "1e3"),
// saturating at Max. It reports false for anything else: signs, hex,
// "Inf", "NaN", dates.
func number(s string, unit time.Duration) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if !decimal(s) {
		return 0, false
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil { // the common case, exact
		if n >= uint64(Max/unit) {
			return Max, true
		}
		return time.Duration(n) * unit, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		ne, ok := err.(*strconv.NumError)
		if !ok || ne.Err != strconv.ErrRange { // out of range is ±0 or +Inf: saturate
			return 0, false
		}
	}
	if math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f >= float64(Max/unit) {
		return Max, true
	}
	return time.Duration(f * float64(unit)), true
}

// decimal reports whether s looks like an unsigned decimal number: it
// starts with a digit or '.', and holds only digits, '.', exponent marks
// and exponent signs.
func decimal(s string) bool {
	if s == "" || (s[0] != '.' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		default:
			return false
		}
	}
	return true
}
