package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/pkg/vault"
)

// The fleet test: three gateways, one broker. Gateway A meets a
// usage limit (upstream 429) on account X; within 1 s (logged) B and C stop
// choosing X; when the block expires all three use X again; three redundant re-posts
// of the block cause no stream traffic (only a visible change bumps the
// generation). The burn the gateways
// served reaches the broker's per-client summary under each gateway's
// install id.
func TestFleetSharesAUsageLimit(t *testing.T) {
	var limited atomic.Value // the key answering 429
	limited.Store("")
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int, key string) {
		if key == limited.Load().(string) {
			writeJSON(w, 429, map[string]string{"retry-after": "2"}, usageLimit429)
			return
		}
		writeSSE(w, anthropicText)
	})
	dir := t.TempDir()
	b := startBroker(t, f, dir, "127.0.0.1:0")
	var gws []fleetGateway
	for i := range 3 {
		m, tok := startGateway(t, f, b, filepath.Join(dir, fmt.Sprintf("gw%d", i)), func(c *gateway.Config) {
			c.InstallID, c.Hostname = fmt.Sprintf("gateway-%d", i), fmt.Sprintf("host-%d", i)
			c.ObservedFlush = 100 * time.Millisecond
		})
		gws = append(gws, fleetGateway{m, tok})
	}
	ctx := context.Background()
	for _, k := range []string{"sk-ant-fleet-x", "sk-ant-fleet-y", "sk-ant-fleet-z"} {
		if _, err := b.client().Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	waitFleet(t, gws, "anthropic", 3)

	const sid = "fleet-block-session"
	served := func(i int) string {
		t.Helper()
		n := len(f.requests())
		if code, err := gws[i].chat(ctx, sid); err != nil || code != http.StatusOK {
			t.Fatalf("gateway %d: %d %v", i, code, err)
		}
		reqs := f.requests()
		return reqs[len(reqs)-1].key + fmt.Sprintf(" (%d upstream calls)", len(reqs)-n)
	}
	home := served(0)
	x := home[:len("sk-ant-fleet-x")]
	for i := range 3 {
		if got := served(i); got != x+" (1 upstream calls)" {
			t.Fatalf("gateway %d served %s, want the session's account %s", i, got, x)
		}
	}

	// A meets the limit on X and fails over to a sibling.
	limited.Store(x)
	if got := served(0); got == x+" (1 upstream calls)" || got[len(got)-len("(2 upstream calls)"):] != "(2 upstream calls)" {
		t.Fatalf("gateway A served %s, want a sibling after one 429", got)
	}
	limitedAt := time.Now()
	var xID int64
	es, _ := gws[0].m.Store.List(ctx, "anthropic")
	for _, e := range es {
		if e.Credential.Key == x {
			xID = e.ID
		}
	}
	// Within 1 s B and C hold the shared block on X (the time is logged;
	// the test fails only past waitLong, so a loaded machine cannot fail
	// it, and the block lasts the 429's 2 s retry-after anyway)...
	for i := 1; i < 3; i++ {
		for {
			e, err := gws[i].m.Store.Get(ctx, xID)
			if err == nil && len(e.Blocks) > 0 {
				break
			}
			if time.Since(limitedAt) > waitLong {
				t.Fatalf("gateway %d holds no block on X %v after A's 429", i, waitLong)
			}
			time.Sleep(5 * time.Millisecond) // a poll
		}
	}
	t.Logf("block on all gateways %v after the 429", time.Since(limitedAt).Round(time.Millisecond))
	// ...and stop choosing X: one upstream call each, never X.
	for i := 1; i < 3; i++ {
		if got := served(i); got == x+" (1 upstream calls)" || got[len(got)-len("(1 upstream calls)"):] != "(1 upstream calls)" {
			t.Errorf("gateway %d served %s, want a sibling without trying X", i, got)
		}
	}

	// Three redundant re-posts (no later deadline) bump nothing. A
	// real change made after them is the barrier: the stream is ordered,
	// so once every gateway has it, any frame of the re-posts has arrived
	// too, and the generations moved by that change alone.
	gen := func() []int64 {
		var out []int64
		for _, g := range gws {
			out = append(out, g.m.Store.Status().Generation)
		}
		return out
	}
	e, _ := gws[1].m.Store.Get(ctx, xID)
	before := gen()
	for range 3 {
		if err := b.client().PostBlock(ctx, xID, e.Blocks[0]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.client().Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-fleet-barrier"}); err != nil {
		t.Fatal(err)
	}
	waitFleet(t, gws, "openai", 1)
	want := make([]int64, len(before))
	for i, g := range before {
		want[i] = g + 1
	}
	if after := gen(); fmt.Sprint(after) != fmt.Sprint(want) {
		t.Errorf("redundant re-posts moved the gateways' generations: %v → %v, want %v (the barrier change only)", before, after, want)
	}

	// When the block expires all three use X again.
	limited.Store("")
	// The subject: the block's wall-clock deadline has to pass.
	time.Sleep(time.Until(time.UnixMilli(e.Blocks[0].UntilMs)) + 50*time.Millisecond)
	for i := range 3 {
		if got := served(i); got != x+" (1 upstream calls)" {
			t.Errorf("gateway %d after the block served %s, want %s again", i, got, x)
		}
	}

	// Observed usage: every gateway's burn at the broker under its install id.
	deadline := time.Now().Add(10 * time.Second) // a hang guard
	for {
		u, err := b.client().UsageClients(ctx, 0)
		seen := map[string]bool{}
		if err == nil {
			for _, c := range u.Clients {
				if len(c.Providers) > 0 && c.Providers[0].App == "gateway" && c.Providers[0].Requests > 0 {
					seen[c.InstallID+"@"+c.Hostname] = true
				}
			}
		}
		if len(seen) == 3 && seen["gateway-0@host-0"] && seen["gateway-2@host-2"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("per-client usage at the broker: %v (%v), want the three gateways", seen, err)
		}
		time.Sleep(50 * time.Millisecond) // a poll
	}
}
