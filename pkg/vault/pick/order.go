package pick

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/vault"
)

// rotation returns the candidate order for n candidates:
// with a session id it starts at xxHash32(sessionId) mod n, else at start
// (the round-robin cursor), and wraps around.
func rotation(n int, sessionID string, start int) []int {
	if n == 0 {
		return nil
	}
	first := start % n
	if sessionID != "" {
		first = int(XXHash32(sessionID) % uint32(n))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = (first + i) % n
	}
	return out
}

// fingerprint summarises a provider's credential set as far as selection
// cares: which rows exist, their type and identity. A change in it is the
// "provider credential change (upsert, replace, disable, dedupe)" that
// clears round-robin cursors, stickiness and blocks. A
// token rotation (new access token, new expiry on the same row) is not a
// change: clearing on it would lift the 60 s block invalidateMatching sets
// right before it asks for that very refresh.
//
// It is a 64-bit hash of those fields rather than their text: it is
// computed on every pick, and the text cost five allocations per request.
// A collision between two different sets (odds 2⁻⁶⁴) would only keep the
// cursors and stickiness of the old set.
func fingerprint(entries []vault.Entry) uint64 {
	var h maphash.Hash
	h.SetSeed(fingerprintSeed)
	var n [8]byte
	for _, e := range entries {
		binary.LittleEndian.PutUint64(n[:], uint64(e.ID))
		_, _ = h.Write(n[:])
		_, _ = h.WriteString(string(e.Credential.Type))
		_ = h.WriteByte(0)
		_, _ = h.WriteString(e.IdentityKey)
		_ = h.WriteByte(0)
		// API keys have no identity key; a replaced key value on the same
		// row is a new credential.
		if e.Credential.Type == vault.TypeAPIKey {
			_, _ = h.WriteString(e.Credential.Key)
		}
		_ = h.WriteByte('\n')
	}
	return h.Sum64()
}

// fingerprintSeed is the process's fingerprint seed (fingerprints are
// compared only within the process).
var fingerprintSeed = maphash.MakeSeed()

// Secret returns the bearer an entry provides: the API key, or the OAuth
// access token.
func Secret(e vault.Entry) string { return secret(&e) }

// secret is Secret without a copy of the entry.
func secret(e *vault.Entry) string {
	if e.Credential.Type == vault.TypeAPIKey {
		return e.Credential.Key
	}
	return e.Credential.Access
}

// LLMCredential is what a provider adapter takes for entry e: the API
// key, or the OAuth access token with the account, project and instance
// it belongs to. The gateway and the agent both send requests with it.
func LLMCredential(e vault.Entry) llm.Credential { return CredentialOf(&e) }

// CredentialOf is LLMCredential without copying the entry.
func CredentialOf(e *vault.Entry) llm.Credential {
	c := &e.Credential
	if !c.IsOAuth() {
		return llm.APIKey(secret(e))
	}
	out := llm.OAuthToken(c.Access)
	out.AccountID, out.ProjectID, out.EnterpriseURL = c.AccountID, c.ProjectID, c.EnterpriseURL
	return out
}

// byType returns the entries of one credential type, keeping their order.
func byType(entries []vault.Entry, t vault.CredentialType) []vault.Entry {
	var out []vault.Entry
	for i := range entries {
		if entries[i].Credential.Type == t {
			out = append(out, entries[i])
		}
	}
	return out
}
