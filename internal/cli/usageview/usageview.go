package usageview

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/pick"
)

// layout is the column plan of a block of limit (or history) lines: the
// title column and the bar width, shrunk so that the widest line fits
// TermWidth (the bar shrinks first, to minBarWidth, then titles are
// cut with "…"; a line still too wide is cut at the end).
type layout struct{ title, bar int }

// planLayout fits "      ● <title>  <bar>  <details>" (12 fixed columns).
func planLayout(titleW, barW, detailsW int) layout {
	over := 12 + titleW + barW + detailsW - TermWidth
	if over > 0 {
		shrink := min(over, barW-minBarWidth)
		barW -= shrink
		over -= shrink
	}
	if over > 0 && titleW > minTitleWidth {
		cut := min(over, titleW-minTitleWidth)
		titleW -= cut
	}
	return layout{titleW, barW}
}

func (lay layout) row(icon seg, title string, graph []seg, details seg) line {
	l := line{s(plain, "      "), icon, s(plain, " "), s(plain, padRight(ellipsize(title, lay.title), lay.title)), s(plain, "  ")}
	l = append(l, graph...)
	l = append(l, s(plain, "  "), details)
	return l.cut(TermWidth)
}

// fitLabel shrinks the label segment at index i of l (not below
// minLabelWidth) so the line fits, then cuts what is still too wide.
func fitLabel(l line, i int) line {
	if over := l.width() - TermWidth; over > 0 {
		w := Width(l[i].text)
		l[i].text = ellipsize(l[i].text, max(minLabelWidth, w-over))
	}
	return l.cut(TermWidth)
}

// providerHeading is "<Provider Name> — <n> account(s)"; a long name is cut
// so the count stays.
func providerHeading(provider string, n int) line {
	count := fmt.Sprintf("— %d %s", n, accountsWord(n))
	name := ellipsize(clean(providerTitle(provider)), TermWidth-1-Width(count))
	return line{s(boldCyan, name), s(plain, " "), s(dim, count)}.cut(TermWidth)
}

// Breakdown renders the live usage text (formatUsageBreakdown). With
// account policies (ps not nil), every account of a provider that has a
// policy gets a policy line under its header.
func Breakdown(reports []vault.UsageReport, accounts []Account, gone []Tombstone, now int64, redact map[string]string, ps *pick.Policies) []line {
	reports = collapseShared(reports)
	byProvider := map[string][]vault.UsageReport{}
	for _, r := range reports {
		byProvider[r.Provider] = append(byProvider[r.Provider], r)
	}
	unreported := map[string][]Account{}
	for _, a := range UnreportedAccounts(reports, accounts) {
		unreported[a.Provider] = append(unreported[a.Provider], a)
	}
	tombs := map[string][]Tombstone{}
	for _, t := range gone {
		tombs[t.Provider] = append(tombs[t.Provider], t)
	}
	set := map[string]bool{}
	for _, m := range []map[string]int{keysOf(byProvider), keysOf(unreported), keysOf(tombs)} {
		for p := range m {
			set[p] = true
		}
	}
	providers := slices.Sorted(maps.Keys(set))

	var latest int64
	for _, r := range reports {
		latest = max(latest, r.FetchedAt)
	}
	head := line{s(bold, "Usage")}
	if latest > 0 {
		head = append(head, s(dim, " · fetched "+FormatDuration(now-latest)+" ago"))
	}
	governed := policyProviders(reports, accounts, ps)
	out := []line{head}
	for _, p := range providers {
		prs, un := byProvider[p], unreported[p]
		pol := ps
		if !governed[p] {
			pol = nil
		}
		out = append(out, nil, providerHeading(p, len(prs)+len(un)))
		out = append(out, providerLimits(prs, now, redact, pol)...)
		for _, a := range un {
			l := line{s(plain, "  "), s(dim, "○"), s(plain, " "), s(dim, accountLabel(a, redact)), s(dim, " — "+cmp.Or(a.Reason, "no usage data"))}
			out = append(out, fitLabel(l, 3))
			if pol != nil && a.Type == string(vault.TypeOAuth) {
				out = append(out, policyLine(p, accountOf(a), nil, pol))
			}
		}
		for _, t := range tombs[p] {
			out = append(out, tombstoneLine(t, now, redact))
		}
		for _, a := range accounts {
			if a.Provider == p {
				out = append(out, reloginLines(a, now, redact)...)
			}
		}
		out = append(out, capacityLines(Capacity(prs))...)
	}
	return out
}

