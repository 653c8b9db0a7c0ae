package remote_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault/api"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/remote"
)

// olderBroker answers POST /v1/usage/observed as brokers of other
// versions do: reply(n, body) gives the status of post n.
type olderBroker struct {
	mu     sync.Mutex
	bodies []map[string]any
	reply  func(n int, body map[string]any) int
}

func (o *olderBroker) start(t *testing.T) *brokerclient.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		o.mu.Lock()
		n := len(o.bodies)
		o.bodies = append(o.bodies, body)
		o.mu.Unlock()
		st := o.reply(n, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		if st == 200 {
			_, _ = io.WriteString(w, `{"ok":true}`)
		} else {
			_, _ = io.WriteString(w, `{"error":"app must be removed"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return brokerclient.New(srv.URL, "tok", nil)
}

func (o *olderBroker) posts() []map[string]any {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]map[string]any(nil), o.bodies...)
}

func obs(model string) remote.Observation {
	return remote.Observation{InstallID: "inst", Hostname: "h", App: "omp", Provider: "anthropic", Model: model, InputTokens: 1}
}

// The reporter's retry rule, each branch: only a 404 or 501 turns observed
// usage off; a 400 is retried once without app; pending keys stay bounded.
func TestReporterRetryRule(t *testing.T) {
	ctx := context.Background()
	t.Run("400 resends without app, then omits it", func(t *testing.T) {
		o := &olderBroker{reply: func(_ int, b map[string]any) int {
			if _, ok := b["app"]; ok {
				return 400
			}
			return 200
		}}
		r := &remote.Reporter{Client: o.start(t), Every: time.Hour}
		r.Record(obs("a"))
		r.Flush(ctx)
		r.Record(obs("b"))
		r.Flush(ctx)
		p := o.posts()
		if len(p) != 3 {
			t.Fatalf("%d posts, want 3 (refused, resent without app, next without app)", len(p))
		}
		_, app0 := p[0]["app"]
		_, app1 := p[1]["app"]
		_, app2 := p[2]["app"]
		if !app0 || app1 || app2 {
			t.Errorf("app keys sent %v %v %v, want true false false", app0, app1, app2)
		}
	})
	t.Run("second 400 drops the batch but keeps reporting", func(t *testing.T) {
		o := &olderBroker{reply: func(n int, _ map[string]any) int {
			if n < 2 {
				return 400
			}
			return 200
		}}
		r := &remote.Reporter{Client: o.start(t), Every: time.Hour}
		r.Record(obs("a"))
		r.Flush(ctx)
		r.Flush(ctx) // nothing pending: the batch was dropped
		r.Record(obs("b"))
		r.Flush(ctx)
		p := o.posts()
		if len(p) != 3 {
			t.Fatalf("%d posts, want 3 (refused, refused without app, the next batch)", len(p))
		}
		if m := p[2]["entries"].([]any)[0].(map[string]any)["model"]; m != "b" {
			t.Errorf("last post carries %v, want only the new entry b", m)
		}
	})
	for _, st := range []int{404, 501} {
		t.Run(http.StatusText(st)+" turns reporting off", func(t *testing.T) {
			o := &olderBroker{reply: func(int, map[string]any) int { return st }}
			r := &remote.Reporter{Client: o.start(t), Every: time.Hour}
			r.Record(obs("a"))
			r.Flush(ctx)
			r.Record(obs("b"))
			r.Flush(ctx)
			if n := len(o.posts()); n != 1 {
				t.Errorf("%d posts, want 1 (off after the first)", n)
			}
		})
	}
	t.Run("500 merges back for the next flush", func(t *testing.T) {
		o := &olderBroker{reply: func(n int, _ map[string]any) int {
			if n == 0 {
				return 500
			}
			return 200
		}}
		r := &remote.Reporter{Client: o.start(t), Every: time.Hour}
		r.Record(obs("a"))
		r.Flush(ctx)
		r.Record(obs("a"))
		r.Flush(ctx)
		p := o.posts()
		if len(p) != 2 {
			t.Fatalf("%d posts, want 2", len(p))
		}
		e := p[1]["entries"].([]any)[0].(map[string]any)
		if e["requests"].(float64) != 2 || e["inputTokens"].(float64) != 2 {
			t.Errorf("retried entry %v, want both records merged (2 requests, 2 tokens)", e)
		}
	})
	t.Run("pending keys capped, oldest dropped", func(t *testing.T) {
		o := &olderBroker{reply: func(int, map[string]any) int { return 200 }}
		r := &remote.Reporter{Client: o.start(t), Every: time.Hour}
		for i := range remote.MaxObservedPending + 5 {
			r.Record(obs("m" + strings.Repeat("x", i%7) + string(rune('A'+i%26)) + time.Duration(i).String()))
		}
		r.Flush(ctx)
		p := o.posts()
		if len(p) != 1 || len(p[0]["entries"].([]any)) != remote.MaxObservedPending {
			t.Fatalf("posted %d reports, first with %d entries; want 1 with %d", len(p), len(p[0]["entries"].([]any)), remote.MaxObservedPending)
		}
	})
	t.Run("the timer flushes one report per install and app", func(t *testing.T) {
		o := &olderBroker{reply: func(int, map[string]any) int { return 200 }}
		r := &remote.Reporter{Client: o.start(t), Every: 30 * time.Millisecond}
		r.Record(obs("a"))
		x := obs("a")
		x.App = "other"
		r.Record(x)
		deadline := time.Now().Add(10 * time.Second) // a hang guard
		for len(o.posts()) < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := len(o.posts()); n != 2 {
			t.Fatalf("%d posts after the timer, want 2 (one per app)", n)
		}
		r.Close(ctx)
	})
}

// Two accounts' burn on one model stays two entries; credentialId goes out
// only once the broker announced it takes one (a reference broker never
// does), so reference brokers always get the reference entry shape.
func TestReporterNamesCredentialsOnlyWhenAnnounced(t *testing.T) {
	ctx := context.Background()
	var announce atomic.Bool
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/snapshot" {
			if announce.Load() && strings.Contains(r.Header.Get(api.CapabilitiesHeader), api.ObservedCredentialIDs) {
				w.Header().Set(api.CapabilitiesHeader, api.ObservedCredentialIDs)
			}
			_, _ = io.WriteString(w, `{"generation":1,"generatedAt":1,"serverNowMs":2,"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":1},"credentials":[]}`)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	creds := func() []any {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		var out []any
		for _, e := range bodies[len(bodies)-1]["entries"].([]any) {
			out = append(out, e.(map[string]any)["credentialId"])
		}
		return out
	}
	for _, announced := range []bool{false, true} {
		announce.Store(announced)
		c := brokerclient.New(srv.URL, "tok", nil)
		if _, err := c.Snapshot(ctx, nil, 0); err != nil {
			t.Fatal(err)
		}
		r := &remote.Reporter{Client: c, Every: time.Hour}
		for _, id := range []int64{3, 4, 3} {
			o := obs("m")
			o.CredentialID = id
			r.Record(o)
		}
		r.Flush(ctx)
		got := creds()
		if len(got) != 2 {
			t.Fatalf("announced %v: %d entries, want 2 (one per account)", announced, len(got))
		}
		for _, id := range got {
			if (id != nil) != announced {
				t.Fatalf("announced %v: credentialId values %v", announced, got)
			}
		}
	}
}
