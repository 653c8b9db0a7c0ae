package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// BenchmarkRender1000 measures what caching per generation leaves to do per
// GET /v1/snapshot with 1 000 credentials: re-render from the pre-encoded
// entries with rotatesInMs recomputed ("render"), against copying a fully
// cached body ("copy", what a cache keyed on the schedule could at best do).
func BenchmarkRender1000(b *testing.B) {
	h := testHub()
	sched := vault.Schedule{Enabled: true, IntervalMs: 60_000, SkewMs: 300_000, NextSweepAt: 5_000}
	h.schedule = func() vault.Schedule { return sched }
	recs := make([]vault.Record, 1000)
	for i := range recs {
		recs[i] = vault.Record{ID: int64(i + 1), Provider: "anthropic", IdentityKey: fmt.Sprintf("email:u%d@x", i),
			Credential: vault.Credential{Type: vault.TypeOAuth, Access: strings.Repeat("a", 200), Refresh: "r", Expires: int64(i) * 60_000, Email: fmt.Sprintf("u%d@x", i)}}
	}
	sh := buildOf(h, 1, recs, nil, nil)
	cached := appendSnapshot(nil, sh, sched, 1000, false, shape15)
	b.Run("render", func(b *testing.B) {
		buf := make([]byte, 0, len(cached))
		b.SetBytes(int64(len(cached)))
		for b.Loop() {
			buf = appendSnapshot(buf[:0], sh, sched, 1000, false, shape15)
		}
	})
	b.Run("copy", func(b *testing.B) {
		buf := make([]byte, 0, len(cached))
		b.SetBytes(int64(len(cached)))
		for b.Loop() {
			buf = append(buf[:0], cached...)
		}
	})
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			buildOf(h, 2, recs, nil, sh)
		}
	})
}
