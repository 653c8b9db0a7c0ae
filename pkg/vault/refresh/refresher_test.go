package refresh

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

func TestSweepRefreshesOnlyDueCredentials(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	skew := DefaultSkew.Milliseconds()
	now := t0.UnixMilli()
	atBoundary := f.add(t, "anthropic", "boundary@x", "rb", now+skew) // expires == now+skew → due
	justAfter := f.add(t, "anthropic", "after@x", "ra", now+skew+1)   // one ms later → not due
	expired := f.add(t, "anthropic", "expired@x", "re", now-time.Hour.Milliseconds())
	disabled := f.add(t, "anthropic", "disabled@x", "rd", now-1)
	if err := f.store.Disable(ctx, disabled, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.ReplaceAll(ctx, "openrouter", []vault.Credential{{Type: vault.TypeAPIKey, Key: "k"}}); err != nil {
		t.Fatal(err)
	}
	var during atomic.Int64
	f.fp.setReply(func(w http.ResponseWriter, r *http.Request, refresh string) {
		during.Store(f.r.Schedule().NextSweepAt)
		f.now.Add(5) // the sweep takes 5 ms per refresh on the fake clock
		rotate(3600)(w, r, refresh)
	})

	f.r.Sweep(ctx)

	if got := f.fp.hits.Load(); got != 2 {
		t.Fatalf("token requests = %d, want 2 (seen %v)", got, f.fp.seen)
	}
	for _, id := range []int64{atBoundary, expired} {
		rec := f.get(t, id)
		old := map[int64]string{atBoundary: "rb", expired: "re"}[id]
		if rec.Credential.Refresh != old+"'" || rec.Credential.Access != "acc-"+old {
			t.Errorf("row %d not refreshed: %v refresh=%q", id, rec.Credential, rec.Credential.Refresh)
		}
	}
	if rec := f.get(t, justAfter); rec.Credential.Refresh != "ra" {
		t.Errorf("row outside the skew was refreshed")
	}
	if during.Load() != now {
		t.Errorf("nextSweepAt during the sweep = %d, want its start %d", during.Load(), now)
	}
	if got, want := f.r.Schedule().NextSweepAt, f.now.Load()+DefaultInterval.Milliseconds(); got != want {
		t.Errorf("nextSweepAt after the sweep = %d, want finish+interval %d", got, want)
	}
	if got := f.resultList(); len(got) != 2 || got[0] != "anthropic:ok" {
		t.Errorf("results = %v", got)
	}
	if f.changes.Load() != 2 {
		t.Errorf("OnChange called %d times, want 2", f.changes.Load())
	}
}

func TestRefreshNowSingleFlightsConcurrentCallers(t *testing.T) {
	f := newFixture(t)
	id := f.add(t, "anthropic", "one@x", "r1", t0.Add(time.Hour).UnixMilli()) // not due: RefreshNow forces
	release := make(chan struct{})
	f.fp.setReply(blockUntil(release, rotate(3600)))

	const callers = 100
	allJoined := f.joined(id, callers)
	var wg sync.WaitGroup
	recs := make([]vault.Record, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[i], errs[i] = f.r.RefreshNow(context.Background(), id)
		}()
	}
	receive(t, allJoined, "every caller to join the flight")
	close(release)
	wg.Wait()

	if got := f.fp.hits.Load(); got != 1 {
		t.Fatalf("token requests = %d, want exactly 1", got)
	}
	for i := range callers {
		if errs[i] != nil || recs[i].Credential.Refresh != "r1'" {
			t.Fatalf("caller %d: rec refresh=%q err=%v", i, recs[i].Credential.Refresh, errs[i])
		}
	}
	if rec := f.get(t, id); rec.Credential.Refresh != "r1'" || rec.Credential.Access != "acc-r1" {
		t.Errorf("stored refresh=%q", rec.Credential.Refresh)
	}
}

