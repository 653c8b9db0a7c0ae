package proxy_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// A strict-tools fallback is kept per client session: the upstream rejects
// strict tool schemas, the gateway retries without them, and later requests
// of that session go without them at once; another session tries strict
// tools again.
func TestStrictToolsFallbackIsPerSession(t *testing.T) {
	var strictSeen []bool
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {})
	up.handle = func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		up.mu.Lock()
		strict := strings.Contains(up.bodies[n], `"strict":true`)
		strictSeen = append(strictSeen, strict)
		up.mu.Unlock()
		if strict {
			writeJSON(w, 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.custom.strict: Extra inputs are not permitted"}}`)
			return
		}
		writeSSE(w, anthropicText)
	}
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	body := `{"model":"anthropic/claude-sonnet-4-5","max_tokens":64,"stream":true,` +
		`"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"name":"get","description":"d","input_schema":{"type":"object"},"strict":true}]}`
	send := func(session string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/v1/messages", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+gatewayToken)
		req.Header.Set("x-session-id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("session %s: status %d", session, resp.StatusCode)
		}
	}
	attempts := func() []bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		out := strictSeen
		strictSeen = nil
		return out
	}
	want := func(step string, got []bool, strict ...bool) {
		t.Helper()
		wantAttempts(t, step+": upstream attempts (strict?)", got, strict)
	}
	send("A")
	want("first request of A", attempts(), true, false)
	send("A")
	want("second request of A", attempts(), false)
	send("B")
	want("first request of B", attempts(), true, false)
}

// wantAttempts fails unless the upstream saw the attempts want, in order
// (each true when the attempt carried what the test watches for).
func wantAttempts(t *testing.T, what string, got, want []bool) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s %v, want %v", what, got, want)
	}
}
