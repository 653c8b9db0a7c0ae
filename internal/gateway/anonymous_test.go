package gateway_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/httpx/httpxtest"
	"github.com/ompgo/omp/internal/syncbuf"
)

// Without a token every path but the open ones is 401 on the gateway, an
// escaped spelling of /healthz included.
func TestGatewayAnonymousPathsAre401(t *testing.T) {
	g := startGateway(t, gatewayConfig(t, startBroker(t)))
	for path, want := range map[string]int{
		"/healthz":       http.StatusOK,
		"/%68ealthz":     http.StatusUnauthorized,
		"/%2Fhealthz":    http.StatusUnauthorized,
		"/no/such/route": http.StatusUnauthorized,
		"/v1/models":     http.StatusUnauthorized,
	} {
		resp, body, _ := httpxtest.RawExchange(t, g.m.URL(), "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", waitLong)
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
}

// Anonymous requests with unique long methods and paths cost the gateway
// one clipped log line per window, and its metrics stay small.
func TestGatewayAnonymousFloodStaysBounded(t *testing.T) {
	logs := &syncbuf.Buffer{}
	cfg := gatewayConfig(t, startBroker(t))
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	g := startGateway(t, cfg)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: waitLong}
	for i := range 300 {
		req, _ := http.NewRequest(fmt.Sprintf("M%03d%s", i, strings.Repeat("X", 8<<10)), g.m.URL()+"/"+strings.Repeat("p", 4<<10), nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("request %d = %d, want 401", i, resp.StatusCode)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "auth-gateway request unauthorized"); n != 1 {
		t.Errorf("%d unauthorized lines for 300 requests within the window, want 1", n)
	}
	if len(out) > 4<<10 {
		t.Errorf("300 anonymous requests wrote %d bytes of log", len(out))
	}
	if !strings.Contains(out, "peer=127.0.0.1") || strings.Contains(out, "203.0.113.9") {
		t.Errorf("the 401 line does not name the real peer, or believes X-Forwarded-For:\n%s", out)
	}
	raw, _ := os.ReadFile(cfg.TokenPath)
	code, metrics := get(t, g.m.URL()+"/metrics", strings.TrimSpace(string(raw)))
	if code != http.StatusOK || len(metrics) > 64<<10 || strings.Contains(metrics, "XXXXXXXX") {
		t.Errorf("/metrics = %d, %d bytes after 300 anonymous requests", code, len(metrics))
	}
}

// A request body that stalls fails with 408 at the body read timeout and
// the connection is closed. The exchange's read deadline (waitLong) is far
// below the 2 min total cap, so a 408 is the stall timeout's.
func TestGatewaySlowBodyTimesOut(t *testing.T) {
	cfg := gatewayConfig(t, startBroker(t))
	cfg.BodyReadTimeout = 300 * time.Millisecond
	g := startGateway(t, cfg)
	raw, _ := os.ReadFile(cfg.TokenPath)
	resp, body, closed := httpxtest.RawExchange(t, g.m.URL(), "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"+
		"Authorization: Bearer "+strings.TrimSpace(string(raw))+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":", waitLong)
	if resp.StatusCode != http.StatusRequestTimeout || !closed {
		t.Fatalf("status %d %s (closed %v), want 408 and the connection closed", resp.StatusCode, body, closed)
	}
}

// A world-readable gateway token file is made private, with a warning.
func TestGatewayTokenFileMadePrivate(t *testing.T) {
	logs := &syncbuf.Buffer{}
	cfg := gatewayConfig(t, startBroker(t))
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	tok, _ := config.NewToken()
	if err := os.MkdirAll(strings.TrimSuffix(cfg.TokenPath, "/auth-gateway.token"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.TokenPath, []byte(tok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(cfg.TokenPath, 0o644)
	startGateway(t, cfg)
	st, err := os.Stat(cfg.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || !strings.Contains(logs.String(), "was=0644") {
		t.Fatalf("mode %04o, logs:\n%s", st.Mode().Perm(), logs.String())
	}
}
