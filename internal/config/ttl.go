package config

import (
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"
)

// EnvSnapshotTTL is the snapshot-cache freshness window variable, in ms.
const EnvSnapshotTTL = "OMP_AUTH_BROKER_SNAPSHOT_TTL_MS"

// EnvSnapshotCache overrides the snapshot-cache path.
const EnvSnapshotCache = "OMP_AUTH_BROKER_SNAPSHOT_CACHE"

// DefaultSnapshotTTL is the default snapshot-cache freshness window.
const DefaultSnapshotTTL = time.Hour

// ParseSnapshotTTL parses an OMP_AUTH_BROKER_SNAPSHOT_TTL_MS value with
// JavaScript Number() rules, as the reference does: a finite number ≥ 0 of
// milliseconds (decimal, exponent, 0x/0o/0b integers). Blank yields
// DefaultSnapshotTTL and ok; anything else yields DefaultSnapshotTTL and
// !ok. A zero duration disables the cache.
func ParseSnapshotTTL(raw string) (ttl time.Duration, ok bool) {
	v := strings.TrimSpace(raw)
	if v == "" {
		return DefaultSnapshotTTL, true
	}
	ms, ok := jsNumber(v)
	if !ok || math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 {
		return DefaultSnapshotTTL, false
	}
	if ms >= float64(math.MaxInt64)/float64(time.Millisecond) {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

// SnapshotTTL reads OMP_AUTH_BROKER_SNAPSHOT_TTL_MS from env; an invalid
// value logs `Invalid OMP_AUTH_BROKER_SNAPSHOT_TTL_MS; using default` and
// yields the default. log may be nil (slog.Default()).
func SnapshotTTL(env *Env, log *slog.Logger) time.Duration {
	raw := env.Get(EnvSnapshotTTL)
	ttl, ok := ParseSnapshotTTL(raw)
	if !ok {
		if log == nil {
			log = slog.Default()
		}
		log.Warn("Invalid OMP_AUTH_BROKER_SNAPSHOT_TTL_MS; using default", "value", raw)
	}
	return ttl
}

// jsNumber approximates JavaScript's Number(string) for trimmed input.
func jsNumber(s string) (float64, bool) {
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			if strings.ContainsRune(s, '_') {
				return 0, false
			}
			n, err := strconv.ParseUint(s[2:], base, 64)
			return float64(n), err == nil
		}
	}
	// JS rejects hex floats, underscores and Go's "inf"/"nan" spellings
	// ("Infinity" is accepted but is not finite, so it fails either way).
	if strings.ContainsAny(s, "xX_pP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
