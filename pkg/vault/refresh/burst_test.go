package refresh

import (
	"context"
	"testing"
	"time"
)

func TestForcedRefreshesWithinTheMinimumIntervalAreCoalesced(t *testing.T) {
	f := newFixture(t)
	f.r.MinForcedInterval = 30 * time.Second
	ctx := context.Background()
	id := f.add(t, "anthropic", "burst@x", "r1", t0.Add(time.Hour).UnixMilli())

	for i := range 50 {
		rec, err := f.r.RefreshNow(ctx, id)
		if err != nil {
			t.Fatalf("forced refresh %d: %v (a coalesced refresh is a success)", i, err)
		}
		if rec.Credential.Access != "acc-r1" || rec.Credential.Refresh != "r1'" {
			t.Fatalf("forced refresh %d returned access %q refresh %q, want the just-refreshed credential", i, rec.Credential.Access, rec.Credential.Refresh)
		}
		f.now.Add(100) // 50 refreshes over 5 s of the fake clock
	}
	if got := f.fp.hits.Load(); got != 1 {
		t.Fatalf("token endpoint called %d times for 50 forced refreshes within the interval, want 1", got)
	}

	// Once the interval has passed, a forced refresh reaches the endpoint.
	f.now.Add((30 * time.Second).Milliseconds())
	if _, err := f.r.RefreshNow(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := f.fp.hits.Load(); got != 2 {
		t.Fatalf("token endpoint called %d times after the interval, want 2", got)
	}

	// A row replaced since the last refresh (a new login) is refreshed as asked.
	other := f.add(t, "anthropic", "burst@x", "r9", t0.Add(time.Hour).UnixMilli())
	if other != id {
		t.Fatalf("the upload made a new row %d, want %d replaced", other, id)
	}
	if _, err := f.r.RefreshNow(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := f.fp.hits.Load(); got != 3 {
		t.Fatalf("token endpoint called %d times for a replaced row, want 3", got)
	}
}