func TestRefreshNowPersistsRotatedTokenBeforeReturningOrPublishing(t *testing.T) {
	f := newFixture(t)
	id := f.add(t, "anthropic", "p@x", "r1", t0.Add(time.Hour).UnixMilli())
	var publishedRefresh atomic.Value
	f.r.OnChange = func() { publishedRefresh.Store(f.get(t, id).Credential.Refresh) }

	rec, err := f.r.RefreshNow(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	stored := f.get(t, id)
	if rec.Credential.Refresh != "r1'" || !stored.Credential.Equal(rec.Credential) {
		t.Fatalf("returned refresh=%q, stored refresh=%q", rec.Credential.Refresh, stored.Credential.Refresh)
	}
	if publishedRefresh.Load() != "r1'" {
		t.Errorf("at publish time the store held refresh=%v", publishedRefresh.Load())
	}
	if rec.Credential.Email != "p@x" || rec.Credential.ProjectID != "proj" || rec.IdentityKey != "email:p@x" {
		t.Errorf("identity not kept: %+v", rec)
	}
	// A second forced refresh spends the rotated token, not the old one.
	if _, err := f.r.RefreshNow(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.fp.seen, ",") != "r1,r1'" {
		t.Errorf("refresh tokens sent = %v", f.fp.seen)
	}
}

func TestDefinitiveFailureDisablesTheRow(t *testing.T) {
	for _, path := range []string{"RefreshNow", "Sweep"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t)
			id := f.add(t, "openai-codex", "c@x", "r1", t0.UnixMilli())
			f.fp.setReply(status(400, `{"error":"invalid_grant"}`))
			const msg = "OpenAI Codex token refresh failed: 400 invalid_grant"
			if path == "RefreshNow" {
				_, err := f.r.RefreshNow(context.Background(), id)
				if err == nil || err.Error() != msg || vault.ErrorCode(err) != vault.EUPSTREAM || vault.ErrorMessage(err) != msg {
					t.Fatalf("err = %v (code %s)", err, vault.ErrorCode(err))
				}
			} else {
				f.r.Sweep(context.Background())
			}
			rec := f.get(t, id)
			if want := "oauth refresh failed: Error: " + msg; rec.DisabledCause != want {
				t.Errorf("disabled cause = %q, want %q", rec.DisabledCause, want)
			}
			if !strings.Contains(f.logs.String(), `level=WARN msg="auth-broker refresh failed definitively" id=`+itoa(id)+` error="`+msg+`"`) {
				t.Errorf("missing warn log:\n%s", f.logs.String())
			}
			if got := f.resultList(); len(got) != 1 || got[0] != "openai-codex:definitive" {
				t.Errorf("results = %v", got)
			}
			if strings.Contains(f.logs.String(), "r1") {
				t.Errorf("log leaks the refresh token:\n%s", f.logs.String())
			}
		})
	}
}

func TestDefinitiveFailureKeepsARowRotatedMeanwhile(t *testing.T) {
	f := newFixture(t)
	id := f.add(t, "openai-codex", "c@x", "r1", t0.UnixMilli())
	f.fp.setReply(func(w http.ResponseWriter, r *http.Request, refresh string) {
		// Another process rotates the row while our request is in flight.
		rotated := f.get(t, id).Credential
		rotated.Refresh, rotated.Access = "other", "other-acc"
		if _, err := f.store.UpdateCredential(context.Background(), id, rotated); err != nil {
			t.Error(err)
		}
		status(400, `{"error":"invalid_grant"}`)(w, r, refresh)
	})
	if _, err := f.r.RefreshNow(context.Background(), id); err == nil {
		t.Fatal("RefreshNow succeeded")
	}
	if rec := f.get(t, id); !rec.Active() || rec.Credential.Refresh != "other" {
		t.Errorf("row rotated by a peer was disabled: cause=%q", rec.DisabledCause)
	}
}

