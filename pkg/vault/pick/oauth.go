package pick

import (
	"cmp"
	"context"
	"slices"

	"github.com/ompgo/omp/pkg/vault"
)

// pickOAuth is OAuth selection over the provider's OAuth
// credentials, in id order.
func (p *Picker) pickOAuth(ctx context.Context, provider, session string, opts Options, creds []vault.Entry) (vault.Entry, error) {
	pk := ProviderKey(provider, string(vault.TypeOAuth))
	nowMs := p.now().UnixMilli()
	spark := isSpark(provider, opts.ModelID)
	strat, ranked := strategies[provider]
	sc := scopeFor(provider, opts.ModelID)

	// The provider's account policies must name stored accounts
	// unambiguously; they govern the provider when one names any of its
	// accounts.
	if err := p.Policies.Validate(provider, creds); err != nil {
		return vault.Entry{}, err
	}
	governed, prioritised := false, false
	for i := range creds {
		if pol := p.Policies.For(provider, creds[i].Credential); pol != nil {
			governed = true
			prioritised = prioritised || pol.Priority != nil
		}
	}

	stickyID, hasSticky := p.getSticky(provider, session)
	stickyUnblocked := false
	if hasSticky {
		for i := range creds {
			if creds[i].ID == stickyID {
				stickyUnblocked = !p.blocked(pk, sc.scopes(), &creds[i])
			}
		}
	}

	// Ranking runs when a strategy exists or account policies govern the
	// provider, and there is a choice to make (or a spark model), unless
	// the session already has an unblocked sticky credential and no policy
	// applies (policies re-rank every request: a sticky account that
	// entered its reserve gives way). Its prefetch order (the final
	// tie-break) is the natural row order with a session id; otherwise,
	// and without ranking, it is the order by descending policy priority
	// when a policy sets one, else the plain rotation (see rotation).
	rankNow := (ranked || governed) && (len(creds) > 1 || spark) && (!stickyUnblocked || spark || governed)
	ord := p.order(pk, len(creds), session)
	switch {
	case rankNow && session != "":
		for i := range ord {
			ord[i] = i
		}
	case prioritised:
		for i := range ord {
			ord[i] = i
		}
		slices.SortStableFunc(ord, func(a, b int) int {
			return cmp.Compare(p.Policies.For(provider, creds[b].Credential).PriorityValue(),
				p.Policies.For(provider, creds[a].Credential).PriorityValue())
		})
	}
	cs := make([]*candidate, len(creds))
	for i, j := range ord {
		cs[i] = &candidate{entry: creds[j], pos: i}
	}
	var reports []vault.UsageReport
	if rankNow {
		reports = p.usage(ctx)
		for _, c := range cs {
			p.applyUsage(pk, sc, c, reports, nowMs)
			if ranked {
				strat.measure(c, sc, spark, nowMs)
			}
			if governed {
				p.measurePolicy(provider, sc, c, nowMs)
			}
		}
		cs = rank(cs, session, !governed)
	}
	if hasSticky && !spark && !(governed && leavesReserve(cs, stickyID)) {
		for i, c := range cs {
			if c.entry.ID == stickyID && i > 0 {
				copy(cs[1:i+1], cs[:i])
				cs[0] = c
				break
			}
		}
	}

	anyPro := false
	if spark {
		for _, c := range cs {
			anyPro = anyPro || (c.report != nil && planPriority(c.report) == 0)
		}
	}
	for i, c := range cs {
		if p.blocked(pk, sc.scopes(), &c.entry) {
			continue
		}
		if reports != nil {
			if until, ex := exhaustedUntil(c.report, sc, p.now().UnixMilli()); ex {
				p.block(pk, sc.block, c.entry, until, "usage exhausted")
				continue
			}
		}
		if spark && anyPro && planPriority(c.report) != 0 {
			continue
		}
		e, err := p.prepare(ctx, c.entry, opts.ForceRefresh && i == 0)
		if err != nil {
			if ctx.Err() != nil {
				return vault.Entry{}, ctx.Err()
			}
			if vault.ErrorCode(err) != vault.ENOTFOUND {
				// A refresh failure through a Source is transient for the
				// picker: a definitive one disables the row at the broker
				// and the set change follows.
				p.block(pk, "", c.entry, p.now().Add(RefreshFailureBlock).UnixMilli(), "refresh failed")
			}
			p.log().Warn("pick: credential refresh failed", "provider", provider, "id", c.entry.ID, "err", err)
			continue
		}
		p.setSticky(provider, session, e.ID)
		return e, nil
	}
	// Every candidate failed: the first is used anyway when it is blocked.
	if len(cs) > 0 && p.blocked(pk, sc.scopes(), &cs[0].entry) {
		p.setSticky(provider, session, cs[0].entry.ID)
		return cs[0].entry, nil
	}
	p.clearSticky(provider, session)
	return vault.Entry{}, NoCredential(provider)
}

