package pick

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// Preparer is implemented by sources that can bring a credential up to date
// right before use (remote.Store refreshes through the broker when the
// access token is within a minute of expiry). Without it the
// Picker refreshes a credential within PrepareWindow of expiry itself.
type Preparer interface {
	Prepare(ctx context.Context, id int64) (vault.Entry, error)
}

// BlockSink is implemented by sources that share blocks with a fleet
// (remote.Store posts them to the broker). The Picker hands it
// every block it sets, with the merged deadline; PublishBlock must not
// block the request (fire-and-forget).
type BlockSink interface {
	PublishBlock(e vault.Entry, providerKey, scope string, untilMs int64)
}

// Timings.
const (
	// UsageTimeout bounds the usage prefetch of a ranking: max(5 s, 1.5 ×
	// the 10 s per-credential timeout). On timeout ranking goes on without
	// usage.
	UsageTimeout = 15 * time.Second
	// PrepareWindow: a credential whose access token expires within it is
	// refreshed before use.
	PrepareWindow = 60 * time.Second
)

// Options are the per-request inputs of Pick.
type Options struct {
	// ModelID is the resolved model id; a Codex "-spark" model changes the
	// ranking (Pro plans first, no stickiness).
	ModelID string
	// ForceRefresh re-mints the session's sticky (or first) OAuth
	// credential before returning it: the retry ladder's step after a 401.
	ForceRefresh bool
}

// Picker chooses credentials for requests. The zero value is
// not usable: Source is required. A Picker is safe for concurrent use.
type Picker struct {
	// Source is where credentials, refreshes and usage come from; required.
	Source vault.Source
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Log receives one line per block and refresh failure; default discards.
	Log *slog.Logger
	// ResolveKey turns a stored API-key value into the bearer sent upstream
	// (config-value resolution: a literal, an environment variable name, or
	// !command); InvalidateMatching compares
	// the failed key with both forms. nil: the value is the key.
	ResolveKey func(string) string
	// Policies are the account policies (routing priority and usage
	// reserve per OAuth account); nil: none.
	Policies *Policies

	// Blocks are this process's blocks. Exposed so a caller can read them
	// (status pages) or seed them; Picker sets its clock when nil.
	Blocks Blocks

	mu     sync.Mutex
	sets   map[string]uint64 // provider → fingerprint of its credential set
	cursor map[string]int    // provider key → next round-robin start
	sticky map[string]int64  // provider + "\0" + session id → credential id
}

func (p *Picker) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Picker) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}

// entries lists provider's credentials and clears the provider's cursors,
// stickiness and blocks when its set changed since the last look.
func (p *Picker) entries(ctx context.Context, provider string) ([]vault.Entry, error) {
	es, err := p.Source.List(ctx, provider)
	if err != nil {
		return nil, err
	}
	fp := fingerprint(es)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Blocks.Now == nil {
		p.Blocks.Now = p.now
	}
	if p.sets == nil {
		p.sets, p.cursor, p.sticky = map[string]uint64{}, map[string]int{}, map[string]int64{}
	}
	if old, seen := p.sets[provider]; seen && old != fp {
		for _, t := range []vault.CredentialType{vault.TypeOAuth, vault.TypeAPIKey} {
			delete(p.cursor, ProviderKey(provider, string(t)))
		}
		for k := range p.sticky {
			if len(k) > len(provider) && k[:len(provider)] == provider && k[len(provider)] == 0 {
				delete(p.sticky, k)
			}
		}
		p.Blocks.ClearProvider(provider)
	}
	p.sets[provider] = fp
	return es, nil
}

func stickyKey(provider, session string) string { return provider + "\x00" + session }

func (p *Picker) setSticky(provider, session string, id int64) {
	if session == "" {
		return
	}
	p.mu.Lock()
	p.sticky[stickyKey(provider, session)] = id
	p.mu.Unlock()
}

func (p *Picker) clearSticky(provider, session string) {
	p.mu.Lock()
	delete(p.sticky, stickyKey(provider, session))
	p.mu.Unlock()
}

