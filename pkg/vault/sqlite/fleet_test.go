package sqlite_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

func TestBlocksUpsertMaxSharedSplitAndBumps(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	recs := must[[]vault.Record](t)(st.Upsert(ctx, "openai-codex", oauth("a@x.y", "r1")))
	id := recs[0].ID
	now := e.clk.Now().UnixMilli()
	put := func(scope string, until int64) bool {
		t.Helper()
		changed, err := st.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: vault.CodexProviderKey, Scope: scope, UntilMs: until})
		if err != nil {
			t.Fatal(err)
		}
		return changed
	}
	g0 := gen(t, st)
	if !put("chat", now+300_000) {
		t.Fatal("first chat block: no change reported")
	}
	if !put("spark", now+900_000) {
		t.Fatal("first spark block: no change reported")
	}
	// shared +600 s raises chat, leaves spark.
	if !put("shared", now+600_000) {
		t.Fatal("shared post that raised chat: no change reported")
	}
	if g := gen(t, st); g != g0+3 {
		t.Fatalf("generation %d, want %d after three raising posts", g, g0+3)
	}
	// Redundant posts refresh updated_at, never bump.
	e.clk.Add(5 * time.Second)
	for range 3 {
		if put("shared", now+600_000) || put("chat", now+1) {
			t.Fatal("redundant post reported a change")
		}
	}
	if g := gen(t, st); g != g0+3 {
		t.Fatalf("generation %d after redundant posts, want %d", g, g0+3)
	}
	got := must[map[int64][]vault.CredentialBlock](t)(st.Blocks(ctx, now))[id]
	upd := (e.clk.Now().UnixMilli() / 1000) * 1000
	want := []vault.CredentialBlock{
		{ProviderKey: vault.CodexProviderKey, Scope: "chat", UntilMs: now + 600_000, UpdatedAtMs: upd},
		{ProviderKey: vault.CodexProviderKey, Scope: "spark", UntilMs: now + 900_000, UpdatedAtMs: upd},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("blocks %+v, want %+v", got, want)
	}
	// Expired blocks are not listed.
	if bs := must[map[int64][]vault.CredentialBlock](t)(st.Blocks(ctx, now+700_000))[id]; len(bs) != 1 || bs[0].Scope != "spark" {
		t.Fatalf("blocks at +700 s: %+v, want only spark", bs)
	}
	// Clear deletes all and bumps once.
	if changed := must[bool](t)(st.ClearBlocks(ctx, id)); !changed {
		t.Fatal("clear reported no change")
	}
	if changed := must[bool](t)(st.ClearBlocks(ctx, id)); changed {
		t.Fatal("second clear reported a change")
	}
	if g := gen(t, st); g != g0+4 {
		t.Fatalf("generation %d after clears, want %d", g, g0+4)
	}
	if _, err := st.PutBlock(ctx, 999, vault.CredentialBlock{ProviderKey: "x:oauth", UntilMs: now + 1000}); vault.ErrorCode(err) != vault.ENOTFOUND {
		t.Fatalf("block on unknown id: %v, want ENOTFOUND", err)
	}
}

func TestBlocksCapAndDisabledRows(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	id := must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("a@x.y", "r1")))[0].ID
	now := e.clk.Now().UnixMilli()
	for i := range vault.MaxBlocksPerCredential {
		if _, err := st.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: "anthropic:oauth", Scope: "s" + string(rune('A'+i)), UntilMs: now + 1000}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: "anthropic:oauth", Scope: "one-more", UntilMs: now + 1000})
	if vault.ErrorCode(err) != vault.EINVALID {
		t.Fatalf("65th block: %v, want EINVALID", err)
	}
	// Raising an existing row is still fine.
	if _, err := st.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: "anthropic:oauth", Scope: "sA", UntilMs: now + 2000}); err != nil {
		t.Fatal(err)
	}
	// Once they expire, the cap counts live rows only and pruning empties the table.
	e.clk.Add(3 * time.Second)
	if _, err := st.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: "anthropic:oauth", Scope: "one-more", UntilMs: now + 60_000}); err != nil {
		t.Fatalf("block after expiry: %v", err)
	}
	if err := st.Disable(ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	if bs := must[map[int64][]vault.CredentialBlock](t)(st.Blocks(ctx, now)); len(bs) != 0 {
		t.Fatalf("blocks of a disabled row listed: %+v", bs)
	}
	if _, err := st.ClearBlocks(ctx, id); vault.ErrorCode(err) != vault.ENOTFOUND {
		t.Fatalf("clear on disabled row: %v, want ENOTFOUND", err)
	}
	if n := must[int64](t)(st.PruneBlocks(ctx, now+120_000)); n != 1 {
		t.Fatalf("pruned %d rows, want 1", n)
	}
}

