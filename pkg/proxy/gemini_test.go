package proxy_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/internal/syncbuf"
	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

// geminiDo sends a Gemini API request to the gateway; auth sets the
// token (header name, or "key" for the query parameter).
func geminiDo(t *testing.T, method, url, auth, body string) (*http.Response, string) {
	t.Helper()
	if auth == "key" {
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		url += sep + "key=" + gatewayToken
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	switch auth {
	case "x-goog-api-key":
		req.Header.Set("x-goog-api-key", gatewayToken)
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+gatewayToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, readAll(t, resp)
}

const geminiHello = `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"Say hello"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`

func TestGeminiToAnthropic(t *testing.T) {
	up := anthropicOK(t)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	base := gw.URL + "/v1beta/models/"

	t.Run("generateContent, x-goog-api-key", func(t *testing.T) {
		resp, body := geminiDo(t, http.MethodPost, base+"claude-sonnet-4-5:generateContent", "x-goog-api-key", geminiHello)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		var r struct {
			Candidates []struct {
				Content struct {
					Role  string `json:"role"`
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"content"`
				FinishReason string `json:"finishReason"`
			} `json:"candidates"`
			UsageMetadata struct {
				PromptTokenCount, CandidatesTokenCount, TotalTokenCount int
			} `json:"usageMetadata"`
			ModelVersion string `json:"modelVersion"`
			ResponseID   string `json:"responseId"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		c := r.Candidates[0]
		if c.Content.Role != "model" || c.Content.Parts[0].Text != "Hello world" || c.FinishReason != "STOP" {
			t.Errorf("candidate %s", body)
		}
		if r.UsageMetadata.PromptTokenCount != 10 || r.UsageMetadata.CandidatesTokenCount != 5 || r.UsageMetadata.TotalTokenCount != 15 {
			t.Errorf("usage %s", body)
		}
		if r.ModelVersion != "claude-sonnet-4-5" || r.ResponseID != "msg_up1" {
			t.Errorf("model %q id %q", r.ModelVersion, r.ResponseID)
		}
	})
	t.Run("streamGenerateContent alt=sse, key query", func(t *testing.T) {
		resp, body := geminiDo(t, http.MethodPost, base+"anthropic/claude-sonnet-4-5:streamGenerateContent?alt=sse", "key", geminiHello)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		var text, finish string
		for frame := range strings.SplitSeq(strings.TrimSpace(body), "\r\n\r\n") {
			data, ok := strings.CutPrefix(frame, "data: ")
			if !ok {
				t.Fatalf("frame %q", frame)
			}
			var r struct {
				Candidates []struct {
					Content struct {
						Parts []struct{ Text string } `json:"parts"`
					} `json:"content"`
					FinishReason string `json:"finishReason"`
				} `json:"candidates"`
			}
			if err := json.Unmarshal([]byte(data), &r); err != nil {
				t.Fatal(err)
			}
			for _, p := range r.Candidates[0].Content.Parts {
				text += p.Text
			}
			if f := r.Candidates[0].FinishReason; f != "" {
				finish = f
			}
		}
		if text != "Hello world" || finish != "STOP" {
			t.Errorf("text %q finish %q\n%s", text, finish, body)
		}
	})
	t.Run("streamGenerateContent as a JSON array, bearer", func(t *testing.T) {
		resp, body := geminiDo(t, http.MethodPost, base+"claude-sonnet-4-5:streamGenerateContent", "bearer", geminiHello)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		var chunks []json.RawMessage
		if err := json.Unmarshal([]byte(body), &chunks); err != nil {
			t.Fatalf("not a JSON array: %v\n%s", err, body)
		}
		if len(chunks) != 3 || !strings.Contains(string(chunks[2]), `"finishReason":"STOP"`) {
			t.Errorf("chunks %s", body)
		}
	})
	t.Run("countTokens", func(t *testing.T) {
		resp, body := geminiDo(t, http.MethodPost, base+"claude-sonnet-4-5:countTokens", "x-goog-api-key", `{"contents":[{"role":"user","parts":[{"text":"0123456789abcdef"}]}]}`)
		if resp.StatusCode != 200 || body != `{"totalTokens":4}` {
			t.Errorf("status %d: %s", resp.StatusCode, body)
		}
		if got := len(up.seen()); got != 3 {
			t.Errorf("upstream requests %d, want 3 (countTokens asks none)", got)
		}
	})
	t.Run("models", func(t *testing.T) {
		resp, body := geminiDo(t, http.MethodGet, base[:len(base)-1], "x-goog-api-key", "")
		if resp.StatusCode != 200 || !strings.Contains(body, `"name":"models/anthropic/claude-sonnet-4-5"`) || !strings.Contains(body, `"supportedGenerationMethods":["generateContent","streamGenerateContent","countTokens"]`) {
			t.Errorf("status %d: %.400s", resp.StatusCode, body)
		}
		resp, body = geminiDo(t, http.MethodGet, base+"claude-sonnet-4-5", "key", "")
		var m struct {
			Name             string `json:"name"`
			DisplayName      string `json:"displayName"`
			InputTokenLimit  int    `json:"inputTokenLimit"`
			OutputTokenLimit int    `json:"outputTokenLimit"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if m.Name != "models/anthropic/claude-sonnet-4-5" || m.DisplayName == "" || m.InputTokenLimit == 0 || m.OutputTokenLimit == 0 {
			t.Errorf("model %s", body)
		}
	})
}

func TestGeminiErrors(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ string) {
		writeJSON(w, 429, map[string]string{"retry-after": "7"}, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	base := gw.URL + "/v1beta/models/"
	for _, tc := range []struct {
		name, method, url, auth, body string
		status                        int
		want                          string
		retryAfter                    string
	}{
		{"no token", "POST", base + "claude-sonnet-4-5:generateContent", "", geminiHello, 401, "UNAUTHENTICATED", ""},
		{"wrong key", "POST", base + "claude-sonnet-4-5:generateContent?key=nope", "", geminiHello, 401, "UNAUTHENTICATED", ""},
		{"unknown model", "POST", base + "no-such-model:generateContent", "key", geminiHello, 404, "NOT_FOUND", ""},
		{"unknown model, GET", "GET", base + "no-such-model", "key", "", 404, "NOT_FOUND", ""},
		{"unknown method", "POST", base + "claude-sonnet-4-5:embedContent", "key", geminiHello, 404, "NOT_FOUND", ""},
		{"bad JSON", "POST", base + "claude-sonnet-4-5:generateContent", "key", `{"contents":`, 400, "INVALID_ARGUMENT", ""},
		{"bad role", "POST", base + "claude-sonnet-4-5:generateContent", "key", `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`, 400, "INVALID_ARGUMENT", ""},
		{"rate limited upstream", "POST", base + "claude-sonnet-4-5:generateContent", "key", geminiHello, 429, "RESOURCE_EXHAUSTED", "7"},
		{"unknown route", "GET", gw.URL + "/v1beta/files", "key", "", 404, "NOT_FOUND", ""},
		{"no model", "POST", base + ":generateContent", "key", geminiHello, 404, "NOT_FOUND", ""},
		{"no model, GET", "GET", base, "key", "", 404, "NOT_FOUND", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := geminiDo(t, tc.method, tc.url, tc.auth, tc.body)
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Status  string `json:"status"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("not Google's error shape: %s", body)
			}
			if resp.StatusCode != tc.status || e.Error.Code != tc.status || e.Error.Status != tc.want || e.Error.Message == "" {
				t.Errorf("status %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if strings.Contains(body, gatewayToken) {
				t.Errorf("token in the answer: %s", body)
			}
		})
	}
}

// The Gemini routes go through the same dispatch as the others: observed
// usage with the x-omp-* attribution, the request log line (never the
// token, which came in the query), and the metrics by route and format.
func TestGeminiDispatch(t *testing.T) {
	up := anthropicOK(t)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(7, "anthropic", "sk-ant-vault")}}
	var logs syncbuf.Buffer
	var mu sync.Mutex
	var got []proxy.Observed
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil, func(s *proxy.Server) {
		proxy.SetLogger(s, slog.New(slog.NewTextHandler(&logs, nil)))
		proxy.SetObserve(s, func(o proxy.Observed) { mu.Lock(); got = append(got, o); mu.Unlock() })
	})
	req, err := http.NewRequest(http.MethodPost, gw.URL+"/v1beta/models/claude-sonnet-4-5:streamGenerateContent?alt=sse&key="+gatewayToken, strings.NewReader(geminiHello))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-omp-app", "gemini-client")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	mu.Lock()
	if len(got) != 1 || got[0].App != "gemini-client" || got[0].Provider != "anthropic" || got[0].CredentialID != 7 || got[0].Usage.Output != 5 {
		t.Errorf("observed %+v", got)
	}
	mu.Unlock()
	if !strings.Contains(logs.String(), `msg="auth-gateway request" format=gemini model=claude-sonnet-4-5 resolvedProvider=anthropic`) {
		t.Errorf("no request line for the Gemini call:\n%s", logs.String())
	}
	_, _ = geminiDo(t, http.MethodGet, gw.URL+"/v1beta/models?key=wrong-"+gatewayToken, "", "")
	if strings.Contains(logs.String(), gatewayToken) {
		t.Errorf("the token is in the log:\n%s", logs.String())
	}
	_, metrics := geminiDo(t, http.MethodGet, gw.URL+"/metrics", "bearer", "")
	want := `omp_gateway_http_requests_total{format="gemini",provider="anthropic",route="/v1beta/models/*",status="200"} 1`
	if !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %s", want)
	}
}

// Without a token (NoAuth), a non-JSON body to a Gemini method is 415 in
// Google's shape, as on the other inference routes.
func TestGeminiNoAuthRefusesNonJSON(t *testing.T) {
	up := anthropicOK(t)
	gw := noAuthGateway(t, up, nil, nil)
	for _, method := range []string{"generateContent", "countTokens"} {
		resp, body := send(t, http.MethodPost, gw.URL+"/v1beta/models/claude-sonnet-4-5:"+method, "", geminiHello, map[string]string{"Content-Type": "text/plain"})
		if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(body, `"status":"INVALID_ARGUMENT"`) {
			t.Errorf("%s: status %d: %s", method, resp.StatusCode, body)
		}
	}
}

// A Gemini request walks the same retry ladder: a usage limit on the first
// account switches to its sibling before the client sees a byte.
func TestGeminiUsageLimitFailsOver(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, n int, _ string) {
		if n == 0 {
			writeJSON(w, 429, map[string]string{"retry-after": "120"}, usageLimit429)
			return
		}
		writeSSE(w, anthropicText)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-one"), apiKeyEntry(2, "anthropic", "sk-two")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	resp, body := geminiDo(t, http.MethodPost, gw.URL+"/v1beta/models/claude-sonnet-4-5:streamGenerateContent?alt=sse", "x-goog-api-key", geminiHello)
	if resp.StatusCode != 200 || !strings.Contains(body, `"finishReason":"STOP"`) {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := up.seen(); len(got) != 2 || got[0] == got[1] {
		t.Errorf("upstream credentials %q, want the limited key, then its sibling", got)
	}
}

// The Gemini forms of the token (x-goog-api-key, ?key=) open only the
// Gemini routes.
func TestGeminiKeyFormsOnlyOnGeminiRoutes(t *testing.T) {
	gw := gateway(t, &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}, nil, nil)
	for _, auth := range []string{"key", "x-goog-api-key"} {
		if resp, body := geminiDo(t, http.MethodGet, gw.URL+"/v1/models", auth, ""); resp.StatusCode != http.StatusUnauthorized || body != `{"error":"unauthorized"}` {
			t.Errorf("%s on /v1/models: %d %s", auth, resp.StatusCode, body)
		}
		if resp, _ := geminiDo(t, http.MethodGet, gw.URL+"/v1beta/models", auth, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%s on /v1beta/models: %d", auth, resp.StatusCode)
		}
	}
}
