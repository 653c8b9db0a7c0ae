package proxy_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

func TestMetrics(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int, _ string) {
		if n == 0 {
			writeSSE(w, anthropicText)
			return
		}
		writeJSON(w, 429, map[string]string{"retry-after": "30"}, usageLimit429)
	})
	fixed := time.Unix(1_700_000_000, 0)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-metrics-1")}}
	s, err := proxy.New(proxy.Options{Source: src, Tokens: []string{gatewayToken},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		URLs:   func(p, _ string) string { return map[string]string{"anthropic": up.srv.URL}[p] },
		Now:    func() time.Time { return fixed },
		Sync:   func() proxy.SyncState { return proxy.SyncState{Mode: "stream", LastSync: fixed.Add(-5 * time.Second)} },
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := serve(t, s)
	resp := post(t, gw+"/v1/chat/completions", gatewayToken, `{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("stream %d %s", resp.StatusCode, body)
	}
	resp = post(t, gw+"/v1/messages", gatewayToken, `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	if body := readAll(t, resp); resp.StatusCode != 429 {
		t.Fatalf("usage limit %d %s", resp.StatusCode, body)
	}
	get(t, gw+"/v1/nope", gatewayToken)

	if resp, _ := get(t, gw+"/metrics", ""); resp.StatusCode != 401 {
		t.Errorf("/metrics without a token: %d", resp.StatusCode)
	}
	resp, body := get(t, gw+"/metrics", gatewayToken)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{
		`omp_gateway_http_requests_total{format="openai-chat",provider="anthropic",route="/v1/chat/completions",status="200"} 1`,
		`omp_gateway_http_requests_total{format="anthropic-messages",provider="anthropic",route="/v1/messages",status="429"} 1`,
		`omp_gateway_http_requests_total{format="",provider="",route="unmatched",status="404"} 1`,
		`omp_gateway_http_requests_total{format="",provider="",route="unmatched",status="401"} 1`,
		`omp_gateway_http_request_duration_seconds_count{format="openai-chat",route="/v1/chat/completions",stream="true"} 1`,
		`omp_gateway_upstream_ttfb_seconds_count{provider="anthropic"} 1`,
		"omp_gateway_open_streams 0\n",
		"omp_gateway_broker_sync_lag_seconds 5\n",
		`omp_gateway_broker_sync_mode{mode="stream"} 1`,
		`omp_gateway_credential_blocks{provider="anthropic",type="api_key"} 1`,
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "sk-metrics-1") || strings.Contains(body, gatewayToken) {
		t.Error("/metrics leaks a secret")
	}
}
