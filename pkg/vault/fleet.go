package vault

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Fleet extensions: credential blocks shared by every member of
// a fleet, and the token burn each member observes.

// CredentialBlock is one block of one credential: the
// credential must not be used for ProviderKey (and Scope, "" = the whole
// credential) until UntilMs.
type CredentialBlock struct {
	ProviderKey string // "<provider>:<credential type>", e.g. "openai-codex:oauth"
	Scope       string // "" = whole credential; "chat", "spark", "counter:…", "model-policy:…"
	UntilMs     int64  // epoch ms
	UpdatedAtMs int64  // last write, whole seconds × 1000; 0 unknown
}

// Block bounds of the Go broker.
const (
	// MaxBlockWindow is the longest block the broker stores: a monthly
	// reset, the longest legitimate window. Longer deadlines are clamped.
	MaxBlockWindow = 31 * 24 * time.Hour
	// MaxBlockProviderKeyLen and MaxBlockScopeLen bound the key strings (bytes).
	MaxBlockProviderKeyLen = 128
	MaxBlockScopeLen       = 256
	// MaxBlocksPerCredential bounds the live block rows of one credential.
	MaxBlocksPerCredential = 64
)

// Codex meter scopes: a "shared" block covers both meters and
// is stored as one row per meter.
const (
	CodexProviderKey = "openai-codex:oauth"
	ScopeChat        = "chat"
	ScopeSpark       = "spark"
	ScopeShared      = "shared"
)

// ProviderKey is the block key of a credential of provider with type t.
func ProviderKey(provider string, t CredentialType) string { return provider + ":" + string(t) }

// IsCodexMeterScope reports whether scope is one of the Codex meter scopes
// ("chat", "spark" or the legacy "shared").
func IsCodexMeterScope(scope string) bool {
	return scope == ScopeChat || scope == ScopeSpark || scope == ScopeShared
}

// CompareBlocks orders blocks by provider key, scope, deadline (their wire
// order).
func CompareBlocks(a, b CredentialBlock) int {
	return cmp.Or(strings.Compare(a.ProviderKey, b.ProviderKey), strings.Compare(a.Scope, b.Scope), cmp.Compare(a.UntilMs, b.UntilMs))
}

