package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/client"
)

func TestClientRoundTrip(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h, err := e.client.Healthz(ctx)
	if err != nil || !h.OK || h.Version != "9.9.9-test" {
		t.Fatalf("Healthz = %+v %v", h, err)
	}
	entries, err := e.client.Upload(ctx, "anthropic", oauthCred("a@b.c", e.clk.Now().UnixMilli()+3_600_000))
	if err != nil || len(entries) != 1 || entries[0].Credential.Refresh != vault.RemoteRefreshSentinel || entries[0].IdentityKey != "email:a@b.c" || entries[0].RotatesInMs != nil {
		t.Fatalf("Upload = %+v %v", entries, err)
	}
	id := entries[0].ID
	res, err := e.client.Snapshot(ctx, nil, 0)
	if err != nil || res.Status != 200 || len(res.Snapshot.Credentials) != 1 || res.Snapshot.Credentials[0].RotatesInMs == nil || res.Generation != res.Snapshot.Generation {
		t.Fatalf("Snapshot = %+v %v", res, err)
	}
	gen := res.Generation
	res, err = e.client.Snapshot(ctx, &gen, 30*time.Millisecond)
	if err != nil || res.Status != 304 || res.Snapshot != nil || res.Generation != gen {
		t.Fatalf("long-poll unchanged = %+v %v", res, err)
	}
	other := int64(5)
	if res, err = e.client.Snapshot(ctx, &other, time.Second); err != nil || res.Status != 200 {
		t.Fatalf("long-poll other generation = %+v %v", res, err)
	}
	entry, err := e.client.Refresh(ctx, id)
	if err != nil || entry.Credential.Access != "refreshed-access" || entry.Credential.Refresh != vault.RemoteRefreshSentinel {
		t.Fatalf("Refresh = %+v %v", entry, err)
	}
	f := 0.5
	e.usage.reports = []vault.UsageReport{{Provider: "anthropic", FetchedAt: 1, Limits: []vault.UsageLimit{{ID: "x", Amount: vault.UsageAmount{UsedFraction: &f, Unit: "percent"}}}}}
	u, err := e.client.Usage(ctx)
	if err != nil || len(u.Reports) != 1 || *u.Reports[0].Limits[0].Amount.UsedFraction != 0.5 || u.GeneratedAt != e.clk.Now().UnixMilli() {
		t.Fatalf("Usage = %+v %v", u, err)
	}
	if err := e.client.Disable(ctx, id, "by test"); err != nil {
		t.Fatal(err)
	}
	// Errors are rebuilt from the response.
	err = e.client.Disable(ctx, id, "")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 404 || ce.Error() != "Auth broker request failed: 404 Not Found" ||
		ce.BrokerMessage() != "No credential with id="+itoa(id) || vault.ErrorCode(err) != vault.ENOTFOUND || vault.ErrorMessage(err) != "No credential with id="+itoa(id) {
		t.Fatalf("Disable miss error = %#v", err)
	}
	_, err = e.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeOAuth, Refresh: vault.RemoteRefreshSentinel, Access: "a"})
	if !errors.As(err, &ce) || ce.Status != 400 || vault.ErrorCode(err) != vault.EINVALID || !strings.Contains(ce.BrokerMessage(), "remote sentinel") {
		t.Fatalf("Upload sentinel error = %v", err)
	}
	e.usage.err = vault.Errorf(vault.EUPSTREAM, "boom")
	if _, err = e.client.Usage(ctx); vault.ErrorCode(err) != vault.EUPSTREAM || err.Error() != "Auth broker request failed: 502 Bad Gateway" {
		t.Fatalf("Usage error = %v", err)
	}
	bad := client.New(e.ts.URL, "wrong", e.ts.Client())
	if _, err = bad.Snapshot(ctx, nil, 0); vault.ErrorCode(err) != vault.EUNAUTHORIZED || err.Error() != "Auth broker request failed: 401 Unauthorized" {
		t.Fatalf("wrong token error = %v", err)
	}
	if _, err := bad.Healthz(ctx); err != nil {
		t.Fatalf("healthz needs no token: %v", err)
	}
}