func TestHealBlocksRespectsUpdateAge(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	id := must[[]vault.Record](t)(st.Upsert(ctx, "openai-codex", oauth("a@x.y", "r1")))[0].ID
	now := e.clk.Now().UnixMilli()
	must[bool](t)(st.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: vault.CodexProviderKey, Scope: "shared", UntilMs: now + 3_600_000}))
	if n := must[int](t)(st.HealBlocks(ctx, id, vault.CodexProviderKey, []string{"chat"}, now-300_000)); n != 0 {
		t.Fatalf("healed %d blocks younger than 5 min", n)
	}
	e.clk.Add(6 * time.Minute)
	g := gen(t, st)
	if n := must[int](t)(st.HealBlocks(ctx, id, vault.CodexProviderKey, []string{"chat"}, e.clk.Now().UnixMilli()-300_000)); n != 1 {
		t.Fatalf("healed %d blocks, want 1 (chat)", n)
	}
	if gen(t, st) != g+1 {
		t.Fatal("healing did not advance the generation")
	}
	if bs := must[map[int64][]vault.CredentialBlock](t)(st.Blocks(ctx, e.clk.Now().UnixMilli()))[id]; len(bs) != 1 || bs[0].Scope != "spark" {
		t.Fatalf("blocks after healing chat: %+v", bs)
	}
}

func TestClientUsageMergeAggregateAndPrune(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	now := e.clk.Now().UnixMilli()
	entry := func(at int64, provider, model string, in int64) vault.ObservedUsage {
		return vault.ObservedUsage{At: at, Provider: provider, Model: model, Requests: 1, InputTokens: in, OutputTokens: 1, CostUsd: 0.5}
	}
	rec := func(r vault.ClientUsageReport) {
		t.Helper()
		if err := st.RecordClientUsage(ctx, r, e.clk.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	rec(vault.ClientUsageReport{InstallID: "i1", Hostname: "h1", App: "omp", Entries: []vault.ObservedUsage{
		entry(now, "anthropic", "m1", 10), entry(now+60_000, "anthropic", "m1", 10), // merged
		entry(now+400_000, "anthropic", "m1", 10), // new row (beyond 5 min)
		entry(now, "openai", "m2", 100),
	}})
	// The 5-minute rule: m1 at now and now+60 s share a row, now+400 s
	// starts one; a second report within 5 minutes of that row adds to it.
	rec(vault.ClientUsageReport{InstallID: "i1", App: "omp", Entries: []vault.ObservedUsage{entry(now+500_000, "anthropic", "m1", 0)}})
	db := rawDB(t, e.path)
	var n, last int64
	if err := db.QueryRow("SELECT count(*), max(recorded_at) FROM client_usage WHERE provider = 'anthropic'").Scan(&n, &last); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if n != 2 || last != now+500_000 {
		t.Fatalf("anthropic rows %d (newest at %d), want 2 rows, newest at now+500 s", n, last-now)
	}
	e.clk.Add(time.Second)
	rec(vault.ClientUsageReport{InstallID: "i2", Entries: nil}) // seen, no usage
	rec(vault.ClientUsageReport{InstallID: "i1"})               // hostname kept when not sent
	got := must[[]vault.ClientSummary](t)(st.ClientUsage(ctx, 0, false))
	if len(got) != 2 || got[0].InstallID != "i1" || got[1].InstallID != "i2" || got[0].Hostname != "h1" {
		t.Fatalf("clients %+v", got)
	}
	p := got[0].Providers
	if len(p) != 2 || p[0].Provider != "openai" || p[1].Provider != "anthropic" || p[1].Requests != 4 || p[1].InputTokens != 30 || p[1].CostUsd != 2 || p[0].App != "omp" {
		t.Fatalf("providers %+v", p)
	}
	if len(got[1].Providers) != 0 || got[1].Providers == nil {
		t.Fatalf("client without usage: %+v", got[1])
	}
	if f := must[[]vault.ClientSummary](t)(st.ClientUsage(ctx, now+1_000_000, false)); len(f) != 2 || len(f[0].Providers) != 0 {
		t.Fatalf("future sinceMs: %+v", f)
	}
	// Prune: usage before the cut goes, then idle clients without usage.
	if n := must[int64](t)(st.PruneClientUsage(ctx, now+600_000)); n < 3 {
		t.Fatalf("pruned %d rows", n)
	}
	if left := must[[]vault.ClientSummary](t)(st.ClientUsage(ctx, 0, false)); len(left) != 0 {
		t.Fatalf("after prune: %+v", left)
	}
}

// TestLocalSourceCarriesBlocks: the broker host's in-process Source puts
// the live blocks on snapshot entries (local-mode selection uses them).
func TestLocalSourceCarriesBlocks(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	id := must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("a@x.y", "r1")))[0].ID
	now := e.clk.Now().UnixMilli()
	must[bool](t)(st.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: "anthropic:oauth", UntilMs: now + 60_000}))
	src := &vault.LocalSource{Store: st, Now: e.clk.Now}
	snap := must[vault.Snapshot](t)(src.Snapshot(ctx))
	if len(snap.Credentials) != 1 || len(snap.Credentials[0].Blocks) != 1 || snap.Credentials[0].Blocks[0].UntilMs != now+60_000 {
		t.Fatalf("snapshot %+v", snap.Credentials)
	}
	e.clk.Add(2 * time.Minute)
	if snap := must[vault.Snapshot](t)(src.Snapshot(ctx)); snap.Credentials[0].Blocks != nil {
		t.Fatalf("expired block still on the entry: %+v", snap.Credentials[0].Blocks)
	}
}

