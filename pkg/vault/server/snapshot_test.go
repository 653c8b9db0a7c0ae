package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// TestSnapshotWireShape pins the exact key sets of every snapshot object
// as the reference emits them: nothing more, nothing less, no vault extras.
func TestSnapshotWireShape(t *testing.T) {
	e := newEnv(t)
	now := e.clk.Now().UnixMilli()
	c := oauthCred("a@b.c", now+3_600_000)
	c.AccountID, c.ProjectID, c.EnterpriseURL = "acct", "proj", "https://ghe"
	e.upsert("anthropic", c)
	e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-1"})
	st, h, body := e.get("/v1/snapshot")
	if st != 200 || h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("= %d %v", st, h)
	}
	snap := obj(t, body)
	if got := keys(t, []byte(body)); !slices.Equal(got, []string{"credentials", "generatedAt", "generation", "refresher", "serverNowMs"}) {
		t.Fatalf("snapshot keys %v", got)
	}
	var gen int64
	_ = json.Unmarshal(snap["generation"], &gen)
	if h.Get("ETag") != `"`+itoa(gen)+`"` {
		t.Fatalf("ETag %q for generation %d", h.Get("ETag"), gen)
	}
	if got := keys(t, snap["refresher"]); !slices.Equal(got, []string{"enabled", "intervalMs", "nextSweepInMs", "skewMs"}) {
		t.Fatalf("refresher keys %v", got)
	}
	var creds []json.RawMessage
	_ = json.Unmarshal(snap["credentials"], &creds)
	if len(creds) != 2 {
		t.Fatalf("%d credentials", len(creds))
	}
	for _, c := range creds {
		if got := keys(t, c); !slices.Equal(got, []string{"credential", "id", "identityKey", "provider", "rotatesInMs"}) {
			t.Fatalf("entry keys %v", got)
		}
	}
	oauth, key := obj(t, string(creds[0])), obj(t, string(creds[1]))
	if got := keys(t, oauth["credential"]); !slices.Equal(got, []string{"access", "accountId", "email", "enterpriseUrl", "expires", "projectId", "refresh", "type"}) {
		t.Fatalf("oauth credential keys %v", got)
	}
	if got := keys(t, key["credential"]); !slices.Equal(got, []string{"key", "type"}) {
		t.Fatalf("api key credential keys %v", got)
	}
	if string(key["identityKey"]) != "null" || string(key["rotatesInMs"]) != "null" {
		t.Fatalf("api key entry %s", creds[1])
	}
	if !strings.Contains(string(oauth["credential"]), `"refresh":"__remote__"`) || strings.Contains(body, "refresh-secret") {
		t.Fatalf("refresh token not redacted: %s", oauth["credential"])
	}
	want := `"rotatesInMs":3341234` // 41234 + 55 sweeps of 60 s
	if !strings.Contains(string(creds[0]), want) {
		t.Fatalf("oauth entry %s lacks %s", creds[0], want)
	}
	if !strings.Contains(e.logs.String(), `msg="auth-broker snapshot served" peer=127.0.0.1 credentials=2 generation=`+itoa(gen)) {
		t.Fatal("missing snapshot served log")
	}
}

func TestSnapshotRotationFollowsClockAndSchedule(t *testing.T) {
	e := newEnv(t)
	now := e.clk.Now().UnixMilli()
	e.upsert("anthropic", oauthCred("a@b.c", now+3_600_000))
	e.clk.Add(10 * time.Second)
	_, _, body := e.get("/v1/snapshot")
	if !strings.Contains(body, `"serverNowMs":`+itoa(now+10_000)) || !strings.Contains(body, `"rotatesInMs":3331234`) ||
		!strings.Contains(body, `"nextSweepInMs":31234`) {
		t.Fatalf("snapshot not re-rendered at the new time: %s", body)
	}
	e.ref.setSchedule(vault.Schedule{})
	_, _, body = e.get("/v1/snapshot")
	if !strings.Contains(body, `"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":9007199254740991}`) || !strings.Contains(body, `"rotatesInMs":null`) {
		t.Fatalf("disabled refresher not rendered: %s", body)
	}
}

