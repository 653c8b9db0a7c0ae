package proxy_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// TestClaudeCodeVersionRejectionRetried: Anthropic rejects the Claude Code
// version the gateway presents and names a newer minimum; the gateway
// presents the minimum from then on and the client never sees the
// rejection.
func TestClaudeCodeVersionRejectionRetried(t *testing.T) {
	old := provider.ClaudeCodeVersion()
	i := strings.LastIndexByte(old, '.')
	patch, err := strconv.Atoi(old[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	minimum := old[:i+1] + strconv.Itoa(patch+1)
	var mu sync.Mutex
	var uas []string
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		ua := r.Header.Get("User-Agent")
		mu.Lock()
		uas = append(uas, ua)
		mu.Unlock()
		if ua != provider.ClaudeCodeUserAgentFor(minimum) {
			writeJSON(w, http.StatusBadRequest, nil, `{"type":"error","error":{"type":"claude_code_version_too_old","message":"Claude Code version `+minimum+` or newer is required"}}`)
			return
		}
		writeSSE(w, anthropicText)
	})
	src := &memSource{entries: []vault.Entry{oauthEntry(3, "anthropic", "tok-v")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	for range 2 {
		resp := post(t, gw.URL+"/v1/messages", gatewayToken,
			`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"Say hello"}]}`)
		if body := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Hello world") {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{provider.ClaudeCodeUserAgentFor(old), provider.ClaudeCodeUserAgentFor(minimum), provider.ClaudeCodeUserAgentFor(minimum)}
	if !slices.Equal(uas, want) {
		t.Errorf("upstream user agents %q, want %q: one rejection, then the minimum for the rest of the process", uas, want)
	}
	if got := up.seen(); !slices.Equal(got, []string{"tok-v", "tok-v", "tok-v"}) {
		t.Errorf("upstream credentials %q, want the same token each time (no refresh, no failover)", got)
	}
}
