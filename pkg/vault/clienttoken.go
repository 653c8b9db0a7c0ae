package vault

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// Client token scopes. A client token is a named bearer for one member of a
// fleet (a gateway, an omp client); the shared bearer file keeps working
// beside them with admin rights.
const (
	// ScopeClient may read snapshots and streams, refresh by id, read
	// /v1/usage, post blocks and post observed usage (attributed to the
	// token's name).
	ScopeClient = "client"
	// ScopeAdmin may do everything the shared bearer may.
	ScopeAdmin = "admin"
)

// SharedTokenName is how logs name the shared bearer (the token file); no
// client token may take it.
const SharedTokenName = "shared"

// ClientTokenPrefix starts every client token, so a leaked one is
// recognisable (secret scanners, logs) and never mistaken for the shared
// bearer.
const ClientTokenPrefix = "ompct_"

// MaxTokenNameLen is the longest client token name, in bytes.
const MaxTokenNameLen = 64

// ClientToken is a named broker bearer. Only the SHA-256 digest of the
// token is stored: the token itself is shown once, at creation.
type ClientToken struct {
	Name      string
	Scope     string // ScopeClient or ScopeAdmin
	Digest    [sha256.Size]byte
	CreatedAt time.Time
}

// TokenStore keeps named client tokens.
type TokenStore interface {
	// CreateToken stores t. EINVALID for a bad name or scope, ECONFLICT if
	// a token of that name exists.
	CreateToken(ctx context.Context, t ClientToken) error
	// ClientTokens returns every token, ordered by name.
	ClientTokens(ctx context.Context) ([]ClientToken, error)
	// RevokeToken deletes the token name. ENOTFOUND if there is none.
	RevokeToken(ctx context.Context, name string) error
	// TokensVersion changes on every create and revoke (also by other
	// processes writing the same vault): a reader re-reads the tokens when
	// it moved.
	TokensVersion(ctx context.Context) (int64, error)
}

// NewClientToken returns a fresh client token: ClientTokenPrefix followed
// by 32 random bytes in unpadded base64url (256 bits of entropy), and its
// digest.
func NewClientToken() (token string, digest [sha256.Size]byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	token = ClientTokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, TokenDigest(token)
}

// TokenDigest is the stored form of a bearer token.
func TokenDigest(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// ValidateTokenName checks a client token name: 1 to MaxTokenNameLen
// characters out of letters, digits, '.', '_' and '-', starting with a
// letter or digit, and not SharedTokenName.
func ValidateTokenName(name string) error {
	if name == "" {
		return Errorf(EINVALID, "token name must not be empty")
	}
	if len(name) > MaxTokenNameLen {
		return Errorf(EINVALID, "token name is longer than %d characters", MaxTokenNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return Errorf(EINVALID, "token name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	if name == SharedTokenName {
		return Errorf(EINVALID, "token name %q is reserved for the shared bearer", name)
	}
	return nil
}

// ValidateScope checks a client token scope.
func ValidateScope(scope string) error {
	if scope != ScopeClient && scope != ScopeAdmin {
		return Errorf(EINVALID, "token scope must be %q or %q, not %q", ScopeClient, ScopeAdmin, scope)
	}
	return nil
}

// Validate checks t's name and scope.
func (t ClientToken) Validate() error {
	if err := ValidateTokenName(t.Name); err != nil {
		return err
	}
	return ValidateScope(t.Scope)
}
