package usage

import (
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// HealthyScopes returns the block scopes a fresh report of provider shows
// healthy, with the block key they belong to (fleet.md §4 healing). For
// openai-codex it is per meter: "chat" (the main rate limit: allowed, not
// limit-reached, none of its limits exhausted) and "spark" (its
// additional limits present and none exhausted). Other providers have no
// healable scope here (none).
func HealthyScopes(provider string, rep *vault.UsageReport) (providerKey string, scopes []string) {
	if rep == nil || provider != "openai-codex" {
		return "", nil
	}
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
		if a, _ := rep.Metadata["allowed"].(bool); rep.Metadata["allowed"] != nil && !a {
			meters[vault.ScopeChat] = false
		}
		if lr, _ := rep.Metadata["limitReached"].(bool); lr {
			meters[vault.ScopeChat] = false
		}
	}
	for _, m := range []string{vault.ScopeChat, vault.ScopeSpark} {
		if meters[m] {
			scopes = append(scopes, m)
		}
	}
	return vault.CodexProviderKey, scopes
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
