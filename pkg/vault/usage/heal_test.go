package usage_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/usage"
)

func codexPayload(t *testing.T, chatUsed, sparkUsed float64, limitReached bool) any {
	t.Helper()
	raw := `{"plan_type":"plus","rate_limit":{"allowed":true,"limit_reached":` + map[bool]string{true: "true", false: "false"}[limitReached] + `,
	  "primary_window":{"used_percent":` + ftoa(chatUsed) + `,"limit_window_seconds":18000,"reset_after_seconds":100}},
	  "additional_rate_limits":[{"limit_name":"GPT-5.3-Codex-Spark","metered_feature":"codex_bengalfox",
	    "rate_limit":{"allowed":true,"limit_reached":false,"primary_window":{"used_percent":` + ftoa(sparkUsed) + `,"limit_window_seconds":18000,"reset_after_seconds":100}}}]}`
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func ftoa(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestHealthyScopesCodexPerMeter(t *testing.T) {
	for _, c := range []struct {
		name         string
		chat, spark  float64
		limitReached bool
		want         []string
	}{
		{"both healthy", 10, 10, false, []string{"chat", "spark"}},
		{"spark exhausted", 10, 100, false, []string{"chat"}},
		{"chat exhausted", 100, 10, false, []string{"spark"}},
		{"limit reached", 10, 10, true, []string{"spark"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := usage.CodexReport(codexPayload(t, c.chat, c.spark, c.limitReached), 1000, "acct", "a@x.y")
			key, got := usage.HealthyScopes("openai-codex", rep)
			if key != vault.CodexProviderKey || !slices.Equal(got, c.want) {
				t.Fatalf("%s %v, want %v (limits %+v)", key, got, c.want, rep.Limits)
			}
		})
	}
	if _, got := usage.HealthyScopes("anthropic", &vault.UsageReport{}); got != nil {
		t.Fatalf("anthropic scopes %v", got)
	}
}
