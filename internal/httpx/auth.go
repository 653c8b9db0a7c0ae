package httpx

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// Bearer checks "Authorization: Bearer <token>" against an allow-list in
// constant time. It stores SHA-256 digests of the allowed tokens and
// compares fixed-length digests, so neither the token nor its length leaks
// through timing, and every allowed token is compared on every check.
type Bearer struct {
	digests [][sha256.Size]byte
}

// NewBearer builds a checker. It refuses an empty allow-list (the broker must
// never run without authentication) and empty or space-padded tokens (they
// could never match a trimmed header value, or would match a blank one).
func NewBearer(tokens []string) (*Bearer, error) {
	return NewBearerSet(tokens, nil)
}

// NewBearerSet builds a checker from plain tokens followed by stored
// SHA-256 digests of further tokens (tokens kept hashed at rest). Match
// numbers the entries in that order. Like NewBearer it refuses an empty
// allow-list and blank or space-padded tokens.
func NewBearerSet(tokens []string, digests [][sha256.Size]byte) (*Bearer, error) {
	if len(tokens)+len(digests) == 0 {
		return nil, errors.New("httpx: refusing an empty bearer token allow-list")
	}
	b := &Bearer{digests: make([][sha256.Size]byte, 0, len(tokens)+len(digests))}
	for _, t := range tokens {
		if t == "" || strings.TrimSpace(t) != t {
			return nil, errors.New("httpx: bearer tokens must be non-empty and carry no surrounding whitespace")
		}
		b.digests = append(b.digests, sha256.Sum256([]byte(t)))
	}
	b.digests = append(b.digests, digests...)
	return b, nil
}

// Allow reports whether token is in the allow-list (constant time).
func (b *Bearer) Allow(token string) bool { return b.Match(token) >= 0 }

// Match returns the index of token in the allow-list (plain tokens first,
// then digests, as given to NewBearerSet), or -1. Every entry is compared,
// in constant time, whatever matches: the time taken depends only on the
// size of the allow-list.
func (b *Bearer) Match(token string) int {
	d := sha256.Sum256([]byte(token))
	idx := -1
	for i := range b.digests {
		idx = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(d[:], b.digests[i][:]), i, idx)
	}
	return idx
}

// Authorized reports whether r carries an allowed bearer token. The header
// must match ^Bearer\s+(.+)$ with a case-insensitive scheme; the captured
// token is trimmed before the comparison.
func (b *Bearer) Authorized(r *http.Request) bool {
	tok, ok := BearerToken(r.Header.Get("Authorization"))
	return ok && b.Allow(tok)
}

// BearerToken extracts the token of an Authorization header value.
func BearerToken(h string) (string, bool) {
	const scheme = "bearer"
	// "Bearer" + at least one whitespace + at least one more character.
	if len(h) < len(scheme)+2 || !strings.EqualFold(h[:len(scheme)], scheme) || !isSpace(h[len(scheme)]) {
		return "", false
	}
	tok := strings.TrimSpace(h[len(scheme):])
	return tok, tok != ""
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
