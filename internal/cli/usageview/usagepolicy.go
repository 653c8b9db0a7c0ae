package usageview

import (
	"cmp"
	"math"
	"strconv"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/pick"
)

// reportAccount is the identity a report's account policy is matched on:
// metadata email, accountId, projectId and orgId, the ids falling back to
// the first limit scope that carries one.
func reportAccount(r vault.UsageReport) pick.Account {
	scope := func(get func(vault.UsageScope) string) string {
		for _, l := range r.Limits {
			if v := get(l.Scope); v != "" {
				return v
			}
		}
		return ""
	}
	return pick.Account{
		Email:     metaString(r, "email"),
		AccountID: cmp.Or(metaString(r, "accountId"), scope(func(s vault.UsageScope) string { return s.AccountID })),
		ProjectID: cmp.Or(metaString(r, "projectId"), scope(func(s vault.UsageScope) string { return s.ProjectID })),
		OrgID:     cmp.Or(metaString(r, "orgId"), scope(func(s vault.UsageScope) string { return s.OrgID })),
	}
}

func accountOf(a Account) pick.Account {
	return pick.Account{Email: a.Email, AccountID: a.AccountID, ProjectID: a.ProjectID, OrgID: a.OrgID}
}

// policyProviders are the providers with at least one account (a stored
// OAuth account or a report) named by an account policy: their accounts
// get a policy line.
func policyProviders(reports []vault.UsageReport, accounts []Account, ps *pick.Policies) map[string]bool {
	out := map[string]bool{}
	if ps == nil {
		return out
	}
	for _, a := range accounts {
		if a.Type == string(vault.TypeOAuth) && ps.Find(a.Provider, accountOf(a)) != nil {
			out[a.Provider] = true
		}
	}
	for _, r := range reports {
		if ps.Find(r.Provider, reportAccount(r)) != nil {
			out[r.Provider] = true
		}
	}
	return out
}

// policyLine is "      policy: priority P · reserve R% (global|override) ·
// inside reserve|eligible · X% left", or "… · reserve unknown" when no
// limit has a known used fraction (limits nil: an account without a
// report). X is what the most used limit leaves; the account is inside its
// reserve when X is at or below R.
func policyLine(provider string, id pick.Account, limits []vault.UsageLimit, ps *pick.Policies) line {
	pol := ps.Find(provider, id)
	reserve, override := ps.Reserve(pol)
	kind := "(global)"
	if override {
		kind = "(override)"
	}
	text := "policy: priority " + jsNumber(pol.PriorityValue()) + " · reserve " + jsNumber(reserve) + "% " + kind
	most, known := 0.0, false
	for _, l := range limits {
		if f, ok := l.ResolveUsedFraction(); ok && !math.IsNaN(f) && !math.IsInf(f, 0) && (!known || f > most) {
			most, known = f, true
		}
	}
	if !known {
		text += " · reserve unknown"
	} else {
		left := max(0, 1-most) * 100
		state := "eligible"
		if left <= reserve {
			state = "inside reserve"
		}
		text += " · " + state + " · " + strconv.FormatFloat(left, 'f', 1, 64) + "% left"
	}
	return line{s(plain, "      "), s(dim, text)}.cut(TermWidth)
}

// jsNumber formats a number as JavaScript's String(n) does for the values
// a policy holds (2, -1.5, 12.5).
func jsNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