// applyUsage attaches c's usage report; an unblocked candidate whose
// limits in scope sc are exhausted is blocked, and a blocked one carries
// its unblock time.
func (p *Picker) applyUsage(pk string, sc limitScope, c *candidate, reports []vault.UsageReport, nowMs int64) {
	if until, ok := p.until(pk, sc.scopes(), &c.entry); ok {
		c.blocked, c.blockedUntil = true, until
		return
	}
	c.report = matchReport(c.entry.Provider, c.entry.Credential, reports)
	if until, ex := exhaustedUntil(c.report, sc, nowMs); ex {
		p.block(pk, sc.block, c.entry, until, "usage exhausted")
		c.blocked, c.blockedUntil = true, until
	}
}

// block blocks e under pk in scope ("" = provider-wide) until untilMs and
// hands the merged block to the Source when it shares blocks (BlockSink):
// every block the picker sets — usage limits, exhausted scoped limits, auth
// failures, refresh failures — takes this one path, in the gateway and in
// the agent alike.
func (p *Picker) block(pk, scope string, e vault.Entry, untilMs int64, why string) {
	merged := p.Blocks.Block(pk, scope, e.ID, untilMs)
	p.log().Info("pick: credential blocked", "providerKey", pk, "scope", scope, "id", e.ID, "untilMs", merged, "reason", why)
	if sink, ok := p.Source.(BlockSink); ok {
		sink.PublishBlock(e, pk, scope, merged)
	}
}

// prepare brings e up to date: forced → Source.Refresh; else the Source's
// Prepare when it has one, else a refresh within PrepareWindow of expiry.
func (p *Picker) prepare(ctx context.Context, e vault.Entry, force bool) (vault.Entry, error) {
	if force {
		return p.Source.Refresh(ctx, e.ID)
	}
	if pr, ok := p.Source.(Preparer); ok {
		return pr.Prepare(ctx, e.ID)
	}
	if e.Credential.Expires > 0 && e.Credential.Expires-p.now().UnixMilli() <= PrepareWindow.Milliseconds() {
		return p.Source.Refresh(ctx, e.ID)
	}
	return e, nil
}

// measurePolicy fills c's account-policy inputs: its priority and whether
// its remaining usage (over the limits the request ranks on) is inside
// its reserve.
func (p *Picker) measurePolicy(provider string, sc limitScope, c *candidate, nowMs int64) {
	pol := p.Policies.For(provider, c.entry.Credential)
	c.priority = pol.PriorityValue()
	if c.report == nil {
		return
	}
	reserve, _ := p.Policies.Reserve(pol)
	if left, ok := remaining(c.report, sc.rank(c.report.Limits), nowMs); ok {
		c.reserveMeasured = true
		c.inReserve = left <= reserve/100
	}
}

// leavesReserve reports whether the session's sticky account stickyID is
// inside its reserve while another unblocked account is measured outside
// its own: the sticky account then gives way to the ranked order.
func leavesReserve(cs []*candidate, stickyID int64) bool {
	var sticky *candidate
	for _, c := range cs {
		if c.entry.ID == stickyID {
			sticky = c
		}
	}
	if sticky == nil || sticky.blocked || !sticky.inReserve {
		return false
	}
	for _, c := range cs {
		if c != sticky && !c.blocked && c.reserveMeasured && !c.inReserve {
			return true
		}
	}
	return false
}
