package pick

import (
	"fmt"
	"math"

	"github.com/ompgo/omp/pkg/vault"
)

// DefaultReservePct is the global usage reserve in percent when
// retry.usageReservePct is not configured.
const DefaultReservePct = 10

// Account names one OAuth account of a provider. A field that is set must
// equal the account's field exactly; at least one of Email, AccountID and
// ProjectID is set in a policy, OrgID narrows an account shared by teams.
type Account struct {
	Email     string `json:"email,omitempty"`
	AccountID string `json:"accountId,omitempty"`
	ProjectID string `json:"projectId,omitempty"`
	OrgID     string `json:"orgId,omitempty"`
}

// AccountOf is the identity of a stored credential a policy is matched on.
func AccountOf(c vault.Credential) Account {
	return Account{Email: c.Email, AccountID: c.AccountID, ProjectID: c.ProjectID, OrgID: c.OrgID()}
}

// matches reports whether account id is the one a names: every field set
// in a equals id's.
func (a Account) matches(id Account) bool {
	return (a.Email == "" || a.Email == id.Email) &&
		(a.AccountID == "" || a.AccountID == id.AccountID) &&
		(a.ProjectID == "" || a.ProjectID == id.ProjectID) &&
		(a.OrgID == "" || a.OrgID == id.OrgID)
}

// Policy is the routing policy of one OAuth account (auth.accountPolicies).
type Policy struct {
	Provider string
	Account  Account
	// Priority orders accounts: higher is preferred. nil counts as 0.
	Priority *float64
	// ReservePct (0–100) overrides the global reserve for this account:
	// while its remaining usage is at or below this share, the account is
	// used only when no measured account is outside its reserve.
	ReservePct *float64
}

// PriorityValue is Priority, 0 when unset.
func (p *Policy) PriorityValue() float64 {
	if p == nil || p.Priority == nil {
		return 0
	}
	return *p.Priority
}

// Policies are the configured account policies and the global reserve.
// A nil *Policies has no policy; the global reserve then never applies,
// since it only governs providers with at least one policy.
type Policies struct {
	List []Policy
	// ReservePct is the global usage reserve in percent
	// (retry.usageReservePct, clamped to 0–100 where it is used); the
	// configuration's default is DefaultReservePct.
	ReservePct float64
}

// Find returns the first policy of provider that names account id, or nil.
func (ps *Policies) Find(provider string, id Account) *Policy {
	if ps == nil {
		return nil
	}
	for i := range ps.List {
		if ps.List[i].Provider == provider && ps.List[i].Account.matches(id) {
			return &ps.List[i]
		}
	}
	return nil
}

// For returns the policy of a stored credential (OAuth only), or nil.
func (ps *Policies) For(provider string, c vault.Credential) *Policy {
	if ps == nil || !c.IsOAuth() {
		return nil
	}
	return ps.Find(provider, AccountOf(c))
}

// Reserve returns the usage reserve in percent (0–100) of an account with
// policy pol (nil: none), and whether it is the account's own override.
func (ps *Policies) Reserve(pol *Policy) (pct float64, override bool) {
	pct = DefaultReservePct
	if ps != nil {
		pct = ps.ReservePct
	}
	if pol != nil && pol.ReservePct != nil {
		pct, override = *pol.ReservePct, true
	}
	if math.IsNaN(pct) {
		pct = DefaultReservePct
	}
	return min(100, max(0, pct)), override
}

// Validate checks provider's policies against its stored OAuth credentials:
// each policy must name exactly one of them, and no two policies the same
// one. Its error is EINVALID and names the policy entry.
func (ps *Policies) Validate(provider string, creds []vault.Entry) error {
	if ps == nil {
		return nil
	}
	var oauth []Account
	for i := range creds {
		if creds[i].Credential.IsOAuth() {
			oauth = append(oauth, AccountOf(creds[i].Credential))
		}
	}
	if len(oauth) == 0 {
		return nil
	}
	owner := map[int]int{} // credential position → policy index
	for i, pol := range ps.List {
		if pol.Provider != provider {
			continue
		}
		match := -1
		n := 0
		for j, id := range oauth {
			if pol.Account.matches(id) {
				match, n = j, n+1
			}
		}
		where := fmt.Sprintf("auth.accountPolicies[%d].account", i)
		switch {
		case n == 0:
			return policyError("%s matches no stored OAuth account for %s", where, provider)
		case n > 1:
			return policyError("%s matches %d stored OAuth accounts for %s; add another identity field", where, n, provider)
		}
		if prev, dup := owner[match]; dup {
			return policyError("auth.accountPolicies[%d] and auth.accountPolicies[%d] match the same stored OAuth account for %s", prev, i, provider)
		}
		owner[match] = i
	}
	return nil
}

func policyError(format string, args ...any) error {
	return &vault.Error{Code: vault.EINVALID, Message: fmt.Sprintf(format, args...)}
}

// remaining is the unused share of the most used limit among ls whose
// window has not reset since the report was fetched: max(0, 1 − highest
// used fraction); false when no limit has a known used fraction.
func remaining(r *vault.UsageReport, ls []vault.UsageLimit, nowMs int64) (float64, bool) {
	most, ok := 0.0, false
	for _, l := range ls {
		if w := l.Window; w != nil && w.ResetsAt != nil && *w.ResetsAt <= nowMs && r.FetchedAt < *w.ResetsAt {
			continue
		}
		f, known := l.ResolveUsedFraction()
		if !known || math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		if !ok || f > most {
			most, ok = f, true
		}
	}
	if !ok {
		return 0, false
	}
	return max(0, 1-most), true
}
