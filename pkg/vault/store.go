package vault

import (
	"context"
	"time"
)

// Disable causes (exact strings, as the reference writes them).
const (
	CauseReplaced       = "replaced by newer credential"
	CauseDeduplicated   = "deduplicated duplicate credential"
	CauseLoggedOut      = "logged out by user"
	CauseDeleted        = "deleted by user"
	CauseDisabledViaAPI = "disabled via auth-broker"
	CauseDisabled       = "disabled"                     // stored for an empty cause
	CauseRefreshPrefix  = "auth-broker refresh failed: " // 15.x; no longer written
	CauseClientRefresh  = "oauth refresh failed: "
	CauseUsageProbe     = "oauth refresh failed during usage probe: " // 15.x; no longer written
	// CauseReplacedByOAuth disables a provider's API keys when an OAuth
	// credential of that provider is upserted (18.1.21).
	CauseReplacedByOAuth = "replaced by oauth login"
)

// RefreshFailureCause is the disable cause of a definitive refresh failure
// on every path — sweep, HTTP refresh, usage probe (as 18.1.21 writes it):
// "oauth refresh failed: Error: <message>". The "Error: " prefix is the
// reference's stringified JavaScript error, kept
// byte-for-byte.
func RefreshFailureCause(err error) string {
	return CauseClientRefresh + "Error: " + err.Error()
}

// Record is one row of the vault.
type Record struct {
	ID            int64
	Provider      string
	Credential    Credential
	IdentityKey   string // "" when none (JSON null)
	DisabledCause string // "" when active
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Active reports whether the record is not disabled.
func (r Record) Active() bool { return r.DisabledCause == "" }

// Store is the credential vault. Every mutating method commits in one
// transaction and advances the generation; a failed call leaves the vault
// unchanged. A write the storage refuses (disk full, read-only file system,
// I/O error) fails with EUNAVAILABLE and a message that names it ("vault
// storage is full", "vault is read-only"): it may succeed later, and reads
// keep working. Secrets are sealed at rest by the implementation.
type Store interface {
	// List returns the active records, ordered by id ascending; provider ""
	// means every provider.
	List(ctx context.Context, provider string) ([]Record, error)

	// Get returns the record with id, active or not. ENOTFOUND if no row.
	Get(ctx context.Context, id int64) (Record, error)

	// Walk calls fn with each active record of provider ("" means every
	// provider), ordered by id ascending, as List would return them but
	// without copying them: r is the store's own record, valid only during
	// the call. fn must not modify r or keep it (or its Extra values), and
	// must not call the store.
	Walk(ctx context.Context, provider string, fn func(r *Record)) error

	// Upsert stores cred for provider by identity and returns
	// every active record of the provider afterwards. EINVALID if cred fails
	// Validate.
	Upsert(ctx context.Context, provider string, cred Credential) ([]Record, error)

	// UpsertWalk is Upsert showing the provider's active records afterwards
	// to fn, under Walk's rules, instead of returning copies of them.
	UpsertWalk(ctx context.Context, provider string, cred Credential, fn func(r *Record)) error

	// ReplaceAll stores creds with replace-all semantics (API-key login).
	ReplaceAll(ctx context.Context, provider string, creds []Credential) ([]Record, error)

	// UpdateCredential is the refresh write-back: it replaces the data of the
	// active row id, recomputes its identity key and purges superseded rows.
	// ENOTFOUND if the row is missing or disabled.
	UpdateCredential(ctx context.Context, id int64, cred Credential) (Record, error)

	// Disable soft-deletes the active row id with cause ("" → CauseDisabled).
	// ENOTFOUND if the row is missing or already disabled.
	Disable(ctx context.Context, id int64, cause string) error

	// DisableIf disables row id only if it is active and its credential still
	// equals expected (compare-and-set). It reports whether it disabled.
	DisableIf(ctx context.Context, id int64, expected Credential, cause string) (bool, error)

	// DisableProvider soft-deletes every active row of provider (logout) and
	// returns how many it disabled.
	DisableProvider(ctx context.Context, provider, cause string) (int, error)

	// Dedupe soft-deletes older active OAuth rows sharing a non-empty identity
	// key within a provider (CauseDeduplicated) and returns how many.
	Dedupe(ctx context.Context) (int, error)

	// Generation returns the vault's change counter: it only grows, across
	// restarts and across processes writing the same vault.
	Generation(ctx context.Context) (int64, error)

	// Close releases the store.
	Close() error
}

// CacheStore is the durable key/value cache used by the usage layer.
// Values are opaque bytes; expiresAt is epoch ms.
type CacheStore interface {
	// GetCache returns the value stored under key. Rows whose durable expiry
	// has passed are reported as missing unless stale is true.
	GetCache(ctx context.Context, key string, stale bool) (value []byte, ok bool, err error)
	// SetCache stores value under key until keepUntil (epoch ms).
	SetCache(ctx context.Context, key string, value []byte, keepUntil int64) error
}

// UsageHistoryEntry is one row of usage history.
type UsageHistoryEntry struct {
	RecordedAt   int64    `json:"recordedAt"`
	Provider     string   `json:"provider"`
	AccountKey   string   `json:"accountKey"`
	Email        string   `json:"email,omitempty"`
	AccountID    string   `json:"accountId,omitempty"`
	LimitID      string   `json:"limitId"`
	Label        string   `json:"label"`
	WindowLabel  string   `json:"windowLabel,omitempty"`
	UsedFraction *float64 `json:"usedFraction,omitempty"`
	Status       string   `json:"status,omitempty"`
	ResetsAt     *int64   `json:"resetsAt,omitempty"`
}

// HistoryStore records usage history with hourly downsampling.
type HistoryStore interface {
	// RecordUsage appends entries, updating a series' latest row in place
	// when it falls in the same hour bucket.
	RecordUsage(ctx context.Context, entries []UsageHistoryEntry) error
	// UsageHistory returns entries recorded at or after sinceMs, optionally
	// for one provider, ascending.
	UsageHistory(ctx context.Context, sinceMs int64, provider string) ([]UsageHistoryEntry, error)
}