func keysOf[V any](m map[string]V) map[string]int {
	out := make(map[string]int, len(m))
	for k := range m {
		out[k] = 0
	}
	return out
}

// tombstoneLine is "  ✗ <label>[ · org] — disabled[ <d> ago]: <cause> (re-login to restore)";
// the cause is cut first, then the label, to fit.
func tombstoneLine(t Tombstone, now int64, redact map[string]string) line {
	base := cmp.Or(t.Email, t.AccountID, "OAuth account")
	label := clean(mask(redact, base))
	if org := cmp.Or(t.OrgName, t.OrgID); org != "" && org != base {
		label += " · " + clean(mask(redact, org))
	}
	ago := ""
	if t.DisabledAtMs != 0 {
		ago = " " + FormatDuration(now-t.DisabledAtMs) + " ago"
	}
	l := line{s(plain, "  "), s(red, "✗ "), s(red, label), s(red, " — disabled"+ago+": "), s(red, clean(shortCause(t.Cause))), s(plain, " "), s(dim, "(re-login to restore)")}
	if over := l.width() - TermWidth; over > 0 {
		w := Width(l[4].text)
		l[4].text = ellipsize(l[4].text, max(minLabelWidth, w-over))
	}
	return fitLabel(l, 2)
}

// providerLimits renders one provider's account headers and limit lines;
// with ps each header is followed by the account's policy line.
func providerLimits(prs []vault.UsageReport, now int64, redact map[string]string, ps *pick.Policies) []line {
	type tmpl struct{ id, title string }
	var templates []tmpl
	seen := map[string]bool{}
	titleW, detailsW := 0, 0
	for _, r := range prs {
		for _, l := range r.Limits {
			detailsW = max(detailsW, Width(limitDetails(l, now)))
			if !seen[l.ID] {
				seen[l.ID] = true
				t := limitTitle(l)
				templates = append(templates, tmpl{l.ID, t})
				titleW = max(titleW, Width(t))
			}
		}
	}
	lay := planLayout(titleW, barWidth, detailsW)
	var out []line
	for i, r := range prs {
		out = append(out, accountHeader(r, i, now, redact))
		if ps != nil {
			out = append(out, policyLine(r.Provider, reportAccount(r), r.Limits, ps))
		}
		if len(r.Limits) == 0 {
			out = append(out, line{s(plain, "      "), s(dim, "no limits reported")})
			continue
		}
		byID := map[string]vault.UsageLimit{}
		for _, l := range r.Limits {
			byID[l.ID] = l
		}
		for _, t := range templates {
			l, ok := byID[t.id]
			if !ok {
				out = append(out, lay.row(s(dim, "○"), t.title, []seg{s(dim, strings.Repeat("·", lay.bar))}, s(dim, "not reported")))
				continue
			}
			st := statusOf(l)
			out = append(out, lay.row(s(statusStyle(st), "●"), t.title, bar(l, lay.bar), s(dim, limitDetails(l, now))))
			if len(l.Notes) > 0 {
				out = append(out, line{s(plain, "        "), s(dim, clean(strings.Join(l.Notes, " · ")))}.cut(TermWidth))
			}
		}
	}
	return out
}

func limitDetails(l vault.UsageLimit, now int64) string {
	d := describeAmount(l)
	if l.Window != nil && l.Window.ResetsAt != nil && *l.Window.ResetsAt > now {
		d += " · resets in " + FormatDuration(*l.Window.ResetsAt-now)
	}
	return d
}

