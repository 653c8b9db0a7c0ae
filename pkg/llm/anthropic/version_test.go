package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/llm"
)

// versionGate is a fake Anthropic API that rejects every request whose
// User-Agent is not Claude Code at min, the way Anthropic rejects an old
// Claude Code: as an HTTP 400 or, with inStream, as the first event of a
// 200 stream.
type versionGate struct {
	min, body string
	inStream  bool

	mu  sync.Mutex
	uas []string
}

func (g *versionGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	g.mu.Lock()
	g.uas = append(g.uas, r.Header.Get("User-Agent"))
	g.mu.Unlock()
	if r.Header.Get("User-Agent") == provider.ClaudeCodeUserAgentFor(g.min) || r.Header.Get("x-api-key") != "" {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, g.body)
		return
	}
	rejection := fmt.Sprintf(`{"type":"error","error":{"type":"claude_code_version_too_old","message":"Claude Code version %s or newer is required"}}`, g.min)
	if g.inStream {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: error\ndata: "+rejection+"\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, rejection)
}

func (g *versionGate) userAgents() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.uas...)
}

// nextPatch returns version with its patch number one higher: a minimum
// newer than whatever the process presents now.
func nextPatch(t *testing.T, version string) string {
	t.Helper()
	i := strings.LastIndexByte(version, '.')
	n, err := strconv.Atoi(version[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("version %q", version)
	}
	return version[:i+1] + strconv.Itoa(n+1)
}

func startGate(t *testing.T, g *versionGate) *Provider {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return &Provider{BaseURL: srv.URL, Client: srv.Client(), Now: func() time.Time { return time.UnixMilli(1700000000000) }}
}

func TestProviderAdoptsRequiredClaudeCodeVersion(t *testing.T) {
	for _, inStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("inStream=%v", inStream), func(t *testing.T) {
			old := provider.ClaudeCodeVersion()
			g := &versionGate{min: nextPatch(t, old), body: fixture(t, "upstream_thinking_tool.sse"), inStream: inStream}
			p := startGate(t, g)
			s, err := p.Stream(context.Background(), simpleRequest(), &testModel, llm.OAuthToken("oat-secret"))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if _, err := llm.Collect(s); err != nil {
				t.Fatal(err)
			}
			want := []string{provider.ClaudeCodeUserAgentFor(old), provider.ClaudeCodeUserAgentFor(g.min)}
			if got := g.userAgents(); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("user agents = %q, want %q", got, want)
			}
			if got := provider.ClaudeCodeVersion(); got != g.min {
				t.Errorf("process version = %s, want the adopted %s", got, g.min)
			}
		})
	}
}

func TestProviderKeepsVersionRejection(t *testing.T) {
	newer := func(t *testing.T, current string) string { return nextPatch(t, current) }
	tests := []struct {
		name string
		env  string // PI_AI_CLAUDE_CODE_VERSION
		min  func(t *testing.T, current string) string
		cred llm.Credential
		ua   string // the client's own User-Agent, sent in place of ours
	}{
		{name: "pinned by the environment", env: "2.1.100", min: newer, cred: llm.OAuthToken("oat")},
		{name: "minimum not newer", min: func(*testing.T, string) string { return "2.0.0" }, cred: llm.OAuthToken("oat")},
		{name: "client user agent", min: newer, cred: llm.OAuthToken("oat"), ua: "claude-cli/1.0.0 (external, cli)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(provider.ClaudeCodeVersionEnv, tt.env)
			}
			before := provider.ClaudeCodeVersion()
			g := &versionGate{min: tt.min(t, before), body: "unused"}
			p := startGate(t, g)
			req := simpleRequest()
			sent := provider.ClaudeCodeUserAgentFor(before)
			if tt.ua != "" {
				req.Headers = map[string]string{"User-Agent": tt.ua}
				sent = tt.ua
			}
			_, err := p.Stream(context.Background(), req, &testModel, tt.cred)
			var ue *llm.UpstreamError
			if !errors.As(err, &ue) || ue.Status != http.StatusBadRequest || ue.Type != provider.ClaudeCodeVersionTooOld {
				t.Fatalf("err = %v, want the 400 %s rejection", err, provider.ClaudeCodeVersionTooOld)
			}
			if got := g.userAgents(); len(got) != 1 || got[0] != sent {
				t.Errorf("user agents = %q, want one request with %q", got, sent)
			}
			if got := provider.ClaudeCodeVersion(); got != before {
				t.Errorf("process version moved to %s", got)
			}
		})
	}
}
