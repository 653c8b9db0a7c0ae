package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	"github.com/ompgo/omp/pkg/vault/server"
)

// streamTestTimeout bounds every stream test on its own, so a stream that
// never delivers fails that test with a clear message instead of costing
// the whole package timeout.
const streamTestTimeout = 10 * time.Second

// streamCtx is a test's stream context: cancelled at cleanup, expired after
// streamTestTimeout.
func streamCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), streamTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// expired names the deadline when ctx ran out, so failures say why.
func expired(ctx context.Context) string {
	if ctx.Err() != nil {
		return fmt.Sprintf(" (stream test deadline of %v exceeded)", streamTestTimeout)
	}
	return ""
}

// rawStream opens the stream (bounded by streamTestTimeout) and returns a
// line reader over it.
func rawStream(t *testing.T, e *env) (*http.Response, *bufio.Reader) {
	t.Helper()
	ctx := streamCtx(t)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+"/v1/snapshot/stream", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, bufio.NewReader(resp.Body)
}

// frame reads one SSE frame (up to the blank line).
func frame(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			hint := ""
			if errors.Is(err, context.DeadlineExceeded) {
				hint = fmt.Sprintf(" (stream test deadline of %v exceeded)", streamTestTimeout)
			}
			t.Fatalf("read frame: %v%s (so far %q)", err, hint, b.String())
		}
		b.WriteString(line)
		if line == "\n" {
			return b.String()
		}
	}
}

func frameJSON(t *testing.T, f, kind string) map[string]json.RawMessage {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(f, "\n\n"), "\n")
	if len(lines) != 2 || lines[0] != "event: "+kind || !strings.HasPrefix(lines[1], "data: ") {
		t.Fatalf("frame %q is not one %s event with one data line", f, kind)
	}
	m := obj(t, strings.TrimPrefix(lines[1], "data: "))
	if string(m["kind"]) != `"`+kind+`"` {
		t.Fatalf("kind %s in a %s frame", m["kind"], kind)
	}
	return m
}

func TestStreamFraming(t *testing.T) {
	e := newEnv(t)
	now := e.clk.Now().UnixMilli()
	a := e.upsert("anthropic", oauthCred("a@b.c", now+3_600_000))
	b := e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-b"})
	resp, r := rawStream(t, e)
	for k, want := range map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
		"Connection": "keep-alive", "X-Accel-Buffering": "no"} {
		if resp.Header.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, resp.Header.Get(k), want)
		}
	}
	snap := frameJSON(t, frame(t, r), "snapshot")
	if got := keys(t, mustJSON(t, snap)); !slices.Equal(got, []string{"credentials", "generatedAt", "generation", "kind", "refresher", "serverNowMs"}) {
		t.Fatalf("snapshot event keys %v", got)
	}

	// A change: a new credential, a refreshed one, one removed — entry frames
	// (snapshot order) before removed frames, all one generation.
	c := e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-c"})
	_ = c
	f1 := frameJSON(t, frame(t, r), "entry")
	if got := keys(t, mustJSON(t, f1)); !slices.Equal(got, []string{"entry", "generation", "kind", "refresher", "serverNowMs"}) {
		t.Fatalf("entry event keys %v", got)
	}
	if got := keys(t, f1["entry"]); !slices.Equal(got, []string{"credential", "id", "identityKey", "provider", "rotatesInMs"}) {
		t.Fatalf("entry keys %v", got)
	}
	if !strings.Contains(string(f1["entry"]), `"key":"sk-c"`) {
		t.Fatalf("entry %s is not the new credential", f1["entry"])
	}
	if err := e.store.Disable(context.Background(), b.ID, "gone"); err != nil {
		t.Fatal(err)
	}
	rm := frameJSON(t, frame(t, r), "removed")
	if got := keys(t, mustJSON(t, rm)); !slices.Equal(got, []string{"generation", "id", "kind", "refresher", "serverNowMs"}) {
		t.Fatalf("removed event keys %v", got)
	}
	if string(rm["id"]) != itoa(b.ID) {
		t.Fatalf("removed id %s, want %d", rm["id"], b.ID)
	}
	if st, _, body := e.post("/v1/credential/"+itoa(a.ID)+"/refresh", ""); st != 200 {
		t.Fatalf("refresh %d %s", st, body)
	}
	f2 := frameJSON(t, frame(t, r), "entry")
	if !strings.Contains(string(f2["entry"]), `"access":"refreshed-access"`) || !strings.Contains(string(f2["entry"]), `"rotatesInMs":`) {
		t.Fatalf("refreshed entry %s", f2["entry"])
	}
	logs := e.logs.String()
	for _, want := range []string{`msg="auth-broker stream opened" peer=127.0.0.1 generation=`, `msg="auth-broker stream entry" id=`, `msg="auth-broker stream removed" id=` + itoa(b.ID)} {
		if !strings.Contains(logs, want) {
			t.Errorf("missing log %q", want)
		}
	}
}

