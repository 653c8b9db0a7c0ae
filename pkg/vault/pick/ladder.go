package pick

import (
	"context"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// Failure classifies a failed upstream attempt for the retry ladder.
// The gateway classifies; the ladder only reacts.
type Failure int

const (
	// NotRetryable: not an auth or usage failure; the ladder stops.
	NotRetryable Failure = iota
	// AuthFailure: HTTP 401 class. Re-mint the same account once, then
	// switch to one sibling, then stop.
	AuthFailure
	// UsageLimit: a usage-limit error. Mark the account (MarkUsageLimitReached)
	// and keep switching siblings while one is free.
	UsageLimit
	// Rotate: the other direct-rotation errors (invalidated token,
	// non-concurrency 403). Invalidate the account and keep switching.
	Rotate
	// AccountPolicy: an account-scoped policy denial (llm.AccountPolicy).
	// Block the account 60 s without re-minting it (MarkPolicyDenied) and
	// keep switching while a sibling is free.
	AccountPolicy
	// ModelPolicy: the account is not entitled to the request's model
	// (llm.ModelPolicy). Block the account for that model only, 60 s, and
	// keep switching while a sibling is free.
	ModelPolicy
)

// MaxAttempts caps the attempts of one request whatever the pool size.
const MaxAttempts = 64

// Ladder is the credential retry ladder of one request (docs/protocol.md,
// Gateway outbound). Every attempt uses a bearer not yet sent for this
// request; the number of attempts is bounded by the number of distinct
// credentials of the provider plus the one forced re-mint, and by
// MaxAttempts. A Ladder belongs to one request and is not safe for
// concurrent use.
type Ladder struct {
	p                  *Picker
	provider, session  string
	modelID            string
	sent               map[string]bool
	attempts, limit    int
	reminted, switched bool
}

// Ladder starts the retry ladder of one request.
func (p *Picker) Ladder(provider, sessionID, modelID string) *Ladder {
	return &Ladder{p: p, provider: provider, session: sessionID, modelID: modelID, sent: map[string]bool{}}
}

// First picks the credential of the initial attempt.
func (l *Ladder) First(ctx context.Context) (e vault.Entry, err error) {
	es, err := l.p.entries(ctx, l.provider)
	if err != nil {
		return e, err
	}
	l.limit = min(MaxAttempts, len(es)+1)
	if e, err = l.p.Pick(ctx, l.provider, l.session, Options{ModelID: l.modelID}); err != nil {
		return vault.Entry{}, err
	}
	l.use(&e)
	return e, nil
}

// use records an attempt with e.
func (l *Ladder) use(e *vault.Entry) {
	l.sent[secret(e)] = true
	l.attempts++
}

// Next reacts to the failure of the attempt that used failed and returns
// the credential of the next attempt; ok is false when the ladder stops
// (the caller surfaces the last error). retryAfter is the provider's retry
// hint of a usage-limit error (0 = none). An error is the Source's.
func (l *Ladder) Next(ctx context.Context, failed vault.Entry, f Failure, retryAfter time.Duration) (next vault.Entry, ok bool, err error) {
	if f == NotRetryable || l.attempts >= l.limit {
		return vault.Entry{}, false, nil
	}
	key := Secret(failed)
	if f == AuthFailure && !l.reminted {
		// Step (b): re-mint the same sticky account; the broker or a peer
		// may have rotated it. Skipped when it yields a bearer already sent.
		l.reminted = true
		e, err := l.p.Pick(ctx, l.provider, l.session, Options{ModelID: l.modelID, ForceRefresh: true})
		if err == nil && !l.sent[Secret(e)] {
			l.use(&e)
			return e, true, nil
		}
	}
	if f == AuthFailure && l.switched {
		return vault.Entry{}, false, nil // one sibling after a 401, then stop
	}
	switch f {
	case UsageLimit:
		sw, err := l.p.MarkUsageLimitReached(ctx, l.provider, l.session, LimitOptions{RetryAfter: retryAfter, ModelID: l.modelID, Key: key})
		if err != nil {
			return vault.Entry{}, false, err
		}
		if !sw.Switched {
			return vault.Entry{}, false, nil
		}
	case AccountPolicy, ModelPolicy:
		sw, err := l.p.MarkPolicyDenied(ctx, l.provider, l.session, PolicyOptions{ModelID: l.modelID, Key: key, ModelOnly: f == ModelPolicy})
		if err != nil {
			return vault.Entry{}, false, err
		}
		if !sw.Switched {
			return vault.Entry{}, false, nil
		}
	default:
		if _, err := l.p.InvalidateMatching(ctx, l.provider, key, l.session); err != nil {
			return vault.Entry{}, false, err
		}
	}
	l.switched = true
	e, err := l.p.Pick(ctx, l.provider, l.session, Options{ModelID: l.modelID})
	if err != nil {
		if vault.ErrorCode(err) == vault.ENOTFOUND {
			return vault.Entry{}, false, nil
		}
		return vault.Entry{}, false, err
	}
	if l.sent[Secret(e)] {
		return vault.Entry{}, false, nil
	}
	l.use(&e)
	return e, true, nil
}
