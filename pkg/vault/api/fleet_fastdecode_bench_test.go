package api_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ompgo/omp/pkg/vault/api"
)

// observedBody is a 100-entry report as client.PostObserved sends it.
func observedBody(b *testing.B) []byte {
	rep := api.ClientUsageReport{InstallID: "bench-install", Hostname: "bench-host", App: "gateway"}
	for j := range 100 {
		rep.Entries = append(rep.Entries, api.ObservedUsageEntry{At: 1_700_000_000_000, Provider: fmt.Sprintf("provider-%d", j%5),
			Model: fmt.Sprintf("model-%d", j), Requests: 3, InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 5000, CostUsd: 0.02})
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkClientUsageDecode compares the hand-written parser with the
// encoding/json paths on the same body: the schema decoder the handler
// falls back to (after its syntax check), and a plain json.Unmarshal into
// the wire struct.
func BenchmarkClientUsageDecode(b *testing.B) {
	raw := observedBody(b)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, ok := api.FastClientUsage(raw); !ok {
				b.Fatal("fast path refused the common report")
			}
		}
	})
	b.Run("schema", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if !json.Valid(raw) {
				b.Fatal("invalid")
			}
			if _, err := api.DecodeClientUsage(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var r api.ClientUsageReport
			if err := json.Unmarshal(raw, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
