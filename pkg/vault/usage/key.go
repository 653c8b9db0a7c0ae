package usage

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// cachePrefix prefixes every durable usage cache key.
const cachePrefix = "usage_cache:"

// providerKeyOverrides bump the cache-key version of providers whose report
// shape changed.
var providerKeyOverrides = map[string]string{"google-antigravity": "2:google-antigravity"}

// CacheIdentity is the credential identity of the usage cache: the type, then
// |account:, |email:, |project:, |enterprise: for each present field and —
// only without accountId and email — |secret:<hash> or |anonymous. It is
// also the usage-history account_key.
//
// The secret hash is the first 64 bits of SHA-256 in lowercase hex without
// padding (the reference uses Bun's Wyhash; the key is only ever compared
// within one cache, so our own hash is compatible).
func CacheIdentity(c vault.Credential) string {
	var b strings.Builder
	b.WriteString(string(c.Type))
	account := strings.TrimSpace(c.AccountID)
	email := strings.ToLower(strings.TrimSpace(c.Email))
	for _, p := range [][2]string{
		{"account:", account},
		{"email:", email},
		{"project:", strings.TrimSpace(c.ProjectID)},
		{"enterprise:", strings.ToLower(strings.TrimSpace(c.EnterpriseURL))},
	} {
		if p[1] != "" {
			b.WriteString("|" + p[0] + p[1])
		}
	}
	if account == "" && email == "" {
		secret := cmp.Or(strings.TrimSpace(c.Key), strings.TrimSpace(c.Refresh), strings.TrimSpace(c.Access))
		if secret != "" {
			b.WriteString("|secret:" + secretHash(secret))
		} else {
			b.WriteString("|anonymous")
		}
	}
	return b.String()
}

func secretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return strconv.FormatUint(binary.BigEndian.Uint64(sum[:8]), 16)
}

// CacheKey is the per-credential usage cache key:
// report:<providerKey>:<base or "default">:<identity>.
func CacheKey(provider, base string, c vault.Credential) string {
	pk := provider
	if o, ok := providerKeyOverrides[provider]; ok {
		pk = o
	}
	b := trimBase(base)
	if b == "" {
		b = "default"
	}
	return "report:" + pk + ":" + b + ":" + CacheIdentity(c)
}
