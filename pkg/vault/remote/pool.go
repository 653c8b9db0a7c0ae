package remote

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// EnvAccountPoolFile names the account-pool file.
const EnvAccountPoolFile = "OMP_AUTH_BROKER_ACCOUNT_POOL_FILE"

// Pool restricts which OAuth accounts of a provider one client uses:
// provider id → the identity keys allowed. A provider
// absent from the pool is unrestricted; API-key entries always pass. The
// broker neither knows nor enforces it. The zero value (nil) allows all.
type Pool map[string][]string

// PoolError is a pool file that cannot be used; its message is the exact
// text the reference prints before exiting 1.
type PoolError struct{ Msg string }

func (e *PoolError) Error() string { return e.Msg }

// LoadPool reads the pool named by the value of EnvAccountPoolFile (env is
// that value, untrimmed). An empty value (after trimming) is no pool: nil,
// nil. The path is used as given (relative to the working directory, no
// ~ expansion). Errors are *PoolError with the reference's texts, checked
// in the reference's order.
func LoadPool(env string) (Pool, error) {
	path := strings.TrimSpace(env)
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	unreadable := &PoolError{"Unable to read " + EnvAccountPoolFile + " at " + path}
	if err != nil {
		return nil, unreadable
	}
	return parsePool(data, unreadable)
}

// ParsePool parses a pool file's contents (see LoadPool); path only names
// the file in the "Unable to read" error.
func ParsePool(data []byte, path string) (Pool, error) {
	return parsePool(data, &PoolError{"Unable to read " + EnvAccountPoolFile + " at " + path})
}

func parsePool(data []byte, unreadable *PoolError) (Pool, error) {
	var top any
	if !json.Valid(data) || json.Unmarshal(data, &top) != nil {
		return nil, unreadable
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return nil, &PoolError{EnvAccountPoolFile + " must contain a JSON object"}
	}
	// Keys in file order, so the first bad key is the one reported.
	keys, err := objectKeys(data)
	if err != nil {
		return nil, unreadable
	}
	pool := Pool{}
	for _, k := range keys {
		if strings.TrimSpace(k) == "" {
			return nil, &PoolError{EnvAccountPoolFile + " contains an empty provider id"}
		}
		if strings.TrimSpace(k) != k {
			return nil, &PoolError{EnvAccountPoolFile + " contains a provider id with surrounding whitespace"}
		}
		arr, ok := obj[k].([]any)
		if !ok {
			return nil, &PoolError{fmt.Sprintf("%s entry for %s must be an array of identity keys", EnvAccountPoolFile, k)}
		}
		ids := make([]string, 0, len(arr))
		for _, it := range arr {
			s, ok := it.(string)
			if !ok || s == "" {
				return nil, &PoolError{fmt.Sprintf("%s entry for %s contains an invalid identity key", EnvAccountPoolFile, k)}
			}
			if strings.TrimSpace(s) != s {
				return nil, &PoolError{fmt.Sprintf("%s entry for %s contains an identity key with surrounding whitespace", EnvAccountPoolFile, k)}
			}
			if !slices.Contains(ids, s) {
				ids = append(ids, s)
			}
		}
		pool[k] = ids
	}
	return pool, nil
}

// objectKeys returns the keys of the top-level JSON object in data, in
// order (a repeated key once, as JSON.parse keeps the last value).
func objectKeys(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// Allows reports whether e passes the pool: API keys always; an OAuth
// entry when its provider is absent from the pool or its identity key is
// non-empty and listed (exact, case-sensitive).
func (p Pool) Allows(e vault.Entry) bool {
	if p == nil || e.Credential.Type != vault.TypeOAuth {
		return true
	}
	ids, ok := p[e.Provider]
	if !ok {
		return true
	}
	return e.IdentityKey != "" && slices.Contains(ids, e.IdentityKey)
}

// Unmatched returns, per pool provider with a non-empty list, the identity
// keys that match no OAuth entry of that provider among entries (so a
// mistyped key is warned about); providers whose keys all match are absent.
func (p Pool) Unmatched(entries []vault.Entry) map[string][]string {
	have := map[string]bool{}
	for _, e := range entries {
		if e.Credential.Type == vault.TypeOAuth && e.IdentityKey != "" {
			have[e.Provider+"\x00"+e.IdentityKey] = true
		}
	}
	out := map[string][]string{}
	for prov, ids := range p {
		for _, id := range ids {
			if !have[prov+"\x00"+id] {
				out[prov] = append(out[prov], id)
			}
		}
	}
	return out
}
