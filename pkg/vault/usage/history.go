package usage

import (
	"cmp"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// HistoryEntries builds the usage-history rows of one successful report:
// one row per limit, keyed by the credential's cache
// identity. recordedAt is the report's fetchedAt, or now if not positive.
func HistoryEntries(provider string, c vault.Credential, rep *vault.UsageReport, now int64) []vault.UsageHistoryEntry {
	if rep == nil || len(rep.Limits) == 0 {
		return nil
	}
	at := rep.FetchedAt
	if at <= 0 {
		at = now
	}
	key := CacheIdentity(c)
	metaEmail, _ := rep.Metadata["email"].(string)
	metaAccount, _ := rep.Metadata["accountId"].(string)
	out := make([]vault.UsageHistoryEntry, 0, len(rep.Limits))
	for _, l := range rep.Limits {
		e := vault.UsageHistoryEntry{
			RecordedAt: at, Provider: provider, AccountKey: key,
			Email:     cmp.Or(c.Email, metaEmail),
			AccountID: cmp.Or(c.AccountID, strings.TrimSpace(l.Scope.AccountID), metaAccount),
			LimitID:   l.ID, Label: l.Label, Status: l.Status,
		}
		if l.Window != nil {
			e.WindowLabel = l.Window.Label
			e.ResetsAt = l.Window.ResetsAt
		}
		if e.WindowLabel == "" {
			e.WindowLabel = l.Scope.WindowID
		}
		if f, ok := l.ResolveUsedFraction(); ok {
			e.UsedFraction = ptr(f)
		}
		out = append(out, e)
	}
	return out
}
