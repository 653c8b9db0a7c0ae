package server_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/server"
)

// listCounter counts List and Walk calls: each one reads every row.
type listCounter struct {
	vault.Store
	n atomic.Int64
}

func (l *listCounter) List(ctx context.Context, provider string) ([]vault.Record, error) {
	l.n.Add(1)
	return l.Store.List(ctx, provider)
}

func (l *listCounter) Walk(ctx context.Context, provider string, fn func(*vault.Record)) error {
	l.n.Add(1)
	return l.Store.Walk(ctx, provider, fn)
}

// TestScrapeNeverListsVault: the expiry gauges come from the hub's last
// snapshot, so scrapes cost no List (no decryption), yet the gauges follow
// the clock and every vault change.
func TestScrapeNeverListsVault(t *testing.T) {
	var lc *listCounter
	e := newEnv(t, func(s *server.Server) { lc = &listCounter{Store: s.Store}; s.Store = lc })
	a := e.upsert("anthropic", oauthCred("a@b.c", e.clk.Now().UnixMilli()+60_000))
	series := `omp_broker_credential_expiry_seconds{id="` + itoa(a.ID) + `",provider="anthropic"} `
	eventually(t, "the expiry gauge of the first credential", func() bool {
		_, _, body := e.get("/metrics")
		return strings.Contains(body, series+"60\n")
	})
	before := lc.n.Load()
	const scrapes = 25
	for i := range scrapes {
		e.clk.Add(time.Second)
		st, _, body := e.get("/metrics")
		if want := series + itoa(int64(60-(i+1))) + "\n"; st != 200 || !strings.Contains(body, want) {
			t.Fatalf("scrape %d = %d, lacks %q", i, st, want)
		}
	}
	if extra := lc.n.Load() - before; extra != 0 {
		t.Fatalf("%d scrapes made %d List calls, want 0", scrapes, extra)
	}

	// A change reaches the gauges through the hub's rebuild (one Walk).
	b := e.upsert("anthropic", oauthCred("b@b.c", e.clk.Now().UnixMilli()+120_000))
	if err := e.store.Disable(context.Background(), a.ID, "test"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gauges to follow the vault", func() bool {
		_, _, body := e.get("/metrics")
		return strings.Contains(body, `omp_broker_credential_expiry_seconds{id="`+itoa(b.ID)+`",provider="anthropic"} 120`) &&
			!strings.Contains(body, series)
	})
	settled := lc.n.Load()
	for range scrapes {
		e.get("/metrics")
	}
	if extra := lc.n.Load() - settled; extra != 0 {
		t.Fatalf("%d scrapes after a change made %d List calls, want 0", scrapes, extra)
	}
}
