package pick

import (
	"context"
	"slices"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// LimitOptions describe a usage-limit error.
type LimitOptions struct {
	// RetryAfter is the provider's retry hint; 0 = DefaultBlock.
	RetryAfter time.Duration
	// ModelID is the model of the failed request.
	ModelID string
	// Key is the bearer that failed (18.1.21 passes it too): it names the
	// credential when the session has no sticky one.
	Key string
}

// Switch is the answer of MarkUsageLimitReached.
type Switch struct {
	// Switched: another credential of the same type is unblocked.
	Switched bool
	// RetryAtMs is the earliest unblock of a sibling (epoch ms) when none is
	// free; 0 when there is no sibling or no credential was blocked.
	RetryAtMs int64
}

// find returns the credential of provider that failed: the one whose
// bearer is key (what the failed request really used), else the session's
// sticky one.
func (p *Picker) find(es []vault.Entry, provider, session, key string) (vault.Entry, bool) {
	if key != "" {
		for _, e := range es {
			if p.matches(e, key) {
				return e, true
			}
		}
	}
	if id, ok := p.getSticky(provider, session); ok {
		for _, e := range es {
			if e.ID == id {
				return e, true
			}
		}
	}
	return vault.Entry{}, false
}

func (p *Picker) matches(e vault.Entry, key string) bool {
	s := Secret(e)
	if s == "" {
		return false
	}
	if s == key {
		return true
	}
	return e.Credential.Type == vault.TypeAPIKey && p.ResolveKey != nil && p.ResolveKey(s) == key
}

// MarkUsageLimitReached blocks the session's sticky credential (or the one
// whose bearer is opts.Key) until now + RetryAfter (default 60 s), extended
// to the earliest reset of its exhausted limits when a usage report says
// later, and reports whether a sibling of the same type is free.
// Errors are the Source's (listing credentials).
func (p *Picker) MarkUsageLimitReached(ctx context.Context, provider, sessionID string, opts LimitOptions) (Switch, error) {
	es, err := p.entries(ctx, provider)
	if err != nil {
		return Switch{}, err
	}
	failed, ok := p.find(es, provider, sessionID, opts.Key)
	if !ok {
		return Switch{}, nil
	}
	wait := opts.RetryAfter
	if wait <= 0 {
		wait = DefaultBlock
	}
	now := p.now().UnixMilli()
	until := now + wait.Milliseconds()
	sc := scopeFor(provider, opts.ModelID)
	if failed.Credential.Type == vault.TypeOAuth {
		if r := matchReport(provider, failed.Credential, p.usage(ctx)); r != nil {
			if reset, ex := exhaustedUntil(r, sc, now); ex && reset > until {
				until = reset
			}
		}
	}
	pk := ProviderKey(provider, string(failed.Credential.Type))
	p.block(pk, sc.block, failed, until, "usage limit reached")
	return p.siblingSwitch(pk, sc.scopes(), es, failed), nil
}

// PolicyOptions describe an account-policy denial.
type PolicyOptions struct {
	// ModelID is the model of the failed request.
	ModelID string
	// Key is the bearer that failed; it names the credential, else the
	// session's sticky one does.
	Key string
	// ModelOnly: the account is not entitled to ModelID only; the block is
	// scoped "model-policy:<bare model id, lowercased>" so the account
	// stays available for other models. Without it the account is blocked
	// in the request's strategy scope (provider-wide when it has none).
	ModelOnly bool
}

// MarkPolicyDenied reacts to an account-policy denial (the reference's
// rotateSessionCredential): it blocks the failed credential
// until now + DefaultBlock — for ModelID only when opts.ModelOnly — and
// posts the block like every other (BlockSink). Unlike an auth failure
// the token is valid: nothing is refreshed and the session keeps its
// sticky credential (selection skips it while the block holds). It
// reports whether a sibling of the same type is free for this request
// (the same scopes selection reads). A ModelOnly denial without a usable
// model id, or for a provider other than openai-codex and cursor, blocks
// nothing. Errors are the Source's.
func (p *Picker) MarkPolicyDenied(ctx context.Context, provider, sessionID string, opts PolicyOptions) (Switch, error) {
	es, err := p.entries(ctx, provider)
	if err != nil {
		return Switch{}, err
	}
	failed, ok := p.find(es, provider, sessionID, opts.Key)
	if !ok {
		return Switch{}, nil
	}
	sc := scopeFor(provider, opts.ModelID)
	scope, lookup := sc.block, sc.scopes()
	if opts.ModelOnly {
		// Only providers whose selection reads model-policy scopes get one
		// (the reference's MODEL_ACCOUNT_POLICY_PROVIDERS): elsewhere the
		// block would be inert.
		if provider != "openai-codex" && provider != "cursor" {
			return Switch{}, nil
		}
		if scope = modelPolicyScope(opts.ModelID); scope == "" {
			return Switch{}, nil
		}
		if !slices.Contains(lookup, scope) {
			lookup = append(slices.Clip(lookup), scope)
		}
	}
	pk := ProviderKey(provider, string(failed.Credential.Type))
	p.block(pk, scope, failed, p.now().Add(DefaultBlock).UnixMilli(), "account policy")
	return p.siblingSwitch(pk, lookup, es, failed), nil
}

// siblingSwitch reports whether a credential of failed's type other than
// failed is unblocked under pk and scopes, else the earliest unblock.
func (p *Picker) siblingSwitch(pk string, scopes []string, es []vault.Entry, failed vault.Entry) Switch {
	var retryAt int64
	for _, e := range byType(es, failed.Credential.Type) {
		if e.ID == failed.ID {
			continue
		}
		u, blocked := p.until(pk, scopes, &e)
		if !blocked {
			return Switch{Switched: true}
		}
		if retryAt == 0 || u < retryAt {
			retryAt = u
		}
	}
	return Switch{RetryAtMs: retryAt}
}

// InvalidateMatching reacts to an auth failure of bearer key
// (the reference's invalidateCredentialMatching): it finds the credential
// whose API key or access token is key — none → false — clears the
// session's sticky credential, blocks it 60 s and asks the Source to
// refresh it (the remote store's refresh goes to the broker, which may
// rotate or disable it). A failed refresh is logged, not returned: the block
// already keeps the credential out of the way.
func (p *Picker) InvalidateMatching(ctx context.Context, provider, key, sessionID string) (bool, error) {
	es, err := p.entries(ctx, provider)
	if err != nil {
		return false, err
	}
	for _, e := range es {
		if !p.matches(e, key) {
			continue
		}
		p.clearSticky(provider, sessionID)
		pk := ProviderKey(provider, string(e.Credential.Type))
		p.block(pk, "", e, p.now().Add(DefaultBlock).UnixMilli(), "auth failure")
		if e.Credential.Type == vault.TypeOAuth {
			if _, err := p.Source.Refresh(ctx, e.ID); err != nil {
				p.log().Warn("pick: refresh after auth failure failed", "provider", provider, "id", e.ID, "err", err)
			}
		}
		return true, nil
	}
	return false, nil
}
