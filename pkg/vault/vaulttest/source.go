// Package vaulttest holds the contract test suites of the pkg/vault
// interfaces. Each implementation runs the same suite from its own tests, so
// the SQLite-backed source of the broker host and the remote store of the
// gateway and the agent are held to one contract. Test-only: non-test code
// never imports it (internal/deptest checks).
package vaulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// SourceHarness is what RunSourceContract needs from an implementation: a
// fresh, empty backing vault per call and the means to write to it the way
// an operator would (upload, disable), outside the Source under test.
type SourceHarness struct {
	// Source is the implementation under test, over the backing vault.
	Source vault.Source
	// Put stores cred for provider in the backing vault and returns its id.
	Put func(t *testing.T, provider string, cred vault.Credential) int64
	// Disable soft-deletes credential id in the backing vault.
	Disable func(t *testing.T, id int64)
	// Sync returns once Source reflects every Put and Disable made so far
	// (nil: the source reads the vault directly, nothing to wait for).
	Sync func(t *testing.T)
	// OAuthProvider is a provider whose token endpoint the harness fakes:
	// refreshing one of its OAuth credentials succeeds with a new access
	// token.
	OAuthProvider string
}

// RunSourceContract runs the vault.Source contract against the source that
// newHarness builds; newHarness is called once per subtest with an empty
// backing vault.
func RunSourceContract(t *testing.T, newHarness func(t *testing.T) SourceHarness) {
	ctx := func(t *testing.T) context.Context {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return c
	}
	sync := func(t *testing.T, h SourceHarness) {
		t.Helper()
		if h.Sync != nil {
			h.Sync(t)
		}
	}

	t.Run("empty vault has an empty snapshot", func(t *testing.T) {
		h := newHarness(t)
		snap, err := h.Source.Snapshot(ctx(t))
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		if len(snap.Credentials) != 0 {
			t.Errorf("Snapshot has %d credentials, want 0", len(snap.Credentials))
		}
		if snap.Generation <= 0 {
			t.Errorf("Generation = %d, want > 0", snap.Generation)
		}
		list, err := h.Source.List(ctx(t), "")
		if err != nil || len(list) != 0 {
			t.Errorf("List(\"\") = %v, %v; want empty", list, err)
		}
	})

	t.Run("reads are redacted and agree with each other", func(t *testing.T) {
		h := newHarness(t)
		oa := OAuth(h.OAuthProvider, "alice@example.com")
		oa.Extra = map[string]json.RawMessage{"orgId": json.RawMessage(`"org-1"`)}
		idOAuth := h.Put(t, h.OAuthProvider, oa.Credential())
		idKey := h.Put(t, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-contract-key"})
		sync(t, h)

		snap, err := h.Source.Snapshot(ctx(t))
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		if len(snap.Credentials) != 2 {
			t.Fatalf("Snapshot has %d credentials, want 2", len(snap.Credentials))
		}
		if snap.Credentials[0].ID >= snap.Credentials[1].ID {
			t.Errorf("Snapshot not ordered by id: %d, %d", snap.Credentials[0].ID, snap.Credentials[1].ID)
		}
		all, err := h.Source.List(ctx(t), "")
		if err != nil || len(all) != 2 {
			t.Fatalf("List(\"\") = %d entries, %v; want 2", len(all), err)
		}
		for _, e := range append(all, snap.Credentials...) {
			checkRedacted(t, e)
		}

		got, err := h.Source.Get(ctx(t), idOAuth)
		if err != nil {
			t.Fatalf("Get(%d): %v", idOAuth, err)
		}
		if got.Provider != h.OAuthProvider || got.Credential.Access != oa.Access || got.Credential.Email != oa.Email || got.Credential.Expires != oa.Expires {
			t.Errorf("Get(%d) = %+v, want provider %s access %s email %s", idOAuth, got, h.OAuthProvider, oa.Access, oa.Email)
		}
		// Extension fields are kept (18.1.21).
		if got.Credential.OrgID() != "org-1" {
			t.Errorf("Get(%d) lost the orgId extension field: %v", idOAuth, got.Credential.Extra)
		}
		if got.IdentityKey == "" {
			t.Errorf("Get(%d).IdentityKey is empty for an OAuth credential with an email", idOAuth)
		}
		key, err := h.Source.Get(ctx(t), idKey)
		if err != nil {
			t.Fatalf("Get(%d): %v", idKey, err)
		}
		if key.Credential.Type != vault.TypeAPIKey || key.Credential.Key != "sk-contract-key" || key.RotatesInMs != nil {
			t.Errorf("Get(%d) = %+v, want the API key without rotatesInMs", idKey, key)
		}

		only, err := h.Source.List(ctx(t), "openai")
		if err != nil || len(only) != 1 || only[0].ID != idKey {
			t.Errorf("List(openai) = %+v, %v; want only id %d", only, err, idKey)
		}
		none, err := h.Source.List(ctx(t), "no-such-provider")
		if err != nil || len(none) != 0 {
			t.Errorf("List(no-such-provider) = %+v, %v; want empty", none, err)
		}
	})

	t.Run("generation grows with every write", func(t *testing.T) {
		h := newHarness(t)
		before, err := h.Source.Snapshot(ctx(t))
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		id := h.Put(t, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-gen"})
		sync(t, h)
		mid, err := h.Source.Snapshot(ctx(t))
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		h.Disable(t, id)
		sync(t, h)
		after, err := h.Source.Snapshot(ctx(t))
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		if !(before.Generation < mid.Generation && mid.Generation < after.Generation) {
			t.Errorf("generations %d, %d, %d: want strictly increasing", before.Generation, mid.Generation, after.Generation)
		}
	})

	t.Run("unknown and disabled ids are not found", func(t *testing.T) {
		h := newHarness(t)
		id := h.Put(t, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-gone"})
		h.Disable(t, id)
		sync(t, h)
		for _, probe := range []int64{id, 987654} {
			_, err := h.Source.Get(ctx(t), probe)
			checkNotFound(t, "Get", probe, err)
			_, err = h.Source.Refresh(ctx(t), probe)
			checkNotFound(t, "Refresh", probe, err)
		}
		list, err := h.Source.List(ctx(t), "")
		if err != nil || len(list) != 0 {
			t.Errorf("List after disable = %+v, %v; want empty", list, err)
		}
	})

	t.Run("refresh returns a fresh access token that reads then see", func(t *testing.T) {
		h := newHarness(t)
		oa := OAuth(h.OAuthProvider, "bob@example.com")
		id := h.Put(t, h.OAuthProvider, oa.Credential())
		sync(t, h)
		fresh, err := h.Source.Refresh(ctx(t), id)
		if err != nil {
			t.Fatalf("Refresh(%d): %v", id, err)
		}
		checkRedacted(t, fresh)
		if fresh.ID != id || fresh.Credential.Access == "" || fresh.Credential.Access == oa.Access {
			t.Fatalf("Refresh(%d) = id %d access %q; want id %d and a new access token", id, fresh.ID, fresh.Credential.Access, id)
		}
		if fresh.Credential.Expires <= time.Now().UnixMilli() {
			t.Errorf("Refresh(%d).Expires = %d, want in the future", id, fresh.Credential.Expires)
		}
		sync(t, h)
		got, err := h.Source.Get(ctx(t), id)
		if err != nil {
			t.Fatalf("Get(%d) after refresh: %v", id, err)
		}
		if got.Credential.Access != fresh.Credential.Access {
			t.Errorf("Get(%d) after refresh has access %q, want the refreshed %q", id, got.Credential.Access, fresh.Credential.Access)
		}
	})

	t.Run("refreshing an API key fails and says why", func(t *testing.T) {
		h := newHarness(t)
		id := h.Put(t, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-norefresh"})
		sync(t, h)
		_, err := h.Source.Refresh(ctx(t), id)
		want := fmt.Sprintf("Credential %d is not OAuth (provider=openai, type=api_key): API-key credentials have nothing to refresh", id)
		if err == nil || vault.ErrorMessage(err) != want {
			t.Errorf("Refresh(api key) = %v (message %q), want the message %q", err, vault.ErrorMessage(err), want)
		}
	})

	t.Run("usage answers", func(t *testing.T) {
		h := newHarness(t)
		reports, err := h.Source.Usage(ctx(t))
		if err != nil {
			t.Fatalf("Usage: %v", err)
		}
		if reports == nil {
			t.Errorf("Usage returned nil, want an empty slice")
		}
	})
}

// OAuthFields is a test OAuth credential with a unique identity.
type OAuthFields struct {
	Access, Refresh, Email string
	Expires                int64
	Extra                  map[string]json.RawMessage
}

// OAuth returns a distinct OAuth credential for email, valid for an hour.
func OAuth(provider, email string) OAuthFields {
	return OAuthFields{
		Access:  fmt.Sprintf("at-%s-%s", provider, email),
		Refresh: fmt.Sprintf("rt-%s-%s", provider, email),
		Email:   email,
		Expires: time.Now().Add(time.Hour).UnixMilli(),
	}
}

// Credential returns f as a vault.Credential.
func (f OAuthFields) Credential() vault.Credential {
	c := vault.Credential{Type: vault.TypeOAuth, Access: f.Access, Refresh: f.Refresh, Email: f.Email, Expires: f.Expires}
	if len(f.Extra) > 0 {
		c.Extra = map[string]json.RawMessage{}
		for k, v := range f.Extra {
			c.Extra[k] = v
		}
	}
	return c
}

func checkRedacted(t *testing.T, e vault.Entry) {
	t.Helper()
	if e.Credential.Type == vault.TypeOAuth && e.Credential.Refresh != vault.RemoteRefreshSentinel {
		t.Errorf("entry %d carries a refresh token %q, want the sentinel %q", e.ID, e.Credential.Refresh, vault.RemoteRefreshSentinel)
	}
}

func checkNotFound(t *testing.T, op string, id int64, err error) {
	t.Helper()
	if code := vault.ErrorCode(err); code != vault.ENOTFOUND {
		t.Errorf("%s(%d) code = %q (%v), want %q", op, id, code, err, vault.ENOTFOUND)
		return
	}
	if want := fmt.Sprintf("No credential with id=%d", id); vault.ErrorMessage(err) != want {
		t.Errorf("%s(%d) message = %q, want %q", op, id, vault.ErrorMessage(err), want)
	}
}
