package brokerd_test

import (
	"context"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/vaulttest"
)

// TestLocalSourceContract runs the vault.Source contract against the broker
// host's own source: the real wiring (sealed SQLite vault, refresher against
// the fake token endpoint, usage service).
func TestLocalSourceContract(t *testing.T) {
	vaulttest.RunSourceContract(t, func(t *testing.T) vaulttest.SourceHarness {
		b := newHarness(t).start(t)
		return vaulttest.SourceHarness{
			Source: b.m.Source(),
			Put: func(t *testing.T, provider string, cred vault.Credential) int64 {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				recs, err := b.m.Store.Upsert(ctx, provider, cred)
				if err != nil {
					t.Fatalf("Upsert: %v", err)
				}
				return recs[len(recs)-1].ID
			},
			Disable: func(t *testing.T, id int64) {
				t.Helper()
				if err := b.m.Store.Disable(context.Background(), id, ""); err != nil {
					t.Fatalf("Disable(%d): %v", id, err)
				}
			},
			OAuthProvider: "anthropic",
		}
	})
}
