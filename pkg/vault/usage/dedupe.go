package usage

import (
	"maps"
	"slices"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

func metaString(r vault.UsageReport, k string) string {
	s, _ := r.Metadata[k].(string)
	return strings.TrimSpace(s)
}

// singleScope returns the scope field shared by every limit that sets it,
// "" when none or several distinct values.
func singleScope(r vault.UsageReport, field func(vault.UsageScope) string) string {
	seen := ""
	for _, l := range r.Limits {
		v := strings.TrimSpace(field(l.Scope))
		if v == "" || v == seen {
			continue
		}
		if seen != "" {
			return ""
		}
		seen = v
	}
	return seen
}

// identifiers lists a report's identity identifiers.
func identifiers(r vault.UsageReport) []string {
	var ids []string
	email := metaString(r, "email")
	if email != "" {
		ids = append(ids, "email:"+email)
	}
	if r.Provider != "openai-codex" && r.Provider != "anthropic" {
		project := metaString(r, "projectId")
		if project == "" {
			project = singleScope(r, func(s vault.UsageScope) string { return s.ProjectID })
		}
		if project != "" && email == "" {
			ids = append(ids, "project:"+project)
		}
		for _, k := range []string{"accountId", "account", "user", "username"} {
			if v := metaString(r, k); v != "" {
				ids = append(ids, "account:"+v)
			}
		}
		if v := singleScope(r, func(s vault.UsageScope) string { return s.AccountID }); v != "" {
			ids = append(ids, "account:"+v)
		}
	}
	for i, id := range ids {
		ids[i] = strings.ToLower(r.Provider + ":" + id)
	}
	return ids
}

// Dedupe groups reports that share an identifier and merges each group
// into the report with the most limits (tie: newest fetchedAt), adding
// limits with unseen ids, taking the max fetchedAt and filling missing
// metadata keys. Group order is first appearance.
func Dedupe(reports []vault.UsageReport) []vault.UsageReport {
	var groups [][]vault.UsageReport
	index := map[string]int{}
	for _, r := range reports {
		ids := identifiers(r)
		g := -1
		for _, id := range ids {
			if i, ok := index[id]; ok {
				g = i
				break
			}
		}
		if g < 0 {
			g = len(groups)
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], r)
		for _, id := range ids {
			index[id] = g
		}
	}
	out := make([]vault.UsageReport, 0, len(groups))
	for _, g := range groups {
		out = append(out, merge(g))
	}
	return out
}

func merge(group []vault.UsageReport) vault.UsageReport {
	if len(group) == 1 {
		return group[0]
	}
	sorted := slices.Clone(group)
	slices.SortStableFunc(sorted, func(a, b vault.UsageReport) int {
		if d := len(b.Limits) - len(a.Limits); d != 0 {
			return d
		}
		switch {
		case b.FetchedAt > a.FetchedAt:
			return 1
		case b.FetchedAt < a.FetchedAt:
			return -1
		}
		return 0
	})
	base := sorted[0]
	limits := slices.Clone(base.Limits)
	seen := map[string]bool{}
	for _, l := range limits {
		seen[l.ID] = true
	}
	meta := maps.Clone(base.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	for _, r := range sorted[1:] {
		base.FetchedAt = max(base.FetchedAt, r.FetchedAt)
		for _, l := range r.Limits {
			if !seen[l.ID] {
				seen[l.ID] = true
				limits = append(limits, l)
			}
		}
		for k, v := range r.Metadata {
			if _, ok := meta[k]; !ok && v != nil {
				meta[k] = v
			}
		}
	}
	base.Limits = limits
	base.Metadata = nil
	if len(meta) > 0 {
		base.Metadata = meta
	}
	return base
}
