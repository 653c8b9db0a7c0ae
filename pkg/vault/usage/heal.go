package usage

import (
	"slices"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// HealthyScopes returns the block scopes a fresh report of provider shows
// healthy, with the block key they belong to (the broker heals those blocks):
//   - openai-codex, per meter: "chat" (the main rate limit: allowed, not
//     limit-reached, none of its limits exhausted) and "spark" (its
//     additional limits present and none exhausted);
//   - google-antigravity, per backend counter: "counter:<key>" for each
//     counter the report has limits for, none of them exhausted (the
//     reference's healableBlockScopes). "counter:unknown" has no limits
//     and expires by clock only.
//
// Other providers have no healable scope (none).
func HealthyScopes(provider string, rep *vault.UsageReport) (providerKey string, scopes []string) {
	if rep == nil {
		return "", nil
	}
	switch provider {
	case "openai-codex":
		return vault.CodexProviderKey, codexHealthy(rep)
	case "google-antigravity":
		return vault.ProviderKey(provider, vault.TypeOAuth), antigravityHealthy(rep)
	}
	return "", nil
}

// antigravityHealthy is the counters of rep (from the limit ids
// "google-antigravity:<counter>:…", lower-cased, in first-seen order)
// whose limits are all below exhaustion, as block scopes.
func antigravityHealthy(rep *vault.UsageReport) (scopes []string) {
	var seen []string
	for _, l := range rep.Limits {
		parts := strings.Split(l.ID, ":")
		if len(parts) < 2 || parts[1] == "" {
			continue
		}
		counter := strings.ToLower(parts[1])
		if slices.Contains(seen, counter) {
			continue
		}
		seen = append(seen, counter)
		ls := vault.AntigravityCounterLimits(rep.Limits, counter)
		if len(ls) > 0 && !slices.ContainsFunc(ls, vault.UsageLimit.Exhausted) {
			scopes = append(scopes, "counter:"+counter)
		}
	}
	return scopes
}

// codexHealthy is the Codex meters rep shows healthy.
func codexHealthy(rep *vault.UsageReport) (scopes []string) {
	meters := map[string]bool{} // meter → healthy so far
	for _, l := range rep.Limits {
		m := codexMeter(l.ID)
		if m != vault.ScopeChat && m != vault.ScopeSpark {
			continue
		}
		ok, seen := meters[m]
		if !seen {
			ok = true
		}
		meters[m] = ok && l.Status != vault.StatusExhausted
	}
	if ok, seen := meters[vault.ScopeChat]; seen && ok {
		// As the reference: the meter must say allowed === true and
		// limitReached === false; a report without them heals nothing.
		a, aok := rep.Metadata["allowed"].(bool)
		lr, lok := rep.Metadata["limitReached"].(bool)
		meters[vault.ScopeChat] = aok && a && lok && !lr
	}
	for _, m := range []string{vault.ScopeChat, vault.ScopeSpark} {
		if meters[m] {
			scopes = append(scopes, m)
		}
	}
	return scopes
}

// codexMeter is the meter of a Codex limit id: "openai-codex:primary" and
// "…:secondary" are the chat meter, "openai-codex:<slug>:<window>" the
// slug's.
func codexMeter(id string) string {
	parts := strings.Split(id, ":")
	switch {
	case len(parts) == 2:
		return vault.ScopeChat
	case len(parts) == 3:
		return parts[1]
	}
	return ""
}