// TestClientUsageCountersNeverOverflow: hostile counters (MaxInt64, in one
// series and in two) saturate instead of wrapping or failing the
// aggregate that /v1/usage/clients reads.
func TestClientUsageCountersNeverOverflow(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	now := e.clk.Now().UnixMilli()
	huge := func(model string) vault.ObservedUsage {
		return vault.ObservedUsage{At: now, Provider: "openai", Model: model, Requests: math.MaxInt64, InputTokens: math.MaxInt64}
	}
	for range 3 {
		if err := st.RecordClientUsage(ctx, vault.ClientUsageReport{InstallID: "evil", App: "x",
			Entries: []vault.ObservedUsage{huge("a"), huge("a"), huge("b")}}, now); err != nil {
			t.Fatal(err)
		}
	}
	clients, err := st.ClientUsage(ctx, 0, false)
	if err != nil {
		t.Fatalf("ClientUsage after hostile counters: %v", err)
	}
	if len(clients) != 1 || len(clients[0].Providers) != 1 {
		t.Fatalf("clients %+v", clients)
	}
	if p := clients[0].Providers[0]; p.Requests != 2*vault.MaxObservedCount || p.InputTokens != 2*vault.MaxObservedCount {
		t.Fatalf("sums %d / %d, want two saturated series of %d", p.Requests, p.InputTokens, vault.MaxObservedCount)
	}
}