// accountHeader is "  ● <label>[ · org][ · plan: p][ · ✦ n saved resets[ · k usable now]
// [ · soonest expires in d (date)][ · unavailable: why]][ · fetched d ago]".
func accountHeader(r vault.UsageReport, i int, now int64, redact map[string]string) line {
	label := reportLabel(r, i)
	l := line{s(plain, "  "), s(statusStyle(aggregateStatus(r.Limits)), "●"), s(plain, " "), s(bold, clean(mask(redact, label)))}
	if org := cmp.Or(metaString(r, "orgName"), metaString(r, "orgId")); org != "" && org != label {
		l = append(l, s(dim, " · "+clean(mask(redact, org))))
	}
	if plan := metaString(r, "planType"); plan != "" {
		l = append(l, s(dim, " · plan: "+clean(plan)))
	}
	if rs := summarizeResets(r.ResetCredits, now); rs.banked > 0 {
		l = append(l, s(cyan, fmt.Sprintf(" · ✦ %d saved reset%s", rs.banked, clitext.Plural(int(rs.banked)))))
		if rs.redeemable != rs.banked {
			l = append(l, s(dim, fmt.Sprintf(" · %d usable now", rs.redeemable)))
		}
		if rs.expiry != "" {
			if at := parseTime(rs.expiry); at > now {
				l = append(l, s(dim, " · soonest expires in "+FormatDuration(at-now)+" ("+prefix(rs.expiry, 10)+")"))
			} else {
				l = append(l, s(dim, " · expired ("+prefix(rs.expiry, 10)+")"))
			}
		}
		if rs.redeemable == 0 && rs.reason != "" {
			l = append(l, s(dim, " · unavailable: "+clean(oneLine(rs.reason))))
		}
	}
	if r.FetchedAt > 0 && now-r.FetchedAt > 90_000 {
		l = append(l, s(dim, " · fetched "+FormatDuration(now-r.FetchedAt)+" ago"))
	}
	return fitLabel(l, 3)
}

// reloginLines warn about an Anthropic OAuth grant near its ~30-day end.
// The reason in parentheses moves to a second line when the whole warning
// does not fit.
func reloginLines(a Account, now int64, redact map[string]string) []line {
	if a.Provider != "anthropic" || a.Type != string(vault.TypeOAuth) || a.AuthorizedAt == 0 {
		return nil
	}
	left := a.AuthorizedAt + anthropicGrantTTL - now
	if left > reloginWarnWindow {
		return nil
	}
	label := accountLabel(a, redact)
	if left <= 0 {
		return []line{fitLabel(line{s(plain, "  "), s(red, "⚠ "), s(red, label), s(red, " — grant is past Anthropic's ~30d lifetime; re-login now")}, 2)}
	}
	const why = " (Anthropic expires OAuth grants ~30d after login)"
	l := line{s(plain, "  "), s(yellow, "⚠ "), s(yellow, label), s(yellow, " — re-login within "+FormatDuration(left))}
	if l.width()+Width(why) <= TermWidth {
		return []line{append(l, s(yellow, why))}
	}
	return []line{fitLabel(l, 2), {s(plain, "    "), s(yellow, why[1:])}}
}

// capacityLines is "  capacity: <part> · <part>…", wrapped (never cut) at
// TermWidth with continuation lines aligned under the first part.
func capacityLines(stats []CapacityStat) []line {
	if len(stats) == 0 {
		return nil
	}
	const lead, indent = "  capacity: ", "            "
	var out []line
	cur := lead
	for i, st := range stats {
		meter := ""
		if st.Meter != "" {
			meter = " (" + strings.ToUpper(st.Meter[:1]) + st.Meter[1:] + ")"
		}
		part := fmt.Sprintf("%s%s → %s/%d %s used (%s× quota left)", clean(st.Window), clean(meter),
			strconv.FormatFloat(st.UsedAccounts, 'f', 2, 64), st.Accounts, accountsWord(st.Accounts),
			strconv.FormatFloat(st.RemainingAccounts, 'f', 2, 64))
		switch {
		case i == 0:
			cur += part
		case Width(cur)+3+Width(part) <= TermWidth:
			cur += " · " + part
		default:
			out = append(out, line{s(dim, cur+" ·")}.cut(TermWidth))
			cur = indent + part
		}
	}
	return append(out, line{s(dim, cur)}.cut(TermWidth))
}

var sparkLevels = []string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