func TestTransientFailureLeavesTheRowUntouched(t *testing.T) {
	replies := map[string]func(http.ResponseWriter, *http.Request, string){
		"502 html": func(w http.ResponseWriter, _ *http.Request, _ string) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		},
		"429": status(429, `{"error":"rate_limited"}`),
	}
	for name, reply := range replies {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			id := f.add(t, "anthropic", "t@x", "r1", t0.UnixMilli())
			before := f.get(t, id)
			f.fp.setReply(reply)
			_, err := f.r.RefreshNow(context.Background(), id)
			if err == nil || !strings.HasPrefix(err.Error(), "Anthropic token refresh failed: ") {
				t.Fatalf("err = %v", err)
			}
			after := f.get(t, id)
			if !after.Active() || !after.Credential.Equal(before.Credential) || after.UpdatedAt != before.UpdatedAt {
				t.Errorf("row changed: %+v", after)
			}
			if !strings.Contains(f.logs.String(), `level=DEBUG msg="auth-broker refresh failed (transient)"`) {
				t.Errorf("missing debug log:\n%s", f.logs.String())
			}
			if got := f.resultList(); len(got) != 1 || got[0] != "anthropic:transient" {
				t.Errorf("results = %v", got)
			}
			if f.changes.Load() != 0 {
				t.Error("OnChange called for a transient failure")
			}
		})
	}
}

func TestUpstreamTimeout(t *testing.T) {
	f := newFixture(t)
	f.r.Timeout = 50 * time.Millisecond
	id := f.add(t, "anthropic", "slow@x", "r1", t0.UnixMilli())
	release := make(chan struct{})
	defer close(release)
	f.fp.setReply(blockUntil(release, rotate(3600)))
	_, err := f.r.RefreshNow(context.Background(), id)
	if err == nil || err.Error() != "OAuth token refresh timed out for provider: anthropic" {
		t.Fatalf("err = %v", err)
	}
	if rec := f.get(t, id); !rec.Active() || rec.Credential.Refresh != "r1" {
		t.Errorf("row changed after a timeout")
	}
}

func TestCallerAbortDoesNotCancelTheSharedAttempt(t *testing.T) {
	f := newFixture(t)
	id := f.add(t, "anthropic", "abort@x", "r1", t0.UnixMilli())
	release := make(chan struct{})
	f.fp.setReply(blockUntil(release, rotate(3600)))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := f.r.RefreshNow(ctx, id)
		errc <- err
	}()
	f.fp.arrivals(t, 1)
	cancel()
	err := <-errc
	if err == nil || err.Error() != "OAuth token refresh aborted by caller" {
		t.Fatalf("err = %v", err)
	}
	close(release)
	f.r.Wait()
	if rec := f.get(t, id); rec.Credential.Refresh != "r1'" {
		t.Errorf("shared attempt was not persisted: refresh=%q", rec.Credential.Refresh)
	}
}