// TestClientUsageCaps: one install id hammering new series stays within
// its daily row cap with exact per-(provider, credential) totals, and a new
// install id beyond the client cap evicts the least recently seen one with
// its usage.
func TestClientUsageCaps(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var logs bytes.Buffer
	st := e.open(t, func(o *sqlite.Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	sqlite.SetObservedCaps(st, 3, 10)
	now := e.clk.Now().UnixMilli()
	day := now - now%(24*3600*1000)
	rec := func(id string, es ...vault.ObservedUsage) {
		t.Helper()
		if err := st.RecordClientUsage(ctx, vault.ClientUsageReport{InstallID: id, App: "gateway", Entries: es}, e.clk.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	// 3 reports × 8 new models on one day, alternating two credentials of
	// one provider: 24 series, 10 rows kept.
	var want [2]int64
	for r := range 3 {
		var es []vault.ObservedUsage
		for j := range 8 {
			cred := int64(1 + j%2)
			es = append(es, vault.ObservedUsage{At: day + 1000, Provider: "anthropic", Model: fmt.Sprintf("m%d-%d", r, j),
				CredentialID: cred, Requests: 1, InputTokens: 10})
			want[cred-1] += 10
		}
		rec("hammer", es...)
	}
	db := rawDB(t, e.path)
	count := func(q string, args ...any) (n int64) {
		t.Helper()
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM client_usage WHERE install_id = 'hammer'"); n != 10 {
		t.Fatalf("%d rows for one install id, want the cap 10", n)
	}
	for i, w := range want {
		if got := count("SELECT sum(input_tokens) FROM client_usage WHERE credential_id = ?", i+1); got != w {
			t.Fatalf("credential %d: %d tokens stored, want all %d (folded, not lost)", i+1, got, w)
		}
	}
	// Another day has its own cap.
	rec("hammer", vault.ObservedUsage{At: day - 1000, Provider: "anthropic", Model: "yesterday", Requests: 1})
	if n := count("SELECT count(*) FROM client_usage WHERE install_id = 'hammer'"); n != 11 {
		t.Fatalf("%d rows after a report for the previous day, want 11", n)
	}
	// Client cap 3: hammer, a, b; c evicts the least recently seen (hammer).
	for _, id := range []string{"a", "b", "c"} {
		e.clk.Add(time.Second)
		rec(id, vault.ObservedUsage{At: e.clk.Now().UnixMilli(), Provider: "openai", Model: "m", Requests: 1})
	}
	got := must[[]vault.ClientSummary](t)(st.ClientUsage(ctx, 0, false))
	if len(got) != 3 || got[0].InstallID != "c" || got[2].InstallID != "a" {
		t.Fatalf("clients after the cap: %+v", got)
	}
	if n := count("SELECT count(*) FROM client_usage WHERE install_id = 'hammer'"); n != 0 {
		t.Fatalf("evicted client kept %d usage rows", n)
	}
	for _, want := range []string{`observed-usage rows of one install id over the daily cap`, `installId=hammer`, `folded=8`,
		`observed-usage client cap reached`, `oldest=hammer`, `newInstallId=c`} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("logs lack %q:\n%s", want, logs.String())
		}
	}
	// A known client reporting again evicts nobody.
	rec("a", vault.ObservedUsage{At: e.clk.Now().UnixMilli(), Provider: "openai", Model: "m", Requests: 1})
	if got := must[[]vault.ClientSummary](t)(st.ClientUsage(ctx, 0, false)); len(got) != 3 {
		t.Fatalf("clients after a known client's report: %d", len(got))
	}
}

// The table-wide row cap (vault.MaxObservedRows) bounds a crowd of clients
// that each stay under their own caps: past it the rows recorded longest
// ago go, down to 95 % of the cap, with a log line; the in-memory count
// follows prunes and rollbacks by counting again.
func TestClientUsageRowCap(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var logs bytes.Buffer
	st := e.open(t, func(o *sqlite.Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	sqlite.SetObservedRowCap(st, 40)
	db := rawDB(t, e.path)
	count := func(q string) (n int64) {
		t.Helper()
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// 12 clients × 5 series each, one report a second: 60 rows wanted.
	for i := range 12 {
		e.clk.Add(time.Second)
		at := e.clk.Now().UnixMilli()
		var es []vault.ObservedUsage
		for j := range 5 {
			es = append(es, vault.ObservedUsage{At: at, Provider: "anthropic", Model: fmt.Sprintf("m%d", j), Requests: 1})
		}
		if err := st.RecordClientUsage(ctx, vault.ClientUsageReport{InstallID: fmt.Sprintf("c%02d", i), App: "gateway", Entries: es}, at); err != nil {
			t.Fatal(err)
		}
		if n := count("SELECT count(*) FROM client_usage"); n > 40 {
			t.Fatalf("after client %d: %d rows stored, cap 40", i, n)
		}
	}
	if n := count("SELECT count(*) FROM client_usage WHERE install_id = 'c11'"); n != 5 {
		t.Fatalf("the newest client kept %d of its 5 rows", n)
	}
	if n := count("SELECT count(*) FROM client_usage WHERE install_id = 'c00'"); n != 0 {
		t.Fatalf("the oldest client kept %d rows past the cap", n)
	}
	if !strings.Contains(logs.String(), "observed-usage row cap reached") {
		t.Fatalf("no log line for the row cap:\n%s", logs.String())
	}
	// A prune resets the count: what it deleted is not counted twice.
	if _, err := st.PruneClientUsage(ctx, e.clk.Now().UnixMilli()+1); err != nil {
		t.Fatal(err)
	}
	at := e.clk.Now().UnixMilli()
	if err := st.RecordClientUsage(ctx, vault.ClientUsageReport{InstallID: "late", App: "gateway",
		Entries: []vault.ObservedUsage{{At: at, Provider: "openai", Model: "m", Requests: 1}}}, at); err != nil {
		t.Fatal(err)
	}
	if n := count("SELECT count(*) FROM client_usage"); n != 1 {
		t.Fatalf("%d rows after a prune and one report, want 1", n)
	}
}

// The statements cached per connection are finalised when the store
// closes: opening, writing observed usage and closing a vault many times
// leaves no file descriptor behind (an unfinalised statement keeps its
// connection, and the vault file, open).
func TestClientUsageStatementsReleasedOnClose(t *testing.T) {
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(es)
	}
	ctx := context.Background()
	e := newEnv(t)
	e.open(t).Close()
	before := fds()
	for i := range 20 {
		st := e.open(t)
		r := vault.ClientUsageReport{InstallID: "i", Entries: []vault.ObservedUsage{{At: e.clk.Now().UnixMilli(), Provider: "p", Model: fmt.Sprint(i), Requests: 1}}}
		if err := st.RecordClientUsage(ctx, r, e.clk.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if after := fds(); after > before+2 {
		t.Fatalf("open descriptors %d → %d after 20 open/write/close cycles", before, after)
	}
}
