package proxy_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// anthropicRecorder is a fake Anthropic API answering anthropicText that
// records each request's headers (the upstream records the bodies).
type anthropicRecorder struct {
	mu      sync.Mutex
	headers []http.Header
}

func (a *anthropicRecorder) start(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		a.mu.Lock()
		a.headers = append(a.headers, r.Header.Clone())
		a.mu.Unlock()
		writeSSE(w, anthropicText)
	})
}

func (a *anthropicRecorder) lastHeader() http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.headers[len(a.headers)-1]
}

// sentBody decodes the Anthropic body the upstream received last.
func sentBody(t *testing.T, up *upstream) (body struct {
	Messages []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
}) {
	t.Helper()
	up.mu.Lock()
	raw := up.bodies[len(up.bodies)-1]
	up.mu.Unlock()
	if err := json.Unmarshal([]byte(raw), &body); err != nil {
		t.Fatalf("upstream body %s: %v", raw, err)
	}
	return body
}

// TestInboundAcceptsNullsAndNoneEffort: the shapes SDKs and agents send
// that a strict reading would refuse — a Chat reasoning_effort "none", a
// Chat message or Responses input item whose content is null — are
// accepted and mean what they say.
func TestInboundAcceptsNullsAndNoneEffort(t *testing.T) {
	var rec anthropicRecorder
	up := rec.start(t)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	tests := []struct {
		name, path, body string
		roles            []string // the upstream conversation's roles
		thinkingOff      bool
	}{
		{"chat reasoning_effort none", "/v1/chat/completions",
			`{"model":"claude-sonnet-4-5","reasoning_effort":"none","messages":[{"role":"user","content":"hi"}]}`,
			[]string{"user"}, true},
		{"chat content null", "/v1/chat/completions",
			`{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":null},{"role":"user","content":"weather?"},
			 {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
			 {"role":"tool","tool_call_id":"c1","content":"sunny"},{"role":"assistant","content":null},{"role":"user","content":"thanks"}]}`,
			[]string{"user", "assistant", "user", "user"}, false},
		{"responses content null", "/v1/responses",
			`{"model":"claude-sonnet-4-5","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":null},{"role":"user","content":"again"}]}`,
			[]string{"user", "user"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, gw.URL+tt.path, gatewayToken, tt.body)
			if body := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Hello world") {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			sent := sentBody(t, up)
			var roles []string
			for _, m := range sent.Messages {
				roles = append(roles, m.Role)
			}
			if !slices.Equal(roles, tt.roles) {
				t.Errorf("upstream roles %v, want %v", roles, tt.roles)
			}
			if off := sent.Thinking != nil && sent.Thinking.Type == "disabled"; off != tt.thinkingOff {
				t.Errorf("upstream thinking %+v, want disabled=%v", sent.Thinking, tt.thinkingOff)
			}
		})
	}
}

// TestUserProfileIDForwarded: the inbound anthropic-user-profile-id
// reaches Anthropic on every inbound route and with either credential
// kind, and browsers may send it.
func TestUserProfileIDForwarded(t *testing.T) {
	var rec anthropicRecorder
	up := rec.start(t)
	for _, e := range []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant"), oauthEntry(2, "anthropic", "tok-p")} {
		src := &memSource{entries: []vault.Entry{e}}
		gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
		for path, body := range map[string]string{
			"/v1/messages":         `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
			"/v1/chat/completions": `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`,
		} {
			req, err := http.NewRequest(http.MethodPost, gw.URL+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+gatewayToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("anthropic-user-profile-id", "prof_123")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s: status %d", e.Credential.Type, path, resp.StatusCode)
			}
			if got := rec.lastHeader().Get("anthropic-user-profile-id"); got != "prof_123" {
				t.Errorf("%s %s: upstream anthropic-user-profile-id %q, want prof_123", e.Credential.Type, path, got)
			}
		}
		resp := post(t, gw.URL+"/v1/messages", gatewayToken, `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
		resp.Body.Close()
		if got, ok := rec.lastHeader()["Anthropic-User-Profile-Id"]; ok {
			t.Errorf("upstream anthropic-user-profile-id %q without one inbound", got)
		}
	}

	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	req, err := http.NewRequest(http.MethodOptions, gw.URL+"/v1/messages", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Headers", "anthropic-user-profile-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allowed := strings.Split(resp.Header.Get("Access-Control-Allow-Headers"), ", ")
	if !slices.Contains(allowed, "anthropic-user-profile-id") {
		t.Errorf("CORS allowed headers %q lack anthropic-user-profile-id", allowed)
	}
}
