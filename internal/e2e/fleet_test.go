package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/pkg/vault"
)

// fleetGateway is one gateway of a fleet and its bearer token.
type fleetGateway struct {
	m     *gateway.Main
	token string
}

// chat sends one non-streamed chat completion with session id sid and
// returns the HTTP status.
func (g fleetGateway) chat(ctx context.Context, sid string) (int, error) {
	body := []byte(`{"model":"anthropic/claude-sonnet-4-5","messages":[{"role":"user","content":"Say hello"}]}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.m.URL()+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("session_id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitFleet waits until every gateway's store holds n credentials of
// provider and returns how long the slowest took.
func waitFleet(t *testing.T, gws []fleetGateway, provider string, n int) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for i, g := range gws {
		for {
			es, err := g.m.Store.List(ctx, provider)
			if err == nil && len(es) == n {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("gateway %d holds %d %s credentials, want %d (%v)", i, len(es), provider, n, err)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return time.Since(start)
}

// One broker and three stateless gateways, as deployed (deploy/k8s: a
// broker StatefulSet and a gateway Deployment of 3): a credential change
// reaches every gateway within a second; a session keeps its account on
// every gateway with no state shared between them; the gateways keep
// serving from their last snapshot while the broker is down, lose no
// request while it restarts, and resync when it is back.
func TestFleetOfThreeGatewaysOneBroker(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ string) { writeSSE(w, anthropicText) })
	dir := t.TempDir()
	b := startBroker(t, f, dir, "127.0.0.1:0")
	var gws []fleetGateway
	for i := range 3 {
		m, tok := startGateway(t, f, b, filepath.Join(dir, fmt.Sprintf("gw%d", i)))
		gws = append(gws, fleetGateway{m, tok})
	}
	ctx := context.Background()

	// A credential added at the broker is usable on all three within 1 s
	// (the time is logged; waitFleet fails past waitLong, so a loaded
	// machine cannot fail it).
	keys := []string{"sk-ant-fleet-1", "sk-ant-fleet-2", "sk-ant-fleet-3"}
	for i, k := range keys {
		if _, err := b.client().Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: k}); err != nil {
			t.Fatal(err)
		}
		t.Logf("credential %d reached the last gateway after %v", i+1, waitFleet(t, gws, "anthropic", i+1).Round(time.Millisecond))
	}

	// A session keeps its account whichever gateway serves it
	// (API-key order by xxHash32 of the session), and sessions spread over the
	// accounts.
	used := map[string]bool{}
	for s := range 8 {
		sid := fmt.Sprintf("fleet-session-%d", s)
		var got []string
		for i, g := range gws {
			n := len(f.requests())
			if code, err := g.chat(ctx, sid); err != nil || code != http.StatusOK {
				t.Fatalf("gateway %d, %s: %d %v", i, sid, code, err)
			}
			got = append(got, f.requests()[n].key)
		}
		if got[0] != got[1] || got[1] != got[2] {
			t.Errorf("%s was served with %v: not the same account on every gateway", sid, got)
		}
		used[got[0]] = true
	}
	if len(used) < 2 {
		t.Errorf("8 sessions all used one account (%v): no spread", used)
	}

	// Broker down: each gateway serves from its last snapshot.
	u, err := url.Parse(b.m.URL())
	if err != nil {
		t.Fatal(err)
	}
	b.stop()
	for i, g := range gws {
		if code, err := g.chat(ctx, "while-the-broker-is-down"); err != nil || code != http.StatusOK {
			t.Fatalf("gateway %d with the broker down: %d %v", i, code, err)
		}
	}

	// Requests keep flowing while the broker comes back on the same
	// address and vault; none fails (API keys need no refresh).
	var failed, served atomic.Int64
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	for i, g := range gws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stopLoad:
					return
				default:
				}
				code, err := g.chat(ctx, fmt.Sprintf("load-%d-%d", i, n%16))
				if err != nil || code != http.StatusOK {
					failed.Add(1)
					t.Errorf("gateway %d during the restart: %d %v", i, code, err)
					return
				}
				served.Add(1)
			}
		}()
	}
	b2 := startBroker(t, f, dir, u.Host)

	// The gateways resync: a key added at the restarted broker reaches
	// all three.
	if _, err := b2.client().Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-fleet-4"}); err != nil {
		t.Fatal(err)
	}
	waitFleet(t, gws, "anthropic", 4)
	close(stopLoad)
	wg.Wait()
	if failed.Load() != 0 || served.Load() == 0 {
		t.Errorf("through the broker restart: %d served, %d failed", served.Load(), failed.Load())
	}
	for i, g := range gws {
		es, _ := g.m.Store.List(ctx, "anthropic")
		var got []string
		for _, e := range es {
			got = append(got, e.Credential.Key)
		}
		slices.Sort(got)
		if want := append(slices.Clone(keys), "sk-ant-fleet-4"); !slices.Equal(got, want) {
			t.Errorf("gateway %d after the resync holds %v, want %v", i, got, want)
		}
	}
}
