package broker_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// Secrets uploaded by the lifecycle test (the fake issues the others).
const (
	accessA0  = "sk-ant-oat01-e2e-upload-access-A-" + "aaaaaaaaaaaaaaaaaaaa"
	refreshA0 = "sk-ant-ort01-e2e-upload-refresh-A-" + "rrrrrrrrrrrrrrrrrrrr"
	accessB   = "sk-ant-oat01-e2e-upload-access-B-" + "bbbbbbbbbbbbbbbbbbbb"
	refreshB  = "sk-ant-ort01-e2e-upload-refresh-B-dead-" + "dddddddddddddddd"
	accessC   = "sk-ant-oat01-e2e-upload-access-C-" + "cccccccccccccccccccc"
	refreshC  = "sk-ant-ort01-e2e-upload-refresh-C-" + "eeeeeeeeeeeeeeeeeeee"
	apiKey    = "sk-e2e-openai-api-key-" + "kkkkkkkkkkkkkkkkkkkkkkkk"

	// The disable cause of a definitive refresh failure, as 18.1.21 stores it:
	// "oauth refresh failed: " + the stringified error.
	deadCause = "oauth refresh failed: Error: Anthropic token refresh failed: 400 invalid_grant: Refresh token not found or invalid"
)

func entryByID(entries []vault.Entry, id int64) (vault.Entry, bool) {
	for _, e := range entries {
		if e.ID == id {
			return e, true
		}
	}
	return vault.Entry{}, false
}

func snapshotOf(t *testing.T, ctx context.Context, c *brokerclient.Client) *vault.Snapshot {
	t.Helper()
	res, err := c.Snapshot(ctx, nil, 0)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if res.Status != http.StatusOK || res.Snapshot == nil || res.Generation != res.Snapshot.Generation {
		t.Fatalf("Snapshot = %+v", res)
	}
	return res.Snapshot
}

// refreshTokens are the secrets that must never leave the broker.
func (h *harness) refreshTokens() []string {
	out := []string{refreshA0, refreshB, refreshC}
	for _, s := range h.up.secrets() {
		if strings.Contains(s, "refresh") {
			out = append(out, s)
		}
	}
	return out
}

func (h *harness) allSecrets() []string {
	return append([]string{accessA0, refreshA0, accessB, refreshB, accessC, refreshC, apiKey}, h.up.secrets()...)
}

