package pick

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// Block durations.
const (
	// DefaultBlock is a block with no better reset time: a usage limit
	// without a retry hint or report, an exhausted report without a future
	// resetsAt, an auth failure (invalidateCredentialMatching).
	DefaultBlock = 60 * time.Second
	// RefreshFailureBlock blocks a credential whose refresh failed
	// transiently.
	RefreshFailureBlock = 5 * time.Minute
)

// ProviderKey is the "<provider>:<type>" key of round-robin cursors and
// blocks, e.g. "openai-codex:oauth", "openai:api_key".
func ProviderKey(provider string, typ string) string { return provider + ":" + typ }

// blockKey is the map key of a block: the provider key, optionally scoped
// ("<provider>:<type>\0<scope>") as in the reference.
func blockKey(providerKey, scope string) string {
	if scope == "" {
		return providerKey
	}
	return providerKey + "\x00" + scope
}

// Blocks holds the in-memory credential blocks of one process: block key →
// credential id → until (epoch ms). A block ends by itself once the clock
// passes its until; expired blocks are dropped when read.
//
// Blocks are keyed by credential id where the reference (at 18.1.21) keys
// them by the candidate's index in the provider's list. Indexes shift
// whenever the set changes — a row added with a lower id, a row disabled in
// the middle — and a block would then land on a neighbour. The reference
// clears every block of a provider on any change, which hides the shift; we
// do the same (Picker clears on change) but the id keeps a block on its
// account in the window between a change and the clear, and is the key the
// broker's shared blocks use, so they can be merged here later.
//
// Blocks is safe for concurrent use.
type Blocks struct {
	// Now is the clock; default time.Now.
	Now func() time.Time

	mu sync.Mutex
	m  map[string]map[int64]int64 // guarded by mu
}

func (b *Blocks) now() int64 {
	if b.Now != nil {
		return b.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// Block blocks credential id under providerKey (and scope, "" = every
// scope) until untilMs, or keeps the existing block when it ends later: a
// block is never shortened. It returns the block's end after the merge.
func (b *Blocks) Block(providerKey, scope string, id int64, untilMs int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]map[int64]int64{}
	}
	k := blockKey(providerKey, scope)
	ids := b.m[k]
	if ids == nil {
		ids = map[int64]int64{}
		b.m[k] = ids
	}
	ids[id] = max(ids[id], untilMs)
	return ids[id]
}

// Until returns when the block of credential id ends, checking the global
// block of providerKey and then each of scopes, and the latest of those
// still in force; ok is false when id is not blocked now.
func (b *Blocks) Until(providerKey string, scopes []string, id int64) (untilMs int64, ok bool) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	check := func(k string) {
		ids := b.m[k]
		u, found := ids[id]
		if !found {
			return
		}
		if u <= now {
			delete(ids, id)
			if len(ids) == 0 {
				delete(b.m, k)
			}
			return
		}
		if !ok || u > untilMs {
			untilMs, ok = u, true
		}
	}
	check(providerKey)
	for _, s := range scopes {
		if s != "" {
			check(blockKey(providerKey, s))
		}
	}
	return untilMs, ok
}

// Blocked reports whether credential id is blocked now (see Until).
func (b *Blocks) Blocked(providerKey string, scopes []string, id int64) bool {
	_, ok := b.Until(providerKey, scopes, id)
	return ok
}

// ClearProvider drops every block of provider, all types and scopes.
func (b *Blocks) ClearProvider(provider string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.m {
		pk, _, _ := strings.Cut(k, "\x00")
		if i := strings.LastIndexByte(pk, ':'); i >= 0 && pk[:i] == provider {
			delete(b.m, k)
		}
	}
}

// Counts returns how many blocks are in force now per provider key
// ("<provider>:<type>", scoped blocks counted under their provider key),
// for metrics. It never returns credential ids.
func (b *Blocks) Counts() map[string]int {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for k, ids := range b.m {
		pk, _, _ := strings.Cut(k, "\x00")
		for _, u := range ids {
			if u > now {
				out[pk]++
			}
		}
	}
	return out
}

// sharedUntil returns the latest end among e's snapshot blocks (the
// broker's shared blocks) that apply to providerKey and scope
// "" or one of scopes and end after nowMs. A block of a foreign provider
// key is never consulted.
func sharedUntil(e *vault.Entry, providerKey string, scopes []string, nowMs int64) (untilMs int64, ok bool) {
	for _, b := range e.Blocks {
		if b.ProviderKey != providerKey || b.UntilMs <= nowMs {
			continue
		}
		if b.Scope != "" && !slices.Contains(scopes, b.Scope) {
			continue
		}
		if !ok || b.UntilMs > untilMs {
			untilMs, ok = b.UntilMs, true
		}
	}
	return untilMs, ok
}
