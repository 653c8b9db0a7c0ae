package cliproxy

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// expiryKeys are CLIProxyAPI's expiry aliases in lookup order.
// oauth_expires_at (GitLab files) is a Go addition.
var expiryKeys = []string{"expired", "expire", "expires_at", "expiresAt", "expiry", "expires"}

// expiryLayouts are the accepted string forms, tried in order. Layouts
// without a zone are read as UTC, as CLIProxyAPI does.
var expiryLayouts = []string{
	time.RFC3339, // also accepts fractional seconds when parsing
	"2006-01-02T15:04:05Z0700",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02",
	time.RFC1123,
	time.RFC1123Z,
}

// msThreshold separates epoch seconds from epoch milliseconds: 1e12 ms is
// September 2001, 1e12 s is far beyond any token expiry.
const msThreshold = 1e12

// findExpiry returns the expiry in epoch milliseconds: the first alias, top
// level then nested, whose value parses.
func findExpiry(m, nested map[string]any) (int64, bool) {
	for _, src := range []map[string]any{m, nested} {
		for _, k := range expiryKeys {
			if ms, ok := ParseExpiry(src[k]); ok {
				return ms, true
			}
		}
	}
	if ms, ok := ParseExpiry(m["oauth_expires_at"]); ok {
		return ms, true
	}
	return 0, false
}

// ParseExpiry converts a decoded JSON expiry value to epoch milliseconds:
// a string in RFC 3339 (optionally fractional, numeric offset or Z),
// `2006-01-02 15:04:05`, `2006-01-02 15:04` and a few close variants, or a
// positive number of Unix seconds or milliseconds (values ≥ 1e12 are ms).
func ParseExpiry(v any) (int64, bool) {
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return 0, false
		}
		for _, layout := range expiryLayouts {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UnixMilli(), true
			}
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 || x > 1e17 {
			return 0, false
		}
		if x < msThreshold {
			x *= 1000
		}
		return int64(math.Floor(x)), true
	}
	return 0, false
}

// jsNumberString formats a float64 as JavaScript does for ordinary values.
func jsNumberString(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	// Go writes 1e+21 like JS, but small exponents as 1e-07 where JS writes 1e-7.
	if i := strings.Index(s, "e-0"); i >= 0 {
		s = s[:i+2] + s[i+3:]
	}
	return s
}
