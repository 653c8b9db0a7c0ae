package usageview

import (
	"maps"
	"math"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// RedactionMap builds the --redact masks: a two-character
// anchor plus, when other values share the anchor, the shortest
// middle-out infix no peer contains ("ca*", "ca*9*"); residual collisions
// fall back to the shortest unique prefix. Equal values share a mask.
// Strings are sliced by rune (the reference slices UTF-16 units; the same
// for ASCII identities), so a mask never splits a character.
func RedactionMap(values []string) map[string]string {
	var unique []string
	seen := map[string]bool{}
	for _, v := range values {
		if v != "" && !seen[v] {
			seen[v] = true
			unique = append(unique, v)
		}
	}
	anchorOf := func(v string) string { r := []rune(v); return string(r[:min(2, len(r))]) }
	byAnchor := map[string][]string{}
	for _, v := range unique {
		byAnchor[anchorOf(v)] = append(byAnchor[anchorOf(v)], v)
	}
	out := make(map[string]string, len(unique))
	for _, v := range unique {
		a := anchorOf(v)
		var peers []string
		for _, o := range byAnchor[a] {
			if o != v {
				peers = append(peers, o)
			}
		}
		if len(peers) == 0 {
			out[v] = a + "*"
			continue
		}
		if infix, ok := distinguishingInfix(v, peers); ok {
			out[v] = a + "*" + infix + "*"
		} else {
			out[v] = a + "*"
		}
	}
	byMask := map[string][]string{}
	for _, v := range unique {
		byMask[out[v]] = append(byMask[out[v]], v)
	}
	for _, group := range byMask {
		if len(group) < 2 {
			continue
		}
		for _, v := range group {
			r := []rune(v)
			n := min(2, len(r))
			for n < len(r) && anyOther(group, v, func(o string) bool { return strings.HasPrefix(o, string(r[:n])) }) {
				n++
			}
			out[v] = string(r[:n]) + "*"
		}
	}
	return out
}

func anyOther(group []string, v string, f func(string) bool) bool {
	for _, o := range group {
		if o != v && f(o) {
			return true
		}
	}
	return false
}

// distinguishingInfix is the shortest substring of v after the anchor that
// no peer contains, the one centred closest to v's middle on ties.
func distinguishingInfix(v string, peers []string) (string, bool) {
	r := []rune(v)
	start := min(2, len(r))
	center := float64(len(r)) / 2
	for length := 1; length <= len(r)-start; length++ {
		best, bestDist := "", math.Inf(1)
		for pos := start; pos+length <= len(r); pos++ {
			cand := string(r[pos : pos+length])
			if anyOther(peers, "", func(p string) bool { return strings.Contains(p, cand) }) {
				continue
			}
			if d := math.Abs(float64(pos) + float64(length)/2 - center); d < bestDist {
				best, bestDist = cand, d
			}
		}
		if !math.IsInf(bestDist, 1) {
			return best, true
		}
	}
	return "", false
}

// IdentityStrings lists every identity the live output could show.
func IdentityStrings(reports []vault.UsageReport, accounts []Account) []string {
	var out []string
	for _, r := range reports {
		for _, k := range identityMetaKeys {
			out = append(out, metaString(r, k))
		}
		for _, l := range r.Limits {
			out = append(out, l.Scope.AccountID, l.Scope.ProjectID, l.Scope.OrgID)
		}
	}
	for _, a := range accounts {
		out = append(out, a.Email, a.AccountID, a.ProjectID, a.OrgID, a.OrgName, a.EnterpriseURL)
	}
	return out
}

var identityMetaKeys = []string{"email", "accountId", "projectId", "orgId", "orgName"}

// RedactReports masks the identity fields of reports for --redact --json;
// the inputs are not modified.
func RedactReports(reports []vault.UsageReport, m map[string]string) []vault.UsageReport {
	out := make([]vault.UsageReport, len(reports))
	for i, r := range reports {
		if r.Metadata != nil {
			r.Metadata = maps.Clone(r.Metadata)
			for _, k := range identityMetaKeys {
				if v, ok := r.Metadata[k].(string); ok {
					r.Metadata[k] = mask(m, v)
				}
			}
		}
		limits := make([]vault.UsageLimit, len(r.Limits))
		for j, l := range r.Limits {
			l.Scope.AccountID, l.Scope.ProjectID, l.Scope.OrgID = mask(m, l.Scope.AccountID), mask(m, l.Scope.ProjectID), mask(m, l.Scope.OrgID)
			limits[j] = l
		}
		r.Limits = limits
		out[i] = r
	}
	return out
}

// RedactAccounts masks the identity fields of accounts with m.
func RedactAccounts(accounts []Account, m map[string]string) []Account {
	out := make([]Account, len(accounts))
	for i, a := range accounts {
		a.Email, a.AccountID, a.ProjectID = mask(m, a.Email), mask(m, a.AccountID), mask(m, a.ProjectID)
		a.EnterpriseURL, a.OrgID, a.OrgName = mask(m, a.EnterpriseURL), mask(m, a.OrgID), mask(m, a.OrgName)
		out[i] = a
	}
	return out
}

// RedactHistory masks the identity fields of history entries with m.
func RedactHistory(entries []vault.UsageHistoryEntry, m map[string]string) []vault.UsageHistoryEntry {
	out := make([]vault.UsageHistoryEntry, len(entries))
	for i, e := range entries {
		e.AccountKey, e.Email, e.AccountID = mask(m, e.AccountKey), mask(m, e.Email), mask(m, e.AccountID)
		out[i] = e
	}
	return out
}

// HistoryIdentityStrings lists every identity the history output could show.
func HistoryIdentityStrings(entries []vault.UsageHistoryEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Email, e.AccountID, e.AccountKey)
	}
	return out
}

// TombstoneIdentities lists every identity the tombstone lines could show.
func TombstoneIdentities(ts []Tombstone) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Email, t.AccountID, t.OrgID, t.OrgName)
	}
	return out
}

// RedactTombstones masks the identity fields of tombstones with m.
func RedactTombstones(ts []Tombstone, m map[string]string) []Tombstone {
	out := make([]Tombstone, len(ts))
	for i, t := range ts {
		t.Email, t.AccountID, t.OrgID, t.OrgName = mask(m, t.Email), mask(m, t.AccountID), mask(m, t.OrgID), mask(m, t.OrgName)
		out[i] = t
	}
	return out
}
