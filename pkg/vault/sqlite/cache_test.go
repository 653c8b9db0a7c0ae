package sqlite_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
)

func TestCacheExpiryAndStaleReads(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st := e.open(t)
	now := e.clk.Now().UnixMilli()
	if err := st.SetCache(ctx, "usage_cache:a", []byte(`{"value":null}`), now+60_000); err != nil {
		t.Fatal(err)
	}
	if err := st.SetCache(ctx, "usage_cache:b", []byte{}, now+120_000); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		advance   time.Duration
		key       string
		stale     bool
		wantOK    bool
		wantValue string
	}{
		{"fresh row is returned", 0, "usage_cache:a", false, true, `{"value":null}`},
		{"empty value is present", 0, "usage_cache:b", false, true, ""},
		{"missing key is absent", 0, "usage_cache:zz", true, false, ""},
		{"expired row is absent", 60 * time.Second, "usage_cache:a", false, false, ""},
		{"expired row is returned for a stale read", 0, "usage_cache:a", true, true, `{"value":null}`},
	} {
		e.clk.Add(tc.advance)
		v, ok, err := st.GetCache(ctx, tc.key, tc.stale)
		if err != nil || ok != tc.wantOK || string(v) != tc.wantValue {
			t.Fatalf("%s: GetCache = %q, %v, %v", tc.name, v, ok, err)
		}
	}
	// Overwrite extends and replaces.
	if err := st.SetCache(ctx, "usage_cache:a", []byte("v2"), e.clk.Now().UnixMilli()+1); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := st.GetCache(ctx, "usage_cache:a", false); !ok || string(v) != "v2" {
		t.Fatalf("overwrite: %q %v", v, ok)
	}
	st.Close()

	// Expired rows are purged at Open: not even a stale read finds them.
	e.clk.Add(time.Hour)
	st = e.open(t)
	if _, ok, err := st.GetCache(ctx, "usage_cache:a", true); ok || err != nil {
		t.Fatalf("expired row survived reopen: %v %v", ok, err)
	}
}

func TestCacheValueMovedToAnotherKeyFailsToOpen(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	keep := e.clk.Now().UnixMilli() + 60_000
	st.SetCache(ctx, "a", []byte("A"), keep)
	st.SetCache(ctx, "b", []byte("B"), keep)
	execSQL(t, rawDB(t, e.path), "UPDATE cache SET value = (SELECT value FROM cache WHERE key = 'a') WHERE key = 'b'")
	if _, _, err := st.GetCache(ctx, "b", false); !errors.Is(err, seal.ErrAuth) {
		t.Fatalf("GetCache = %v", err)
	}
}

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

func TestUsageHistoryDownsamplesPerHour(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	const h = int64(3_600_000)
	base := (int64(1_765_000_000_000) / h) * h // start of an hour
	entry := func(at int64, provider, limit string, used float64) vault.UsageHistoryEntry {
		return vault.UsageHistoryEntry{RecordedAt: at, Provider: provider, AccountKey: "oauth|email:a@x.io", Email: "a@x.io",
			LimitID: limit, Label: limit + " label", WindowLabel: "5h", UsedFraction: f64(used), Status: "ok", ResetsAt: i64(at + h)}
	}
	steps := [][]vault.UsageHistoryEntry{
		{entry(base+10, "anthropic", "5h", 0.1), entry(base+10, "anthropic", "7d", 0.5)},
		{entry(base+h-1, "anthropic", "5h", 0.2)}, // same hour: updates in place
		{entry(base+h, "anthropic", "5h", 0.3)},   // next hour: inserts
		{entry(base+h+5, "openai-codex", "5h", 0.9)},
		{{Provider: "openai-codex", AccountKey: "k", LimitID: "x", Label: "x"}}, // RecordedAt 0 → now, optional fields absent
	}
	for _, s := range steps {
		if err := st.RecordUsage(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.UsageHistory(ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		at    int64
		limit string
		used  float64
	}
	var got []row
	for _, r := range all {
		u := -1.0
		if r.UsedFraction != nil {
			u = *r.UsedFraction
		}
		got = append(got, row{r.RecordedAt, r.LimitID, u})
	}
	want := []row{
		{base + 10, "7d", 0.5},
		{base + h - 1, "5h", 0.2},
		{base + h, "5h", 0.3},
		{base + h + 5, "5h", 0.9},
		{e.clk.Now().UnixMilli(), "x", -1},
	}
	slices.SortStableFunc(want, func(a, b row) int { return int(a.at - b.at) })
	if !slices.Equal(got, want) {
		t.Fatalf("history\n got %v\nwant %v", got, want)
	}
	last := all[slices.IndexFunc(all, func(r vault.UsageHistoryEntry) bool { return r.LimitID == "x" })]
	if last.Email != "" || last.ResetsAt != nil || last.Status != "" {
		t.Fatalf("absent optionals came back: %+v", last)
	}

	some, err := st.UsageHistory(ctx, base+h, "anthropic")
	if err != nil || len(some) != 1 || some[0].RecordedAt != base+h || some[0].Provider != "anthropic" {
		t.Fatalf("filtered history = %+v, %v", some, err)
	}
}

func TestPruneUsageHistory(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	gen0, _ := st.Generation(ctx)
	entry := func(at int64, limit string) vault.UsageHistoryEntry {
		return vault.UsageHistoryEntry{RecordedAt: at, Provider: "anthropic", AccountKey: "k", LimitID: limit, Label: limit}
	}
	if err := st.RecordUsage(ctx, []vault.UsageHistoryEntry{entry(1_000, "old"), entry(2_000, "edge"), entry(3_000, "new")}); err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneUsageHistory(ctx, 2_000)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want 1", n, err)
	}
	got, err := st.UsageHistory(ctx, 0, "")
	if err != nil || len(got) != 2 || got[0].LimitID != "edge" || got[1].LimitID != "new" {
		t.Fatalf("left %+v, %v", got, err)
	}
	if n, err := st.PruneUsageHistory(ctx, 2_000); err != nil || n != 0 {
		t.Fatalf("second prune %d, %v", n, err)
	}
	if gen, _ := st.Generation(ctx); gen != gen0 {
		t.Errorf("generation moved %d → %d", gen0, gen)
	}
}