func TestClientLongPollWakesOnChange(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	res, err := e.client.Snapshot(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	parked := e.parkedLongPolls()
	type result struct {
		got client.SnapshotResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := e.client.Snapshot(ctx, &res.Generation, 20*time.Second)
		done <- result{got, err}
	}()
	e.awaitParked(t, parked) // the change comes while the long-poll waits
	e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "k"})
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the long-poll did not return within 10 s of the change")
	}
	got, err := r.got, r.err
	if err != nil || got.Status != 200 || got.Generation <= res.Generation || len(got.Snapshot.Credentials) != 1 {
		t.Fatalf("= %+v %v", got, err)
	}
	if !strings.Contains(e.logs.String(), `msg="auth-broker snapshot long-poll changed"`) {
		t.Fatal("the long-poll did not wake on the change")
	}
}

// fakeBroker serves canned answers to check the client's reading rules.
func fakeBroker(t *testing.T, h http.HandlerFunc) *client.Client {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return client.New(ts.URL, "tok", ts.Client())
}

func TestClientReading(t *testing.T) {
	const entry = `{"id":1,"provider":"p","credential":{"type":"oauth","refresh":"__remote__","access":"a","expires":5,"orgId":"o"},"identityKey":null,"rotatesInMs":null,"blocks":[{"x":1}]}`
	tests := []struct {
		name, body string
		status     int
		wantErr    string
	}{
		{"unknown fields are ignored", `{"generation":3,"generatedAt":1,"serverNowMs":2,"extra":true,"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":9007199254740991,"x":1},"credentials":[` + entry + `]}`, 200, ""},
		{"malformed JSON is reported", `{"generation":`, 200, "Auth broker returned malformed JSON"},
		{"empty body fails validation", ``, 200, "Auth broker response failed schema validation"},
		{"missing field fails validation", `{"generation":3,"generatedAt":1,"serverNowMs":2,"credentials":[]}`, 200, "Auth broker response failed schema validation"},
		{"wrong type fails validation", `{"generation":"3","generatedAt":1,"serverNowMs":2,"refresher":{"enabled":true,"intervalMs":1,"skewMs":1,"nextSweepInMs":1},"credentials":[]}`, 200, "Auth broker response failed schema validation"},
		{"fractional generation fails validation", `{"generation":3.5,"generatedAt":1,"serverNowMs":2,"refresher":{"enabled":true,"intervalMs":1,"skewMs":1,"nextSweepInMs":1},"credentials":[]}`, 200, "Auth broker response failed schema validation"},
		{"missing rotatesInMs fails validation", `{"generation":3,"generatedAt":1,"serverNowMs":2,"refresher":{"enabled":true,"intervalMs":1,"skewMs":1,"nextSweepInMs":1},"credentials":[{"id":1,"provider":"p","credential":{"type":"api_key","key":"k"},"identityKey":null}]}`, 200, "Auth broker response failed schema validation"},
		{"http error is not parsed", `{"error":"nope"}`, 418, "Auth broker request failed: 418 I'm a teapot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			res, err := c.Snapshot(context.Background(), nil, 0)
			if tt.wantErr == "" {
				if err != nil || res.Generation != 3 || res.Snapshot.Credentials[0].Credential.Access != "a" {
					t.Fatalf("= %+v %v", res, err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestClientRetries(t *testing.T) {
	tests := []struct {
		name         string
		failFirst    bool // close the connection on the first attempt
		status       int
		wantAttempts int32
		wantErr      string
	}{
		{"network error is retried once", true, 200, 2, ""},
		{"http error is not retried", false, 500, 1, "Auth broker request failed: 500 Internal Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			c := fakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 && tt.failFirst {
					conn, _, _ := http.NewResponseController(w).Hijack()
					conn.Close()
					return
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(`{"ok":true}`))
			})
			_, err := c.Healthz(context.Background())
			if n.Load() != tt.wantAttempts {
				t.Fatalf("%d attempts, want %d", n.Load(), tt.wantAttempts)
			}
			if (tt.wantErr == "" && err != nil) || (tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr)) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
	// Every attempt failing: "after 2 attempt(s)".
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	defer ln.Close()
	_, err = client.New("http://"+ln.Addr().String(), "t", nil).Healthz(context.Background())
	if err == nil || err.Error() != "Auth broker request failed after 2 attempt(s)" || accepted.Load() != 2 {
		t.Fatalf("err %v after %d connections", err, accepted.Load())
	}
}

func TestClientAbortAndTimeout(t *testing.T) {
	block := make(chan struct{})
	var n atomic.Int32
	c := fakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	defer close(block)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Healthz(ctx); err == nil || err.Error() != "Auth broker request aborted" {
		t.Fatalf("pre-cancelled: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Healthz(ctx)
	if err == nil || err.Error() != "Auth broker request aborted" || !errors.Is(err, context.DeadlineExceeded) || n.Load() != 1 {
		t.Fatalf("cancelled during the request: %v after %d attempts", err, n.Load())
	}
	// The per-attempt timeout is a network error: retried once.
	n.Store(0)
	c.Timeout = 30 * time.Millisecond
	if _, err := c.Healthz(context.Background()); err == nil || err.Error() != "Auth broker request failed after 2 attempt(s)" || n.Load() != 2 {
		t.Fatalf("timeouts: %v after %d attempts", err, n.Load())
	}
}

func TestClientStreamErrors(t *testing.T) {
	const snap = `{"kind":"snapshot","generation":1,"generatedAt":1,"serverNowMs":1,"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":1},"credentials":[]}`
	tests := []struct {
		name, ctype, body string
		status            int
		openErr, nextErr  string
	}{
		{"404 means unsupported", "application/json", `{"error":"No route"}`, 404, "Auth broker does not support /v1/snapshot/stream", ""},
		{"other status fails", "application/json", `{"error":"unauthorized"}`, 401, "Auth broker stream failed: 401 Unauthorized", ""},
		{"non-SSE content type fails", "application/json", `{}`, 200, "Auth broker stream returned non-SSE response", ""},
		{"first event must be a snapshot", "Text/Event-Stream ; charset=utf-8", "event: removed\ndata: {\"kind\":\"removed\",\"generation\":1,\"serverNowMs\":1,\"refresher\":{\"enabled\":false,\"intervalMs\":0,\"skewMs\":0,\"nextSweepInMs\":1},\"id\":3}\n\n", 200, "", "Auth broker stream did not start with snapshot"},
		{"malformed JSON fails", "text/event-stream", "data: {nope\n\n", 200, "", "Auth broker stream returned malformed JSON"},
		{"schema mismatch fails", "text/event-stream", "data: {\"kind\":\"snapshot\"}\n\n", 200, "", "Auth broker stream event failed schema validation"},
		{"end before snapshot", "text/event-stream", ": keepalive\n\n", 200, "", "Auth broker stream ended before initial snapshot"},
		{"end after snapshot", "text/event-stream", "event: snapshot\r\ndata: " + snap + "\r\n\r\n", 200, "", "Auth broker stream ended unexpectedly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			ctx := streamCtx(t)
			s, err := c.Stream(ctx)
			if tt.openErr != "" {
				if err == nil || err.Error() != tt.openErr {
					t.Fatalf("open err %v, want %q", err, tt.openErr)
				}
				if tt.status == 404 && !errors.Is(err, client.ErrStreamUnsupported) {
					t.Fatal("404 does not match ErrStreamUnsupported")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var last error
			for _, err := range s.All() {
				last = err
			}
			if last == nil || last.Error() != tt.nextErr {
				t.Fatalf("stream err %v, want %q%s", last, tt.nextErr, expired(ctx))
			}
		})
	}
}

// TestSnapshotGeneratedAtIsExportTime: generatedAt is when the snapshot is
// served, not when the vault last changed, so a client's snapshot cache
// written an hour into an unchanged vault is fresh, and a stream's first
// frame carries the time it was sent.
func TestSnapshotGeneratedAtIsExportTime(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-still"}); err != nil {
		t.Fatal(err)
	}
	first, err := e.client.Snapshot(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Add(2 * time.Hour)
	later, err := e.client.Snapshot(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now().UnixMilli()
	if later.Generation != first.Generation || later.Snapshot.GeneratedAt != now || later.Snapshot.ServerNowMs != now {
		t.Fatalf("two hours on, unchanged vault: generation %d→%d generatedAt %d serverNowMs %d, want both %d",
			first.Generation, later.Generation, later.Snapshot.GeneratedAt, later.Snapshot.ServerNowMs, now)
	}
	st, err := e.client.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev, err := st.Next()
	if err != nil || ev.Snapshot == nil || ev.Snapshot.GeneratedAt != now {
		t.Fatalf("stream snapshot frame: %+v %v, want generatedAt %d", ev, err, now)
	}
}
