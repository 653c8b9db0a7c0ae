package google

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

var fixedNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func userReq(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}}}}
}

func TestGeminiStreamsWithAPIKey(t *testing.T) {
	body, _ := os.ReadFile("testdata/text_thinking.sse")
	var gotPath, gotKey, gotQuery string
	var gotBody map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery, gotKey = r.URL.Path, r.URL.RawQuery, r.Header.Get("x-goog-api-key")
		_ = json.NewDecoder(r.Body).Decode(&gotBody)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	g := &Gemini{BaseURL: srv.URL + "/v1beta", Client: srv.Client(), Now: func() time.Time { return fixedNow }}
	s, err := g.Stream(context.Background(), userReq("hi"), &flash25, llm.APIKey("k-123"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := llm.Collect(s)
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || gotQuery != "alt=sse" || gotKey != "k-123" {
		t.Errorf("request %s?%s key %q", gotPath, gotQuery, gotKey)
	}
	if _, ok := gotBody["contents"]; !ok {
		t.Errorf("body without contents: %v", gotBody)
	}
	if m.TextContent() != "Hello, world <3" || m.StopReason != llm.StopEnd || m.Timestamp != fixedNow.UnixMilli() ||
		m.API != llm.APIGoogle || m.Usage.Reasoning != 202 {
		t.Errorf("message %+v", m)
	}
}

func TestCodeAssistWrapsRequestAndUnwrapsChunks(t *testing.T) {
	body, _ := os.ReadFile("testdata/codeassist.sse")
	var env struct {
		Model, Project, UserAgent, RequestType, RequestID string
		Request                                           map[string]json.RawMessage
	}
	var hdr http.Header
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr, path = r.Header.Clone(), r.URL.String()
		_ = json.NewDecoder(r.Body).Decode(&env)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		name  string
		model llm.Model
		check func(t *testing.T)
	}{
		{"gemini_cli", llm.Model{ID: "gemini-2.5-pro", Provider: "google-gemini-cli", API: llm.APIGeminiCLI}, func(t *testing.T) {
			if !strings.HasPrefix(hdr.Get("User-Agent"), "GeminiCLI/0.46.0/gemini-2.5-pro (") || hdr.Get("Client-Metadata") == "" {
				t.Errorf("headers %v", hdr)
			}
			if env.UserAgent != "" || env.RequestID != "" {
				t.Errorf("gemini-cli envelope has antigravity fields: %+v", env)
			}
		}},
		{"antigravity", llm.Model{ID: "gemini-3-pro", RequestModelID: "gemini-3-pro-low", Provider: "google-antigravity", API: llm.APIGeminiCLI}, func(t *testing.T) {
			if hdr.Get("User-Agent") != "antigravity/hub/2.8.0 (aidev_client; os_type=darwin; arch=arm64; cl=963137146)" {
				t.Errorf("user agent %q", hdr.Get("User-Agent"))
			}
			if env.Model != "gemini-3-pro-low" || env.UserAgent != "antigravity" || env.RequestType != "agent" ||
				!strings.HasPrefix(env.RequestID, "agent/") || !strings.HasPrefix(string(env.Request["sessionId"]), `"-`) {
				t.Errorf("envelope %+v", env)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &CodeAssist{BaseURL: srv.URL, Client: srv.Client(), NewID: seqIDs()}
			cred := llm.OAuthToken("ya29.token")
			cred.ProjectID = "proj-1"
			s, err := p.Stream(context.Background(), userReq("hi"), &tt.model, cred)
			if err != nil {
				t.Fatal(err)
			}
			m, err := llm.Collect(s)
			if err != nil {
				t.Fatal(err)
			}
			if path != "/v1internal:streamGenerateContent?alt=sse" || hdr.Get("Authorization") != "Bearer ya29.token" {
				t.Errorf("path %s auth %q", path, hdr.Get("Authorization"))
			}
			if env.Project != "proj-1" || env.Request["contents"] == nil {
				t.Errorf("envelope %+v", env)
			}
			if m.StopReason != llm.StopToolUse || len(m.Content) != 2 || m.Content[1].ID != "toolu_1" || m.API != llm.APIGeminiCLI {
				t.Errorf("message %+v", m)
			}
			tt.check(t)
		})
	}
}

func TestCodeAssistWithoutProjectFails(t *testing.T) {
	_, err := (&CodeAssist{}).Stream(context.Background(), userReq("x"), &llm.Model{ID: "gemini-2.5-pro"}, llm.OAuthToken("t"))
	if !errors.Is(err, ErrNoProject) {
		t.Fatalf("err = %v", err)
	}
}

func TestAntigravityFailsOverOnTransientStatus(t *testing.T) {
	body, _ := os.ReadFile("testdata/codeassist.sse")
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.Host == "daily-cloudcode-pa.googleapis.com" {
			w.WriteHeader(503)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	// Route both default endpoints to the test server, keeping the Host.
	client := srv.Client()
	client.Transport = rewriteTransport{base: client.Transport, to: srv.URL}
	p := &CodeAssist{Client: client, Antigravity: true}
	cred := llm.OAuthToken("t")
	cred.ProjectID = "p"
	s, err := p.Stream(context.Background(), userReq("x"), &llm.Model{ID: "gemini-3-flash", Provider: "google-antigravity"}, cred)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(s); err != nil || calls != 2 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

type rewriteTransport struct {
	base http.RoundTripper
	to   string
}

func (rt rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	host := r.URL.Host
	u := *r.URL
	u.Scheme, u.Host = "http", strings.TrimPrefix(rt.to, "http://")
	r2 := r.Clone(r.Context())
	r2.URL, r2.Host = &u, host
	return rt.base.RoundTrip(r2)
}

func TestUpstreamErrors(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		header    map[string]string
		body      string
		wantType  string
		wantCode  string
		wantRetry time.Duration
		wantClass llm.ErrorClass
		usage     bool
	}{
		{"quota_with_retry_info", 429, nil,
			`{"error":{"code":429,"message":"Quota exceeded for metric","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"31s"}]}}`,
			"RESOURCE_EXHAUSTED", "", 31 * time.Second, llm.ClassRateLimit, true},
		{"retry_after_header_wins", 429, map[string]string{"Retry-After": "5"},
			`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"31s"}]}}`,
			"RESOURCE_EXHAUSTED", "", 5 * time.Second, llm.ClassRateLimit, true},
		{"bad_api_key", 400, nil,
			`{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`,
			"INVALID_ARGUMENT", "API_KEY_INVALID", 0, llm.ClassInvalidRequest, false},
		{"permission", 403, nil, `{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}`, "PERMISSION_DENIED", "", 0, llm.ClassAuth, false},
		{"unavailable_plain_text", 503, nil, `upstream connect error`, "", "", 0, llm.ClassUpstream, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			g := &Gemini{BaseURL: srv.URL, Client: srv.Client()}
			s, err := g.Stream(context.Background(), userReq("x"), &flash25, llm.APIKey("secret-key"))
			if s != nil {
				t.Fatal("stream returned with an error status")
			}
			var ue *llm.UpstreamError
			if !errors.As(err, &ue) {
				t.Fatalf("err %T %v", err, err)
			}
			if ue.Status != tt.status || ue.Type != tt.wantType || ue.Code != tt.wantCode || ue.RetryAfter != tt.wantRetry {
				t.Errorf("got %+v", ue)
			}
			if c := llm.Classify(err); c.Class != tt.wantClass || c.UsageLimit != tt.usage {
				t.Errorf("classified %+v", c)
			}
			if strings.Contains(err.Error(), "secret-key") {
				t.Error("error leaks the key")
			}
		})
	}
}

func TestStreamCancelledMidwayIsAborted(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &Gemini{BaseURL: srv.URL, Client: srv.Client()}
	s, err := g.Stream(ctx, userReq("x"), &flash25, llm.APIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var last llm.Event
	for ev := range s.Events() {
		if ev.Type == llm.EventTextDelta {
			cancel()
		}
		last = ev
	}
	if last.Type != llm.EventError || last.Reason != llm.StopAborted {
		t.Fatalf("last event %s %s", last.Type, last.Reason)
	}
}
