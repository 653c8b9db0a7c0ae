package usage

import (
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func BenchmarkCodexDecode(b *testing.B) {
	raw := []byte(codexPayload)
	for b.Loop() {
		v, err := decodeJSON(raw)
		if err != nil {
			b.Fatal(err)
		}
		_ = CodexReport(v, 1767323045000, "acct", "e@x")
	}
}

func BenchmarkDedupe100(b *testing.B) {
	reports := make([]vault.UsageReport, 100)
	for i := range reports {
		reports[i] = rep("openai-codex", 3, int64(i), map[string]any{"email": string(rune('a' + i%26))})
	}
	for b.Loop() {
		_ = Dedupe(reports)
	}
}