// LiveBlocks returns the blocks of bs with UntilMs > nowMs in wire order,
// nil when none; bs is not modified.
func LiveBlocks(bs []CredentialBlock, nowMs int64) []CredentialBlock {
	var out []CredentialBlock
	for _, b := range bs {
		if b.UntilMs > nowMs {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, CompareBlocks)
	return out
}

// SharedProjection folds the Codex meter blocks ("chat", "spark", "shared"
// of "openai-codex:oauth") into one "shared" block with the largest
// deadline and update time, for readers without the
// codex-meter-block-scopes capability; other blocks pass
// unchanged. The result is in wire order; bs is not modified.
func SharedProjection(bs []CredentialBlock) []CredentialBlock {
	var out []CredentialBlock
	var shared CredentialBlock
	found := false
	for _, b := range bs {
		if b.ProviderKey == CodexProviderKey && IsCodexMeterScope(b.Scope) {
			if !found {
				shared, found = CredentialBlock{ProviderKey: CodexProviderKey, Scope: ScopeShared}, true
			}
			shared.UntilMs = max(shared.UntilMs, b.UntilMs)
			shared.UpdatedAtMs = max(shared.UpdatedAtMs, b.UpdatedAtMs)
			continue
		}
		out = append(out, b)
	}
	if found {
		out = append(out, shared)
	}
	slices.SortFunc(out, CompareBlocks)
	return out
}

// BlockStore keeps credential blocks (docs/protocol.md, Fleet). Blocks live in the
// vault; a change of the visible block set advances the vault generation,
// so snapshot readers see it.
type BlockStore interface {
	// Blocks returns the blocks with UntilMs > nowMs of every active
	// credential, keyed by credential id, each list in wire order.
	Blocks(ctx context.Context, nowMs int64) (map[int64][]CredentialBlock, error)

	// PutBlock upserts b (UpdatedAtMs ignored: the store stamps its own) for
	// the active credential id with max semantics — a post never shortens a
	// block; a Codex "shared" block is stored as a "chat" and a "spark" row.
	// It reports whether the visible block set changed (a row inserted or a
	// deadline raised); only then does the generation advance. ENOTFOUND
	// (NotFoundID) for an unknown or disabled id; EINVALID when the
	// credential would hold more than MaxBlocksPerCredential live rows.
	PutBlock(ctx context.Context, id int64, b CredentialBlock) (changed bool, err error)

	// ClearBlocks deletes every block row of the active credential id and
	// reports whether any live one went. ENOTFOUND for an unknown or
	// disabled id.
	ClearBlocks(ctx context.Context, id int64) (changed bool, err error)

	// HealBlocks deletes the live blocks of credential id with providerKey
	// whose scope is in scopes and whose last update is at or before
	// updatedBeforeMs (the broker's healing), and reports how
	// many went.
	HealBlocks(ctx context.Context, id int64, providerKey string, scopes []string, updatedBeforeMs int64) (int, error)

	// PruneBlocks deletes the block rows with UntilMs <= nowMs (no visible
	// change) and returns how many went.
	PruneBlocks(ctx context.Context, nowMs int64) (int64, error)
}

// ObservedUsage is one observed-usage entry of a client,
// already normalised by NormalizeClientUsage.
type ObservedUsage struct {
	At               int64 // epoch ms
	Provider         string
	Model            string
	Requests         int64
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	CostUsd          float64
	// CredentialID names the vault credential that served the usage (0 =
	// not named): sent by Go clients to a broker that announces the
	// observed-credential-id capability, kept only when it is a credential
	// of Provider (attribution by account).
	CredentialID int64
}

// ClientUsageReport is one client's batched token burn.
type ClientUsageReport struct {
	InstallID string
	Hostname  string // "" = not sent (the stored hostname is kept)
	App       string // trimmed; "" = none
	Entries   []ObservedUsage
}

// Observed-usage bounds of the Go broker.
const (
	MaxObservedIdentityLen = 256  // bytes, install id, hostname, app, provider, model
	MaxObservedEntries     = 1000 // entries of one report
	// MaxObservedCount caps each counter of an entry and of a stored row
	// (requests, tokens): sums of stored rows then stay far from int64
	// overflow whatever clients post.
	MaxObservedCount     = 1_000_000_000_000
	ObservedPastWindow   = 24 * time.Hour // an `at` older than this is replaced by the receive time
	ObservedFutureWindow = 5 * time.Minute
	// ObservedMergeWindow: an entry is added to the newest row of its series
	// when that row is at most this much older, else it starts a new row.
	ObservedMergeWindow = 5 * time.Minute
	// FleetRetention is how long client usage and idle clients are kept.
	FleetRetention = 400 * 24 * time.Hour
	// MaxObservedDayRows caps the stored usage rows of one install id per
	// UTC day (the day of the entry's `at`). A real client makes a row per
	// (app, provider, model, credential) series and per gap of more than 5
	// minutes; 2000 a day is a new series or a pause every 43 seconds
	// around the clock. Beyond it an entry that would start a row is added
	// to that day's newest row of its (app, provider, credential), else
	// dropped, with a log line: totals per provider and account stay exact
	// while the model and time detail of the excess is lost.
	MaxObservedDayRows = 2000
	// MaxObservedClients caps the install ids kept. A report from a new
	// install id beyond it evicts the least recently seen one with all its
	// usage, with a log line.
	MaxObservedClients = 10_000
	// MaxObservedRows caps the stored usage rows of all clients together
	// (about 150 bytes each with their indexes, so a few hundred MB): the
	// two caps above bound one client, this one bounds a crowd of them
	// inside the retention. Beyond it the rows recorded longest ago go
	// (down to 95 % of the cap, so a full table does not prune on every
	// post), with a log line.
	MaxObservedRows = 2_000_000
)

// AccountLabel is how usage tables name a credential: its email, else its
// organisation name, else its account id, else "<type> #<id>" (an API key
// has no identity to show; its key never is).
func AccountLabel(r Record) string {
	c := r.Credential
	for _, s := range []string{c.Email, c.ExtraString(FieldOrgName), c.AccountID} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return fmt.Sprintf("%s #%d", c.Type, r.ID)
}

// CutUTF8 trims s and cuts it to at most n bytes on a rune boundary.
func CutUTF8(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// ClampCounts bounds each counter of e to [0, MaxObservedCount].
func (e *ObservedUsage) ClampCounts() {
	for _, n := range []*int64{&e.Requests, &e.InputTokens, &e.OutputTokens, &e.CacheReadTokens, &e.CacheWriteTokens} {
		*n = min(max(*n, 0), MaxObservedCount)
	}
}

// NormalizeClientUsage bounds r, received at nowMs, without refusing a
// reference-shaped report: identity strings trimmed and cut to
// MaxObservedIdentityLen bytes, counters bounded to [0, MaxObservedCount]
// and negative costs → 0, an
// `at` outside [now − 24 h, now + 5 min] replaced by nowMs. Counters arrive
// as float64 from JSON and are truncated by the caller; r is modified in
// place and returned.
func NormalizeClientUsage(r ClientUsageReport, nowMs int64) ClientUsageReport {
	r.InstallID = CutUTF8(r.InstallID, MaxObservedIdentityLen)
	r.Hostname = CutUTF8(r.Hostname, MaxObservedIdentityLen)
	r.App = CutUTF8(r.App, MaxObservedIdentityLen)
	lo, hi := nowMs-ObservedPastWindow.Milliseconds(), nowMs+ObservedFutureWindow.Milliseconds()
	for i := range r.Entries {
		e := &r.Entries[i]
		e.Provider = CutUTF8(e.Provider, MaxObservedIdentityLen)
		e.Model = CutUTF8(e.Model, MaxObservedIdentityLen)
		if e.At < lo || e.At > hi {
			e.At = nowMs
		}
		e.ClampCounts()
		if !(e.CostUsd > 0) || e.CostUsd > 1e12 { // NaN, negative, absurd
			e.CostUsd = 0
		}
	}
	return r
}

// ClientSummary is one client of GET /v1/usage/clients.
type ClientSummary struct {
	InstallID string                `json:"installId"`
	Hostname  string                `json:"hostname,omitempty"`
	FirstSeen int64                 `json:"firstSeen"`
	LastSeen  int64                 `json:"lastSeen"`
	Providers []ClientProviderUsage `json:"providers"`
}

// ClientProviderUsage is one (app, provider) burn sum of a client, or, for
// a reader that asked for accounts, one (app, provider, credential) sum:
// CredentialID and Account (a display label: email, organisation or
// account id, else "<type> #<id>"; never a secret) are then set on rows
// whose usage named its credential, and omitted otherwise.
type ClientProviderUsage struct {
	App              string  `json:"app,omitempty"`
	Provider         string  `json:"provider"`
	CredentialID     int64   `json:"credentialId,omitempty"`
	Account          string  `json:"account,omitempty"`
	Requests         int64   `json:"requests"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	CostUsd          float64 `json:"costUsd"`
}

// TotalTokens is input + output + cache read + cache write.
func (u ClientProviderUsage) TotalTokens() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// ClientUsageStore records and aggregates observed usage.
type ClientUsageStore interface {
	// RecordClientUsage upserts the client (first/last seen = nowMs) and
	// adds r's entries with the 5-minute merge rule, in one transaction; the
	// generation does not advance. r must be normalised.
	RecordClientUsage(ctx context.Context, r ClientUsageReport, nowMs int64) error
	// ClientUsage returns every client, last seen descending, with its
	// usage recorded at or after sinceMs summed per (app, provider) — per
	// (app, provider, credential) with byAccount, CredentialID and Account
	// set — by total tokens descending.
	ClientUsage(ctx context.Context, sinceMs int64, byAccount bool) ([]ClientSummary, error)
	// PruneClientUsage deletes usage rows recorded before beforeMs and
	// clients last seen before beforeMs that have no usage left, and
	// returns how many rows went.
	PruneClientUsage(ctx context.Context, beforeMs int64) (int64, error)
}