func (p *Picker) getSticky(provider, session string) (int64, bool) {
	if session == "" {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.sticky[stickyKey(provider, session)]
	return id, ok
}

// order returns the rotation order of n candidates of provider key pk and
// advances the key's round-robin cursor when there is no session id.
func (p *Picker) order(pk string, n int, session string) []int {
	start := 0
	if session == "" && n > 0 {
		p.mu.Lock()
		start = p.cursor[pk] % n
		p.cursor[pk] = (start + 1) % n
		p.mu.Unlock()
	}
	return rotation(n, session, start)
}

// until returns when e's block under pk ends — the latest of this
// process's blocks (provider-wide or in scopes) and the broker's shared
// blocks on the entry — and whether one is in force now.
func (p *Picker) until(pk string, scopes []string, e *vault.Entry) (int64, bool) {
	u, ok := p.Blocks.Until(pk, scopes, e.ID)
	if su, sok := sharedUntil(e, pk, scopes, p.now().UnixMilli()); sok && (!ok || su > u) {
		u, ok = su, true
	}
	return u, ok
}

// blocked reports whether e is blocked now under pk (see until).
func (p *Picker) blocked(pk string, scopes []string, e *vault.Entry) bool {
	_, ok := p.until(pk, scopes, e)
	return ok
}

// ErrNoCredential is the cause of NoCredential errors: errors.Is(err,
// ErrNoCredential) tells "nothing to pick" from a failing Source.
var ErrNoCredential = errors.New("no credential available")

// NoCredential is the error of Pick when provider has no usable credential.
// The gateway answers it 401 authentication_error with exactly this message.
// Its code is ENOTFOUND — there is nothing to pick;
// the 401 is the gateway's rendering for this route, not a property of the
// error, so the gateway maps it (errors.Is ErrNoCredential) itself.
func NoCredential(provider string) *vault.Error {
	return &vault.Error{Code: vault.ENOTFOUND, Message: "No credential available for provider " + provider, Err: ErrNoCredential}
}

// Pick chooses the credential for one request of provider: a stored API key
// when the provider has any, else an OAuth credential, recorded as the
// session's sticky credential. It returns NoCredential when the provider has
// none, and the Source's error when the credentials cannot be listed.
func (p *Picker) Pick(ctx context.Context, provider, sessionID string, opts Options) (e vault.Entry, err error) {
	es, err := p.entries(ctx, provider)
	if err != nil {
		return e, err
	}
	if keys := byType(es, vault.TypeAPIKey); len(keys) > 0 {
		return *p.pickAPIKey(provider, sessionID, opts, keys), nil
	}
	if oauth := byType(es, vault.TypeOAuth); len(oauth) > 0 {
		return p.pickOAuth(ctx, provider, sessionID, opts, oauth)
	}
	p.clearSticky(provider, sessionID)
	return e, NoCredential(provider)
}

// pickAPIKey picks one of keys (not empty) and returns a pointer into
// keys.
func (p *Picker) pickAPIKey(provider, sessionID string, opts Options, keys []vault.Entry) *vault.Entry {
	pk := ProviderKey(provider, string(vault.TypeAPIKey))
	ord := p.order(pk, len(keys), sessionID)
	chosen := &keys[ord[0]]
	// The request's scopes: a model-policy block of a key skips it for
	// that model only (cursor).
	scopes := scopeFor(provider, opts.ModelID).scopes()
	for _, i := range ord {
		if !p.blocked(pk, scopes, &keys[i]) {
			chosen = &keys[i]
			break
		}
	}
	p.setSticky(provider, sessionID, chosen.ID)
	return chosen
}

// usage prefetches the usage reports, bounded by UsageTimeout; nil when
// they cannot be had in time ("no usage signal this cycle").
func (p *Picker) usage(ctx context.Context) []vault.UsageReport {
	ctx, cancel := context.WithTimeout(ctx, UsageTimeout)
	defer cancel()
	type result struct {
		rs  []vault.UsageReport
		err error
	}
	ch := make(chan result, 1)
	go func() {
		rs, err := p.Source.Usage(ctx)
		ch <- result{rs, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			p.log().Debug("pick: usage unavailable", "err", r.err)
			return nil
		}
		return r.rs
	case <-ctx.Done():
		return nil
	}
}
