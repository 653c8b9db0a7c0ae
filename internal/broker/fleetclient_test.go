package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/pick"
	"github.com/ompgo/omp/pkg/vault/remote"
	"github.com/ompgo/omp/pkg/vault/vaulttest"
)

// A usage limit one member's picker sets reaches another member through the
// real broker: the block is posted, arrives on the other store's entry as
// a shared block, and that member's picker stops choosing the account.
func TestBlockReachesAnotherMember(t *testing.T) {
	b := newHarness(t).start(t)
	ctx := context.Background()
	for _, email := range []string{"x@example.com", "y@example.com"} {
		cred := vaulttest.OAuth("anthropic", email).Credential()
		cred.Access = "sk-ant-oat01-usage-" + email // what the fake usage endpoint accepts
		if _, err := b.client.Upload(ctx, "anthropic", cred); err != nil {
			t.Fatal(err)
		}
	}
	a := startRemote(t, b, remote.Options{})
	c := startRemote(t, b, remote.Options{})
	pa := &pick.Picker{Source: a}
	pc := &pick.Picker{Source: c}
	eventually(t, 5*time.Second, "both stores loaded", func() bool {
		ea, _ := a.List(ctx, "anthropic")
		ec, _ := c.List(ctx, "anthropic")
		return len(ea) == 2 && len(ec) == 2
	})
	const sid = "session-1"
	x, err := pa.Pick(ctx, "anthropic", sid, pick.Options{ModelID: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := pc.Pick(ctx, "anthropic", sid, pick.Options{ModelID: "claude-sonnet-4-5"}); got.ID != x.ID {
		t.Fatalf("members disagree before the block: %d vs %d", got.ID, x.ID)
	}
	if _, err := pa.MarkUsageLimitReached(ctx, "anthropic", sid, pick.LimitOptions{RetryAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eventually(t, waitLong, "the block on the other member's entry", func() bool {
		e, err := c.Get(ctx, x.ID)
		return err == nil && len(e.Blocks) == 1 && e.Blocks[0].ProviderKey == "anthropic:oauth" && e.Blocks[0].Scope == ""
	})
	t.Logf("block visible on the other member after %v", time.Since(start).Round(time.Millisecond))
	got, err := pc.Pick(ctx, "anthropic", sid, pick.Options{ModelID: "claude-sonnet-4-5"})
	if err != nil || got.ID == x.ID {
		t.Fatalf("other member picked %d (%v), want not the blocked %d", got.ID, err, x.ID)
	}
	// The broker kept it: a fresh snapshot carries it.
	e, _ := c.Get(ctx, x.ID)
	if until := e.Blocks[0].UntilMs; until < time.Now().Add(59*time.Minute).UnixMilli() {
		t.Errorf("shared block until %d, want about an hour from now", until)
	}
}

// Observed usage recorded by a Reporter lands in the broker's per-client
// summary: one install, merged per (app, provider, model).
func TestReporterFeedsBrokerClients(t *testing.T) {
	b := newHarness(t).start(t)
	ctx := context.Background()
	r := &remote.Reporter{Client: b.client, Every: 50 * time.Millisecond}
	for range 3 {
		r.Record(remote.Observation{InstallID: "inst-1", Hostname: "box", App: "gateway", Provider: "anthropic",
			Model: "claude-sonnet-4-5", InputTokens: 100, OutputTokens: 10, CostUsd: 0.01})
	}
	r.Record(remote.Observation{InstallID: "inst-1", App: "gateway", Provider: "anthropic", Model: "x"}) // zero tokens: skipped
	var got []vault.ClientSummary
	eventually(t, waitLong, "the batch at the broker", func() bool {
		u, err := b.client.UsageClients(ctx, 0)
		got = u.Clients
		return err == nil && len(got) == 1 && len(got[0].Providers) == 1
	})
	c := got[0]
	p := c.Providers[0]
	if c.InstallID != "inst-1" || c.Hostname != "box" || p.App != "gateway" || p.Provider != "anthropic" ||
		p.Requests != 3 || p.InputTokens != 300 || p.OutputTokens != 30 {
		t.Errorf("client summary %+v %+v, want inst-1/box gateway anthropic 3 requests 300 in 30 out", c, p)
	}
	r.Close(ctx)
}
