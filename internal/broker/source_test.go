package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/remote"
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

// TestRemoteSourceContract runs the same contract against the remote store a
// gateway embeds, following the real broker over HTTP and its SSE stream.
func TestRemoteSourceContract(t *testing.T) {
	for _, mode := range []struct {
		name     string
		noStream bool
	}{{"stream", false}, {"long-poll", true}} {
		t.Run(mode.name, func(t *testing.T) {
			vaulttest.RunSourceContract(t, func(t *testing.T) vaulttest.SourceHarness {
				b := newHarness(t).start(t)
				rs := startRemote(t, b, remote.Options{NoStream: mode.noStream, PollWait: 2 * time.Second})
				return vaulttest.SourceHarness{
					Source: rs,
					Put: func(t *testing.T, provider string, cred vault.Credential) int64 {
						t.Helper()
						before, _ := b.m.Store.List(context.Background(), provider)
						entries, err := b.client.Upload(context.Background(), provider, cred)
						if err != nil {
							t.Fatalf("Upload: %v", err)
						}
						return newID(t, before, entries)
					},
					Disable: func(t *testing.T, id int64) {
						t.Helper()
						if err := b.client.Disable(context.Background(), id, ""); err != nil {
							t.Fatalf("Disable(%d): %v", id, err)
						}
					},
					Sync:          func(t *testing.T) { t.Helper(); waitSynced(t, b, rs) },
					OAuthProvider: "anthropic",
				}
			})
		})
	}
}

// startRemote runs a remote store against b until the test ends and waits
// for its first snapshot.
func startRemote(t *testing.T, b *runningBroker, opts remote.Options) *remote.Store {
	t.Helper()
	opts.Client = brokerclient.New(b.url, b.token, nil)
	rs := remote.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rs.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("remote Run: %v", err)
		}
	})
	select {
	case <-rs.Ready():
	case <-time.After(10 * time.Second):
		t.Fatalf("remote store not ready within 10s: %+v", rs.Status())
	}
	return rs
}

// waitSynced waits until the remote store holds the broker's active set
// (ids and access tokens). It does not compare generations: a credential
// added and removed between two hub builds moves the broker's generation
// without any frame on the stream.
func waitSynced(t *testing.T, b *runningBroker, rs *remote.Store) {
	t.Helper()
	view := func(ids []int64, access []string) string { return fmt.Sprint(ids, access) }
	recs, err := b.m.Store.List(context.Background(), "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var ids []int64
	var access []string
	for _, r := range recs {
		ids, access = append(ids, r.ID), append(access, r.Credential.Access)
	}
	want := view(ids, access)
	eventually(t, 5*time.Second, "remote store holding the broker's credentials "+want, func() bool {
		got, err := rs.List(context.Background(), "")
		if err != nil {
			return false
		}
		var ids []int64
		var access []string
		for _, e := range got {
			ids, access = append(ids, e.ID), append(access, e.Credential.Access)
		}
		return view(ids, access) == want
	})
}

// newID returns the id that entries has and before had not.
func newID(t *testing.T, before []vault.Record, entries []vault.Entry) int64 {
	t.Helper()
	old := map[int64]bool{}
	for _, r := range before {
		old[r.ID] = true
	}
	for _, e := range entries {
		if !old[e.ID] {
			return e.ID
		}
	}
	t.Fatalf("upload created no new id (entries %v)", entries)
	return 0
}