// History renders recorded usage (formatUsageHistory): per provider and
// account, one peak-per-bucket sparkline per limit.
func History(entries []vault.UsageHistoryEntry, since, now int64, redact map[string]string) []line {
	type series struct {
		title   string
		entries []vault.UsageHistoryEntry
	}
	type account struct {
		label  string
		series map[string]*series
	}
	providers := map[string]map[string]*account{}
	for _, e := range entries {
		accs := providers[e.Provider]
		if accs == nil {
			accs = map[string]*account{}
			providers[e.Provider] = accs
		}
		a := accs[e.AccountKey]
		if a == nil {
			a = &account{label: cmp.Or(e.Email, e.AccountID, e.AccountKey), series: map[string]*series{}}
			accs[e.AccountKey] = a
		}
		sr := a.series[e.LimitID]
		if sr == nil {
			sr = &series{}
			a.series[e.LimitID] = sr
		}
		sr.title = withWindow(clean(e.Label), clean(e.WindowLabel)) // latest wins
		sr.entries = append(sr.entries, e)
	}
	out := []line{{s(bold, "Usage history"), s(dim, " · last "+FormatDuration(now-since)+" · peak per bucket")}}
	for _, p := range slices.Sorted(maps.Keys(providers)) {
		accs := slices.SortedFunc(maps.Values(providers[p]), func(a, b *account) int { return strings.Compare(a.label, b.label) })
		out = append(out, nil, providerHeading(p, len(accs)))
		for _, a := range accs {
			out = append(out, line{s(plain, "  "), s(bold, clean(mask(redact, a.label)))}.cut(TermWidth))
			all := slices.SortedFunc(maps.Values(a.series), func(x, y *series) int { return strings.Compare(x.title, y.title) })
			titleW, detailsW := 0, 0
			details := make([]string, len(all))
			statuses := make([]string, len(all))
			for i, sr := range all {
				titleW = max(titleW, Width(sr.title))
				details[i], statuses[i] = historyDetails(sr.entries)
				detailsW = max(detailsW, Width(details[i]))
			}
			lay := planLayout(titleW, sparkWidth, detailsW)
			for i, sr := range all {
				out = append(out, lay.row(s(statusStyle(statuses[i]), "●"), sr.title, sparkline(sr.entries, since, now, lay.bar), s(dim, details[i])))
			}
		}
	}
	return out
}

// historyDetails is "latest x% · peak y% · n snapshots" and the status of
// the latest entry.
func historyDetails(es []vault.UsageHistoryEntry) (string, string) {
	var parts []string
	latest, peak, any := 0.0, math.Inf(-1), false
	for _, e := range es {
		if e.UsedFraction != nil {
			latest, peak, any = *e.UsedFraction, max(peak, *e.UsedFraction), true
		}
	}
	if any {
		parts = append(parts, "latest "+pct(latest), "peak "+pct(peak))
	}
	parts = append(parts, fmt.Sprintf("%d snapshot%s", len(es), clitext.Plural(len(es))))
	st := es[len(es)-1].Status
	if st == "" || st == vault.StatusUnknown {
		st = statusByFraction(latest, any)
	}
	return strings.Join(parts, " · "), st
}

// sparkline is a w-bucket peak-per-bucket line over [since, now].
func sparkline(es []vault.UsageHistoryEntry, since, now int64, w int) []seg {
	span := float64(max(1, now-since))
	buckets := make([]float64, w)
	set := make([]bool, w)
	for _, e := range es {
		if e.UsedFraction == nil {
			continue
		}
		i := min(w-1, max(0, int(math.Floor(float64(e.RecordedAt-since)/span*float64(w)))))
		if !set[i] || *e.UsedFraction > buckets[i] {
			buckets[i], set[i] = *e.UsedFraction, true
		}
	}
	out := make([]seg, w)
	for i := range buckets {
		if !set[i] {
			out[i] = s(dim, "·")
			continue
		}
		f := min(max(buckets[i], 0), 1)
		level := min(len(sparkLevels)-1, int(math.Floor(f*float64(len(sparkLevels)))))
		out[i] = s(statusStyle(statusByFraction(f, true)), sparkLevels[level])
	}
	return out
}
