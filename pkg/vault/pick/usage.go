package pick

import (
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// identity is what a usage report can be matched on for one credential.
type identity struct {
	accountID, email, projectID string
}

func norm(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// credentialIdentity reads the credential's account id, email and project id,
// falling back to the access token's claims (a Codex login may carry its
// ChatGPT account id only in the JWT).
func credentialIdentity(c vault.Credential) identity {
	id := identity{accountID: norm(c.AccountID), email: norm(c.Email), projectID: norm(c.ProjectID)}
	if id.accountID != "" && id.email != "" {
		return id
	}
	claims := vault.JWTClaims(c.Access)
	if claims == nil {
		return id
	}
	if id.accountID == "" {
		if auth, ok := claims["https://api.openai.com/auth"].(map[string]any); ok {
			s, _ := auth["chatgpt_account_id"].(string)
			id.accountID = norm(s)
		}
	}
	if id.email == "" {
		s, _ := claims["email"].(string)
		if s == "" {
			if prof, ok := claims["https://api.openai.com/profile"].(map[string]any); ok {
				s, _ = prof["email"].(string)
			}
		}
		id.email = norm(s)
	}
	return id
}

func metaString(r vault.UsageReport, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if s, ok := r.Metadata[k].(string); ok && norm(s) != "" {
			out = append(out, norm(s))
		}
	}
	return out
}

// reportIdentities lists a report's account ids, emails and project ids
// (metadata accountId/account_id and every limit's scope
// accountId; metadata email; metadata projectId/project_id and scope
// projectId).
func reportIdentities(r vault.UsageReport) (accounts, emails, projects []string) {
	accounts = metaString(r, "accountId", "account_id")
	emails = metaString(r, "email")
	projects = metaString(r, "projectId", "project_id")
	for _, l := range r.Limits {
		if s := norm(l.Scope.AccountID); s != "" {
			accounts = append(accounts, s)
		}
		if s := norm(l.Scope.ProjectID); s != "" {
			projects = append(projects, s)
		}
	}
	return accounts, emails, projects
}

func contains(list []string, s string) bool {
	if s == "" {
		return false
	}
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// matchReport finds the usage report of credential c among reports:
// the first report of provider whose identity matches.
//
// Deviation: the reference also hands out the provider's only report to any
// credential when exactly one report exists. With several accounts and one
// answering probe that pins one account's usage on all of them (and its
// exhaustion blocks every one), so here a lone report is used only when it
// carries no identity at all.
func matchReport(provider string, c vault.Credential, reports []vault.UsageReport) *vault.UsageReport {
	id := credentialIdentity(c)
	var same []int
	for i := range reports {
		if reports[i].Provider != provider {
			continue
		}
		same = append(same, i)
		accounts, emails, projects := reportIdentities(reports[i])
		if contains(accounts, id.accountID) || contains(emails, id.email) || contains(projects, id.projectID) {
			return &reports[i]
		}
	}
	if len(same) == 1 {
		accounts, emails, projects := reportIdentities(reports[same[0]])
		if len(accounts)+len(emails)+len(projects) == 0 {
			return &reports[same[0]]
		}
	}
	return nil
}

// exhaustedUntil reports whether any of the report's scoped limits is
// exhausted and, if so, until when to block: the earliest future resetsAt of
// the exhausted limits, else now + DefaultBlock. For
// openai-codex and anthropic the scope is every limit.
func exhaustedUntil(r *vault.UsageReport, sc limitScope, nowMs int64) (untilMs int64, exhausted bool) {
	if r == nil {
		return 0, false
	}
	var earliest int64
	for _, l := range sc.exhaust(r.Limits) {
		if !l.Exhausted() {
			continue
		}
		exhausted = true
		if l.Window != nil && l.Window.ResetsAt != nil && *l.Window.ResetsAt > nowMs {
			if earliest == 0 || *l.Window.ResetsAt < earliest {
				earliest = *l.Window.ResetsAt
			}
		}
	}
	if !exhausted {
		return 0, false
	}
	if earliest == 0 {
		return nowMs + DefaultBlock.Milliseconds(), true
	}
	return earliest, true
}

// MatchReport returns the usage report of credential c of provider among
// reports (the rule selection uses), or nil. `omp usage`
// uses it to keep the reports of an account pool's accounts only.
func MatchReport(provider string, c vault.Credential, reports []vault.UsageReport) *vault.UsageReport {
	return matchReport(provider, c, reports)
}
