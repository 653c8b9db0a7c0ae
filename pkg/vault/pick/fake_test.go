package pick

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// fakeSource is an in-memory vault.Source. Refresh rotates the access token
// ("<old>~r1", "~r2", …) unless failRefresh holds an error for the id.
type fakeSource struct {
	mu          sync.Mutex
	entries     []vault.Entry
	reports     []vault.UsageReport
	usageErr    error
	failRefresh map[int64]error
	refreshes   []int64
	usageCalls  int
}

var _ vault.Source = (*fakeSource)(nil)

func (f *fakeSource) Snapshot(ctx context.Context) (vault.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return vault.Snapshot{Credentials: append([]vault.Entry(nil), f.entries...)}, nil
}

func (f *fakeSource) Get(ctx context.Context, id int64) (vault.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.entries {
		if e.ID == id {
			return e, nil
		}
	}
	return vault.Entry{}, vault.NotFoundID(id)
}

func (f *fakeSource) List(ctx context.Context, provider string) ([]vault.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []vault.Entry
	for _, e := range f.entries {
		if provider == "" || e.Provider == provider {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeSource) Refresh(ctx context.Context, id int64) (vault.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshes = append(f.refreshes, id)
	if err := f.failRefresh[id]; err != nil {
		return vault.Entry{}, err
	}
	for i, e := range f.entries {
		if e.ID == id {
			e.Credential.Access = fmt.Sprintf("%s~r%d", e.Credential.Access, len(f.refreshes))
			e.Credential.Expires = farFuture
			f.entries[i] = e
			return e, nil
		}
	}
	return vault.Entry{}, vault.NotFoundID(id)
}

func (f *fakeSource) Usage(ctx context.Context) ([]vault.UsageReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usageCalls++
	return f.reports, f.usageErr
}

func (f *fakeSource) remove(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, e := range f.entries {
		if e.ID == id {
			f.entries = append(f.entries[:i], f.entries[i+1:]...)
			return
		}
	}
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const farFuture = 4102444800000 // 2100-01-01

func apiKey(id int64, provider, key string) vault.Entry {
	return vault.Entry{ID: id, Provider: provider, Credential: vault.Credential{Type: vault.TypeAPIKey, Key: key}}
}

func oauth(id int64, provider, account string) vault.Entry {
	return vault.Entry{ID: id, Provider: provider, IdentityKey: "email:" + account + "@x",
		Credential: vault.Credential{Type: vault.TypeOAuth, Access: "tok-" + account, Refresh: vault.RemoteRefreshSentinel,
			Expires: farFuture, Email: account + "@x", AccountID: "acct-" + account}}
}

func newPicker(src *fakeSource) (*Picker, *fakeClock) {
	clk := &fakeClock{t: t0}
	return &Picker{Source: src, Now: clk.Now}, clk
}

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// limit builds a percent limit with a window.
func limit(id, window string, durMs int64, used float64, resetsAt int64) vault.UsageLimit {
	l := vault.UsageLimit{ID: id, Label: id, Amount: vault.UsageAmount{UsedFraction: f64(used), Used: f64(used * 100), Limit: f64(100), Unit: "percent"},
		Window: &vault.UsageWindow{ID: window, Label: window, DurationMs: i64(durMs)}}
	if resetsAt != 0 {
		l.Window.ResetsAt = i64(resetsAt)
	}
	if used >= 1 {
		l.Status = vault.StatusExhausted
	}
	return l
}

func report(provider, account string, meta map[string]any, limits ...vault.UsageLimit) vault.UsageReport {
	m := map[string]any{"accountId": "acct-" + account, "email": account + "@x"}
	for k, v := range meta {
		m[k] = v
	}
	return vault.UsageReport{Provider: provider, Limits: limits, Metadata: m}
}
