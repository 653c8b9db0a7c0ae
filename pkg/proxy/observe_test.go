package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

// Every settled request's burn reaches Options.Observe with the x-omp-*
// attribution headers and the credential that served it; the
// headers never reach the upstream.
func TestObservedUsageAttribution(t *testing.T) {
	var leaked sync.Map
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-omp-") {
				leaked.Store(k, true)
			}
		}
		writeSSE(w, anthropicText)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(7, "anthropic", "sk-ant-vault")}}
	var mu sync.Mutex
	var got []proxy.Observed
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil, func(s *proxy.Server) {
		proxy.SetObserve(s, func(o proxy.Observed) { mu.Lock(); got = append(got, o); mu.Unlock() })
	})
	send := func(stream bool, h map[string]string) {
		t.Helper()
		body := `{"model":"anthropic/claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]` + map[bool]string{true: `,"stream":true`, false: ``}[stream] + `}`
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+gatewayToken)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	send(false, map[string]string{"x-omp-install-id": " inst-AAA ", "x-omp-hostname": "boxA", "x-omp-app": "myapp"})
	send(true, map[string]string{"x-omp-app": "onlyapp", "x-omp-hostname": "ignoredhost"})
	send(true, nil)

	mu.Lock()
	defer mu.Unlock()
	want := []proxy.Observed{
		{InstallID: "inst-AAA", Hostname: "boxA", App: "myapp"},
		{App: "onlyapp"},
		{App: "gateway"},
	}
	if len(got) != len(want) {
		t.Fatalf("observed %d requests, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.InstallID != w.InstallID || g.Hostname != w.Hostname || g.App != w.App {
			t.Errorf("request %d attributed to %q/%q/%q, want %q/%q/%q", i, g.InstallID, g.Hostname, g.App, w.InstallID, w.Hostname, w.App)
		}
		if g.Provider != "anthropic" || g.Model != "claude-sonnet-4-5" || g.CredentialID != 7 || g.Usage.Output != 5 {
			t.Errorf("request %d: %+v, want anthropic/claude-sonnet-4-5 on credential 7 with 5 output tokens", i, g)
		}
	}
	leaked.Range(func(k, _ any) bool { t.Errorf("upstream saw %v", k); return true })
}
