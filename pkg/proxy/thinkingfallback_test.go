package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// A thinking-replay fallback is kept per client session: the upstream
// rejects the signature of a replayed thinking block, the gateway sends the
// request again without replayed thinking, and later requests of that
// session go without it at once; another session replays its thinking
// again. The client sees the retry's answer alone.
func TestThinkingReplayFallbackIsPerSession(t *testing.T) {
	var thinkingSeen []bool
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {})
	up.handle = func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		up.mu.Lock()
		thinking := strings.Contains(up.bodies[n], `"type":"thinking"`)
		thinkingSeen = append(thinkingSeen, thinking)
		up.mu.Unlock()
		if thinking {
			writeJSON(w, 400, nil, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.1.content.0: Invalid `signature` in `thinking` block\"},\"request_id\":\"req_011CThinkSig\"}")
			return
		}
		writeSSE(w, anthropicText)
	}
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	body := `{"model":"anthropic/claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[` +
		`{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"The user wants weather.","signature":"Eq0BforeignSigner"},{"type":"text","text":"Sunny."}]},` +
		`{"role":"user","content":"And tomorrow?"}]}`
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
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("session %s: status %d: %s", session, resp.StatusCode, got)
		}
		if n := strings.Count(string(got), "event: message_start"); n != 1 {
			t.Fatalf("session %s: %d message_start events in the answer, want 1:\n%s", session, n, got)
		}
	}
	attempts := func() []bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		out := thinkingSeen
		thinkingSeen = nil
		return out
	}
	want := func(step string, got []bool, thinking ...bool) {
		t.Helper()
		wantAttempts(t, step+": upstream attempts (thinking?)", got, thinking)
	}
	send("A")
	want("first request of A", attempts(), true, false)
	send("A")
	want("second request of A", attempts(), false)
	send("B")
	want("first request of B", attempts(), true, false)
}