func TestRefreshNowRejects(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	disabled := f.add(t, "anthropic", "gone@x", "r1", t0.UnixMilli())
	if err := f.store.Disable(ctx, disabled, ""); err != nil {
		t.Fatal(err)
	}
	recs, err := f.store.ReplaceAll(ctx, "openrouter", []vault.Credential{{Type: vault.TypeAPIKey, Key: "sk-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	key := recs[0].ID
	tests := []struct {
		name string
		id   int64
		code string
		msg  string
	}{
		{"unknown id", 9999, vault.ENOTFOUND, "No credential with id=9999"},
		{"disabled row", disabled, vault.ENOTFOUND, "No credential with id=" + itoa(disabled)},
		{"api key", key, vault.EINVALID, "Credential " + itoa(key) + " is not OAuth (provider=openrouter, type=api_key): API-key credentials have nothing to refresh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.r.RefreshNow(ctx, tt.id)
			if vault.ErrorCode(err) != tt.code || vault.ErrorMessage(err) != tt.msg {
				t.Fatalf("err = %v (code %q), want %s %q", err, vault.ErrorCode(err), tt.code, tt.msg)
			}
		})
	}
	if f.fp.hits.Load() != 0 {
		t.Errorf("token endpoint called %d times", f.fp.hits.Load())
	}
}

func TestSweepSkipsWhileAnotherRuns(t *testing.T) {
	f := newFixture(t)
	f.add(t, "anthropic", "s@x", "r1", t0.UnixMilli())
	release := make(chan struct{})
	f.fp.setReply(blockUntil(release, rotate(3600)))
	done := make(chan struct{})
	go func() { f.r.Sweep(context.Background()); close(done) }()
	f.fp.arrivals(t, 1)
	f.r.Sweep(context.Background()) // returns at once: a sweep is running
	close(release)
	<-done
	if f.fp.hits.Load() != 1 {
		t.Errorf("token requests = %d, want 1", f.fp.hits.Load())
	}
}

func TestRunSweepsUntilCancelledAndWaitsForInFlight(t *testing.T) {
	f := newFixture(t)
	f.r.Interval = 10 * time.Millisecond
	// expires_in 1 s minus the 5 min skew: the credential stays due, so every
	// sweep refreshes it.
	f.fp.setReply(rotate(1))
	id := f.add(t, "anthropic", "run@x", "r", t0.UnixMilli())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- f.r.Run(ctx) }()
	f.fp.arrivals(t, 3)
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	hits := f.fp.hits.Load()
	f.r.mu.Lock()
	inflight := len(f.r.flights)
	f.r.mu.Unlock()
	if inflight != 0 {
		t.Errorf("%d refreshes still in flight after Run returned", inflight)
	}
	// Every answered rotation was persisted: the stored token is the last one sent back.
	if rec := f.get(t, id); rec.Credential.Refresh != "r"+strings.Repeat("'", int(hits)) {
		t.Errorf("stored refresh %q after %d rotations", rec.Credential.Refresh, hits)
	}
	// Only a sweep or a RefreshNow starts a refresh: with no sweep running
	// and the ticker stopped, nothing refreshes after Run returned.
	if f.r.sweeping.Load() {
		t.Errorf("a sweep is still running after Run returned")
	}
}

func TestRunRequiresStoreAndOAuth(t *testing.T) {
	if err := (&Refresher{}).Run(context.Background()); err == nil {
		t.Fatal("Run without Store succeeded")
	}
}

func TestScheduleDefaults(t *testing.T) {
	s := (&Refresher{}).Schedule()
	if !s.Enabled || s.IntervalMs != 60000 || s.SkewMs != 300000 {
		t.Fatalf("schedule = %+v", s)
	}
}

func TestRefreshNowJoiningASkippedSweepFlightStillRefreshes(t *testing.T) {
	f := newFixture(t)
	id := f.add(t, "anthropic", "skip@x", "r1", t0.Add(time.Hour).UnixMilli())
	// A sweep flight for id is in progress (planted, so its outcome is ours to choose).
	sweepFlight := &flight{done: make(chan struct{})}
	joined := f.joined(id, 1)
	f.r.mu.Lock()
	f.r.flights = map[int64]*flight{id: sweepFlight}
	f.r.mu.Unlock()
	type result struct {
		rec vault.Record
		err error
	}
	resc := make(chan result, 1)
	go func() {
		rec, err := f.r.RefreshNow(context.Background(), id)
		resc <- result{rec, err}
	}()
	receive(t, joined, "RefreshNow to join the sweep flight")
	// The sweep finds the row no longer due and skips it.
	f.r.mu.Lock()
	delete(f.r.flights, id)
	sweepFlight.rec, sweepFlight.skipped = f.get(t, id), true
	f.r.mu.Unlock()
	close(sweepFlight.done)

	res := <-resc
	if res.err != nil || res.rec.Credential.Refresh != "r1'" || f.fp.hits.Load() != 1 {
		t.Fatalf("rec refresh=%q err=%v hits=%d", res.rec.Credential.Refresh, res.err, f.fp.hits.Load())
	}
}