// TestE2ECredentialLifecycle walks one credential through the broker:
// upload, stream delivery, background rotation, forced and concurrent
// refreshes, a definitive failure, metrics, a restart and the at-rest
// check. The steps share state and run in order.
func TestE2ECredentialLifecycle(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}
	stream := b.openStream(t)

	var (
		idA, idB   int64
		firstEntry api.Event
		uploadedAt time.Time
		accessNow  string // A's current access token
		refreshed  int    // POST /v1/credential/{id}/refresh answered 200
	)

	step("stream delivers the snapshot then the uploaded entry", func(t *testing.T) {
		ev := stream.next(t, waitLong)
		if ev.Kind != api.KindSnapshot || ev.Snapshot == nil || len(ev.Snapshot.Credentials) != 0 {
			t.Fatalf("first frame = %+v, want an empty snapshot", ev)
		}
		if r := ev.Refresher; !r.Enabled || r.IntervalMs != testRefreshInterval.Milliseconds() || r.SkewMs != 300_000 {
			t.Errorf("refresher schedule = %+v", r)
		}
		g0 := ev.Generation

		uploadedAt = time.Now()
		entries, err := b.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeOAuth, Access: accessA0, Refresh: refreshA0,
			Expires: uploadedAt.Add(time.Minute).UnixMilli(), Email: "Alice@Example.com"}) // due: inside the 5 min skew
		if err != nil {
			t.Fatalf("Upload: %v", err)
		}
		if len(entries) != 1 || entries[0].Credential.Refresh != vault.RemoteRefreshSentinel || entries[0].IdentityKey != "email:alice@example.com" {
			t.Fatalf("Upload entries = %+v", entries)
		}
		idA = entries[0].ID

		firstEntry = stream.next(t, waitLong)
		if firstEntry.Kind != api.KindEntry || firstEntry.Entry == nil || firstEntry.Entry.ID != idA {
			t.Fatalf("frame after the snapshot = %+v, want an entry for id %d", firstEntry, idA)
		}
		if firstEntry.Generation <= g0 {
			t.Errorf("entry generation %d, snapshot generation %d", firstEntry.Generation, g0)
		}
		if firstEntry.Entry.Credential.Refresh != vault.RemoteRefreshSentinel {
			t.Errorf("streamed refresh = %q, want the sentinel", firstEntry.Entry.Credential.Refresh)
		}

		r := b.do(t, http.MethodGet, "/v1/snapshot", b.bearer(), nil)
		if r.status != http.StatusOK || !strings.Contains(r.body, `"refresh":"__remote__"`) {
			t.Fatalf("GET /v1/snapshot = %d %s", r.status, r.body)
		}
		assertNoSecrets(t, "snapshot body", r.body, h.refreshTokens())
	})

	step("background sweep rotates the token exactly once", func(t *testing.T) {
		ev := firstEntry // the upload and the rotation may share one frame
		if ev.Entry.Credential.Access == accessA0 {
			ev = stream.waitFor(t, waitLong, "with A's rotated token", func(e api.Event) bool {
				return e.Kind == api.KindEntry && e.Entry.ID == idA && e.Entry.Credential.Access != accessA0
			})
		}
		calls := h.up.tokenCalls()
		if len(calls) != 1 || calls[0].Refresh != refreshA0 || !calls[0].OK {
			t.Fatalf("token calls = %+v, want one with the uploaded refresh token", calls)
		}
		issued := h.up.secrets()
		accessNow = issued[0]
		if got := ev.Entry.Credential.Access; got != accessNow {
			t.Errorf("streamed access = %.24s…, want the issued one", got)
		}
		lo := uploadedAt.Add(anthropicTokenTTL*time.Second - 5*time.Minute).UnixMilli()
		hi := time.Now().Add(anthropicTokenTTL*time.Second - 5*time.Minute).UnixMilli()
		if exp := ev.Entry.Credential.Expires; exp < lo || exp > hi {
			t.Errorf("new expiry %d not in [%d, %d] (expires_in − 5 min)", exp, lo, hi)
		}
		snap := snapshotOf(t, ctx, b.client)
		e, ok := entryByID(snap.Credentials, idA)
		if !ok || e.Credential.Access != accessNow || e.Credential.Expires != ev.Entry.Credential.Expires {
			t.Fatalf("snapshot entry = %+v, want the rotated token and expiry", e)
		}
		if e.RotatesInMs == nil || *e.RotatesInMs <= 0 {
			t.Errorf("rotatesInMs = %v, want a positive estimate for a fresh token", e.RotatesInMs)
		}
		if snap.Generation < ev.Generation {
			t.Errorf("snapshot generation %d < stream generation %d", snap.Generation, ev.Generation)
		}

		// The rotated refresh token was stored: a forced refresh sends it.
		entry := forceRefresh(t, ctx, h, b, idA, &refreshed)
		calls = h.up.tokenCalls()
		if len(calls) != 2 || calls[1].Refresh != issued[1] {
			t.Fatalf("second token call = %+v, want the rotated refresh token", calls)
		}
		accessNow = h.up.secrets()[2]
		if entry.Credential.Access != accessNow || entry.Credential.Refresh != vault.RemoteRefreshSentinel || entry.RotatesInMs != nil {
			t.Errorf("Refresh entry = %+v", entry)
		}
		if n := h.up.seen(refreshA0); n != 1 {
			t.Errorf("uploaded refresh token sent %d times, want 1", n)
		}
	})

	step("20 concurrent refresh callers share one token request", func(t *testing.T) {
		drain(h.up.arrived)
		release := h.up.holdTokens()
		defer release()
		before := len(h.up.tokenCalls())
		const n = 20
		var wrote, done sync.WaitGroup
		wrote.Add(n)
		done.Add(n)
		entries := make([]vault.Entry, n)
		errs := make([]error, n)
		for i := range n {
			go func() {
				defer done.Done()
				var once sync.Once
				tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
					WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(wrote.Done) },
				})
				entries[i], errs[i] = b.client.Refresh(tctx, idA)
			}()
		}
		waitTimeout(t, &wrote, waitLong, "20 refresh requests to be sent")
		select {
		case <-h.up.arrived:
		case <-time.After(waitLong):
			t.Fatal("no token request reached the fake")
		}
		// The token request is held: give every request already sent time
		// to reach the handler and join the in-flight refresh. This sleep is
		// deliberate: joining the single flight happens inside the
		// refresher and has no observable signal (a hook there would be
		// test-only code); WroteRequest above already bounds the wait to
		// the server-side hop. If it were too short the test would fail with
		// 2 token requests, never pass wrongly.
		time.Sleep(250 * time.Millisecond)
		release()
		waitTimeout(t, &done, 2*waitLong, "20 refresh calls to return")

		calls := h.up.tokenCalls()
		if got := len(calls) - before; got != 1 {
			t.Fatalf("%d token requests for %d concurrent refreshes, want 1", got, n)
		}
		accessNow = h.up.secrets()[len(h.up.secrets())-2]
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("caller %d: %v", i, errs[i])
			}
			refreshed++
			if entries[i].ID != idA || entries[i].Credential.Access != accessNow {
				t.Errorf("caller %d got %.24s…, want the one shared result", i, entries[i].Credential.Access)
			}
		}
	})

	step("definitive failure disables the credential and the stream removes it", func(t *testing.T) {
		h.up.kill(refreshB)
		drain(h.up.arrived)
		release := h.up.holdTokens() // keep the failure until the stream showed B
		defer release()
		entries, err := b.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeOAuth, Access: accessB, Refresh: refreshB,
			Expires: time.Now().Add(30 * time.Second).UnixMilli(), Email: "bob@example.com"})
		if err != nil {
			t.Fatalf("Upload: %v", err)
		}
		if len(entries) != 2 {
			t.Fatalf("Upload returned %d entries, want A and B", len(entries))
		}
		for _, e := range entries {
			if e.ID != idA {
				idB = e.ID
			}
		}
		stream.waitFor(t, waitLong, "entry for B", func(e api.Event) bool {
			return e.Kind == api.KindEntry && e.Entry.ID == idB
		})
		select {
		case <-h.up.arrived:
		case <-time.After(waitLong):
			t.Fatal("the sweep sent no token request for B")
		}
		release()
		ev := stream.waitFor(t, waitLong, "removed for B", func(e api.Event) bool {
			return e.Kind == api.KindRemoved && e.ID == idB
		})
		if ev.Entry != nil {
			t.Errorf("removed frame carries an entry: %+v", ev.Entry)
		}
		rec, err := b.m.Store.Get(ctx, idB)
		if err != nil {
			t.Fatal(err)
		}
		if rec.DisabledCause != deadCause {
			t.Errorf("disabled cause = %q, want %q", rec.DisabledCause, deadCause)
		}
		snap := snapshotOf(t, ctx, b.client)
		if _, ok := entryByID(snap.Credentials, idB); ok || len(snap.Credentials) != 1 {
			t.Errorf("snapshot still lists B: %+v", snap.Credentials)
		}
		// A caller may still join the failing sweep attempt for a moment
		// (single flight): it then shares its 500; after that B is unknown.
		eventually(t, waitLong, "a 404 for the disabled row", func() bool {
			_, err := b.client.Refresh(ctx, idB)
			var be *brokerclient.Error
			if !errors.As(err, &be) {
				t.Fatalf("Refresh of the disabled row: %v", err)
			}
			switch {
			case be.Status == http.StatusNotFound && be.BrokerMessage() == "No credential with id="+strconv.FormatInt(idB, 10):
				return true
			case be.Status == http.StatusInternalServerError && strings.Contains(be.BrokerMessage(), "invalid_grant"):
				return false
			}
			t.Fatalf("Refresh of the disabled row: %v (%s)", err, be.Body)
			return false
		})
		awaitFullSweep(t, b, waitLong) // a later sweep must not retry B
		if n := h.up.seen(refreshB); n != 1 {
			t.Errorf("dead refresh token sent %d times, want 1", n)
		}
		if !strings.Contains(h.logs.String(), "auth-broker refresh failed definitively") {
			t.Error("no definitive-failure warning in the logs")
		}
		// Every credential-disabled event is a warning with
		// the provider and the stored cause.
		if want := `level=WARN msg="auth-broker credential disabled" provider=anthropic disabledCause="oauth refresh failed: Error:`; !strings.Contains(h.logs.String(), want) {
			t.Errorf("no %q line in the logs", want)
		}
	})

	step("metrics expose generation, refresh outcomes and subscribers", func(t *testing.T) {
		gen := snapshotOf(t, ctx, b.client).Generation
		body, samples := b.scrape(t)
		if v, ok := find(samples, "omp_broker_vault_generation", nil); !ok || int64(v) != gen {
			t.Errorf("omp_broker_vault_generation = %v (present %v), want %d", v, ok, gen)
		}
		for outcome, want := range map[string]float64{"ok": 3, "definitive": 1} {
			if v, _ := find(samples, "omp_broker_refresh_total", map[string]string{"provider": "anthropic", "outcome": outcome}); v != want {
				t.Errorf("omp_broker_refresh_total{outcome=%q} = %v, want %v", outcome, v, want)
			}
		}
		if v, ok := find(samples, "omp_broker_refresh_total", map[string]string{"outcome": "transient"}); ok && v != 0 {
			t.Errorf("transient refresh outcomes = %v, want none", v)
		}
		if v, ok := find(samples, "omp_broker_stream_subscribers", nil); !ok || v != 1 {
			t.Errorf("omp_broker_stream_subscribers = %v, want 1", v)
		}
		exp, ok := find(samples, "omp_broker_credential_expiry_seconds", map[string]string{"id": strconv.FormatInt(idA, 10), "provider": "anthropic"})
		if ttl := float64(anthropicTokenTTL - 300); !ok || exp > ttl || exp < ttl-60 {
			t.Errorf("expiry of A = %v s (present %v), want about %v", exp, ok, ttl)
		}
		route := map[string]string{"route": "/v1/credential/{id:[0-9]+}/refresh", "method": "POST"}
		if v, _ := find(samples, "omp_broker_http_requests_total", with(route, "status", "200")); v != float64(refreshed) {
			t.Errorf("refresh requests with 200 = %v, want %d", v, refreshed)
		}
		if v, _ := find(samples, "omp_broker_http_requests_total", with(route, "status", "404")); v != 1 {
			t.Errorf("refresh requests with 404 = %v, want 1", v)
		}
		assertNoSecrets(t, "metrics", body, h.allSecrets())
		assertNoSecrets(t, "metrics", body, []string{"alice@example.com", "bob@example.com", "Alice@Example.com"})

		stream.close()
		eventually(t, waitLong, "the subscriber gauge to drop to 0", func() bool {
			_, samples := b.scrape(t)
			v, ok := find(samples, "omp_broker_stream_subscribers", nil)
			return ok && v == 0
		})
	})

	step("restart keeps the generation monotonic and the credentials", func(t *testing.T) {
		if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: apiKey}); err != nil {
			t.Fatalf("Upload api key: %v", err)
		}
		before := snapshotOf(t, ctx, b.client)
		// While running, the WAL holds the latest writes.
		if names := assertNoSecretsOnDisk(t, h.dir, h.allSecrets()); !slices.Contains(names, "vault.db-wal") {
			t.Errorf("no vault.db-wal while the broker runs (scanned %v)", names)
		}
		b.stop()

		b2 := h.start(t)
		after := snapshotOf(t, ctx, b2.client)
		if after.Generation < before.Generation {
			t.Errorf("generation after restart %d < %d before", after.Generation, before.Generation)
		}
		if len(after.Credentials) != 2 {
			t.Fatalf("credentials after restart = %+v, want A and the API key", after.Credentials)
		}
		if e, ok := entryByID(after.Credentials, idA); !ok || e.Credential.Access != accessNow || e.IdentityKey != "email:alice@example.com" {
			t.Errorf("A after restart = %+v", e)
		}
		var key vault.Entry
		for _, e := range after.Credentials {
			if e.Provider == "openai" {
				key = e
			}
		}
		if key.Credential.Type != vault.TypeAPIKey || key.Credential.Key != apiKey || key.RotatesInMs != nil {
			t.Errorf("API key entry after restart = %+v (keys travel in clear)", key)
		}

		if _, err := b2.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeOAuth, Access: accessC, Refresh: refreshC,
			Expires: time.Now().Add(time.Hour).UnixMilli(), Email: "erin@example.com"}); err != nil {
			t.Fatalf("Upload: %v", err)
		}
		if g := snapshotOf(t, ctx, b2.client).Generation; g <= after.Generation {
			t.Errorf("generation after a write %d, want > %d", g, after.Generation)
		}

		// The last rotated refresh token survived the restart.
		last := h.up.secrets()
		if _, err := b2.client.Refresh(ctx, idA); err != nil {
			t.Fatalf("Refresh after restart: %v", err)
		}
		calls := h.up.tokenCalls()
		if got := calls[len(calls)-1].Refresh; got != last[len(last)-1] {
			t.Errorf("refresh after restart sent %.24s…, want the last rotated token", got)
		}
		b2.stop()
	})

	step("no token or key at rest, in logs or reused upstream", func(t *testing.T) {
		assertNoSecretsOnDisk(t, h.dir, h.allSecrets())
		assertNoSecrets(t, "broker logs", h.logs.String(), h.allSecrets())
		seen := map[string]int{}
		for _, c := range h.up.tokenCalls() {
			if seen[c.Refresh]++; seen[c.Refresh] > 1 {
				t.Errorf("refresh token %.24s… sent %d times (rotating tokens are single-use)", c.Refresh, seen[c.Refresh])
			}
		}
	})
}

// forceRefresh calls POST /v1/credential/{id}/refresh until it caused a new
// token request. A call that arrives while a sweep attempt for id is still
// being wound up joins it (single flight) and returns its result without a
// request of its own; it is retried.
func forceRefresh(t *testing.T, ctx context.Context, h *harness, b *runningBroker, id int64, refreshed *int) vault.Entry {
	t.Helper()
	before := len(h.up.tokenCalls())
	// A retry needs the sweep attempt to be wound up; re-check every 10 ms
	// (there is no event for "the single flight is over").
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range 20 {
		e, err := b.client.Refresh(ctx, id)
		if err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		*refreshed++
		if len(h.up.tokenCalls()) > before {
			return e
		}
		<-tick.C
	}
	t.Fatalf("no forced refresh of %d reached the token endpoint", id)
	return vault.Entry{}
}

func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for kk, vv := range m {
		out[kk] = vv
	}
	return out
}

// drain empties a signal channel.
func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