func TestLongPoll(t *testing.T) {
	e := newEnv(t)
	_, h, _ := e.get("/v1/snapshot")
	etag := h.Get("ETag")
	gen := strings.Trim(etag, `"`)
	tests := []struct {
		name, inm, wait string
		want            int
	}{
		{"no tag answers at once", "", "?wait=30000", 200},
		{"other generation answers at once", `"5"`, "?wait=30000", 200},
		{"garbage tag is ignored", `"abc"`, "?wait=30000", 200},
		{"negative tag is ignored", `"-1"`, "?wait=30000", 200},
		{"no wait answers at once", etag, "", 200},
		{"zero wait answers at once", etag, "?wait=0", 200},
		{"non-numeric wait is zero", etag, "?wait=soon", 200},
		{"negative wait is zero", etag, "?wait=-50", 200},
		{"quoted tag waits then 304", etag, "?wait=50", 304},
		{"weak tag waits then 304", "W/" + etag, "?wait=50", 304},
		{"bare tag waits then 304", gen, "?wait=50.9", 304},
		{"padded weak tag waits then 304", "  W/ " + etag + " ", "?wait=50", 304},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, h, body := e.get("/v1/snapshot"+tt.wait, "If-None-Match", tt.inm)
			if st != tt.want {
				t.Fatalf("status %d, want %d", st, tt.want)
			}
			if h.Get("ETag") != etag || h.Get("Cache-Control") != "no-store" {
				t.Fatalf("headers %v", h)
			}
			if st == 304 && body != "" {
				t.Fatalf("304 with a body %q", body)
			}
		})
	}
	if !strings.Contains(e.logs.String(), `msg="auth-broker snapshot long-poll unchanged" peer=127.0.0.1 generation=`+gen) {
		t.Fatal("missing unchanged log")
	}

	// A change during the wait answers 200 with the new generation.
	done := make(chan struct{})
	var st int
	var body string
	var rh http.Header
	parked := e.parkedLongPolls()
	go func() {
		defer close(done)
		st, rh, body = e.get("/v1/snapshot?wait=20000", "If-None-Match", etag)
	}()
	e.awaitParked(t, parked)
	e.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-new"})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("long-poll did not wake on a change")
	}
	if st != 200 || rh.Get("ETag") == etag || !strings.Contains(body, "sk-new") {
		t.Fatalf("changed long-poll = %d %s %s", st, rh.Get("ETag"), body)
	}
	if !strings.Contains(e.logs.String(), `msg="auth-broker snapshot long-poll changed"`) {
		t.Fatal("missing changed log")
	}
}

func TestLongPollClientGoneIs499(t *testing.T) {
	e := newEnv(t)
	_, h, _ := e.get("/v1/snapshot")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+"/v1/snapshot?wait=20000", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("If-None-Match", h.Get("ETag"))
	parked := e.parkedLongPolls()
	errc := make(chan error, 1)
	go func() {
		resp, err := e.ts.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	e.awaitParked(t, parked) // the client leaves while the long-poll waits
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled request succeeded")
	}
	eventually(t, "a 499 in the request metrics", func() bool {
		_, _, m := e.get("/metrics")
		return strings.Contains(m, `omp_broker_http_requests_total{method="GET",route="/v1/snapshot",status="499"} 1`)
	})
}

func TestExternalWritesArePolled(t *testing.T) {
	e := newEnv(t)
	other := e.openSecondStore()
	// The tag is read after opening the second store (which may move the
	// generation), so the long-poll below waits instead of answering at once.
	_, h, _ := e.get("/v1/snapshot")
	done := make(chan string, 1)
	parked := e.parkedLongPolls()
	go func() {
		_, rh, _ := e.get("/v1/snapshot?wait=20000", "If-None-Match", h.Get("ETag"))
		done <- rh.Get("ETag")
	}()
	e.awaitParked(t, parked)
	if _, err := other.Upsert(context.Background(), "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ext"}); err != nil {
		t.Fatal(err)
	}
	select {
	case tag := <-done:
		if tag == h.Get("ETag") {
			t.Fatal("generation did not move")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an external write did not wake the long-poll (poll)")
	}
}
