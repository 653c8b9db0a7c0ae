package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/tools/benchcpu"
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

// BenchmarkEncode1000 is the encoding a broker does when every credential
// is new to it (its first snapshot, or a vault that changed whole): 1 000
// entries, a quarter of them API keys, the Codex ones with extension
// fields and blocks, in both shapes. A snapshot after a change encodes
// only the changed entries.
func BenchmarkEncode1000(b *testing.B) {
	h := testHub()
	recs := make([]vault.Record, 1000)
	blocks := map[int64][]vault.CredentialBlock{}
	for i := range recs {
		id := int64(i + 1)
		r := vault.Record{ID: id, Provider: "anthropic", IdentityKey: fmt.Sprintf("email:u%d@example.com", i),
			Credential: vault.Credential{Type: vault.TypeOAuth, Access: "sk-ant-oat01-" + strings.Repeat("a", 180), Refresh: "r",
				Expires: int64(i) * 60_000, Email: fmt.Sprintf("u%d@example.com", i)}}
		switch i % 4 {
		case 1:
			r.Provider = "openai-codex"
			r.Credential.AccountID = fmt.Sprintf("acct-%08d", i)
			r.Credential.Extra = map[string]json.RawMessage{"chatgptPlanType": json.RawMessage(`"pro"`), "idToken": json.RawMessage(`"` + strings.Repeat("j", 400) + `"`)}
			blocks[id] = []vault.CredentialBlock{{ProviderKey: "openai-codex:oauth", Scope: "chat", UntilMs: 1 << 50, UpdatedAtMs: 1000}}
		case 3:
			r = vault.Record{ID: id, Provider: "openai", IdentityKey: fmt.Sprintf("key:%d", i),
				Credential: vault.Credential{Type: vault.TypeAPIKey, Key: "sk-proj-" + strings.Repeat("k", 120), Source: "env"}}
		}
		recs[i] = r
	}
	b.ReportAllocs()
	defer benchcpu.Start(b)()
	for b.Loop() {
		buildOf(h, 2, recs, blocks, nil)
	}
}