func TestStreamKeepalive(t *testing.T) {
	e := newEnv(t, func(s *server.Server) { s.KeepAlive = 20 * time.Millisecond })
	_, r := rawStream(t, e)
	frameJSON(t, frame(t, r), "snapshot")
	for range 2 {
		if f := frame(t, r); f != ": keepalive\n\n" {
			t.Fatalf("frame %q, want a keepalive comment", f)
		}
	}
}

// A pure passage of time emits nothing; a change of expiry (rotation target)
// does; a bump that changes nothing visible emits nothing.
func TestStreamFingerprint(t *testing.T) {
	e := newEnv(t)
	now := e.clk.Now().UnixMilli()
	a := e.upsert("anthropic", oauthCred("a@b.c", now+3_600_000))
	_, r := rawStream(t, e)
	frameJSON(t, frame(t, r), "snapshot")
	e.clk.Add(5 * time.Second)
	// Unrelated write: only the new credential is sent, not the OAuth entry
	// whose relative rotatesInMs shifted with the clock.
	e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-1"})
	f := frameJSON(t, frame(t, r), "entry")
	if !strings.Contains(string(f["entry"]), "sk-1") {
		t.Fatalf("unexpected entry %s", f["entry"])
	}
	// An expiry change moves the rotation target: re-sent.
	c := oauthCred("a@b.c", now+7_200_000)
	if _, err := e.store.UpdateCredential(context.Background(), a.ID, c); err != nil {
		t.Fatal(err)
	}
	f = frameJSON(t, frame(t, r), "entry")
	if !strings.Contains(string(f["entry"]), `"expires":`+itoa(now+7_200_000)) {
		t.Fatalf("unexpected entry %s", f["entry"])
	}
	// A schedule shift moves the rotation target of an unchanged credential:
	// it is re-sent with the next change, before the new credential.
	sched := e.ref.Schedule()
	sched.NextSweepAt += 1500
	e.ref.setSchedule(sched)
	e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-2"})
	f = frameJSON(t, frame(t, r), "entry")
	if string(obj(t, string(f["entry"]))["id"]) != itoa(a.ID) {
		t.Fatalf("rotation shift not re-sent first: %s", f["entry"])
	}
	if f = frameJSON(t, frame(t, r), "entry"); !strings.Contains(string(f["entry"]), "sk-2") {
		t.Fatalf("unexpected entry %s", f["entry"])
	}
}

func TestStreamClientRoundTrip(t *testing.T) {
	e := newEnv(t)
	a := e.upsert("anthropic", oauthCred("a@b.c", e.clk.Now().UnixMilli()+3_600_000))
	ctx, cancel := context.WithTimeout(context.Background(), streamTestTimeout)
	defer cancel()
	s, err := e.client.Stream(ctx)
	if err != nil {
		t.Fatalf("open stream: %v%s", err, expired(ctx))
	}
	ev, err := s.Next()
	if err != nil || ev.Kind != api.KindSnapshot || len(ev.Snapshot.Credentials) != 1 || ev.Snapshot.Credentials[0].ID != a.ID {
		t.Fatalf("first event %+v %v%s", ev, err, expired(ctx))
	}
	first := ev.Generation
	b := e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-b"})
	ev, err = s.Next()
	if err != nil || ev.Kind != api.KindEntry || ev.Entry.ID != b.ID || ev.Entry.Credential.Key != "sk-b" || ev.Generation <= first {
		t.Fatalf("entry event %+v %v%s", ev, err, expired(ctx))
	}
	if err := e.client.Disable(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	ev, err = s.Next()
	if err != nil || ev.Kind != api.KindRemoved || ev.ID != a.ID {
		t.Fatalf("removed event %+v %v%s", ev, err, expired(ctx))
	}
	if e.metricValue(t, "omp_broker_stream_subscribers") != "1" {
		t.Fatal("subscriber gauge is not 1")
	}
	cancel()
	if _, err := s.Next(); err == nil || err.Error() != "Auth broker request aborted" {
		t.Fatalf("after cancel: %v", err)
	}
	eventually(t, "stream closed log", func() bool {
		return strings.Contains(e.logs.String(), `msg="auth-broker stream closed" peer=127.0.0.1 durationMs=`)
	})
}

// metricValue returns the sample of an unlabeled metric.
func (e *env) metricValue(t *testing.T, name string) string {
	t.Helper()
	_, _, body := e.get("/metrics")
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}
