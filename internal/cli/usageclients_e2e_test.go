package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/pkg/vault"
)

// anthropicSSE is an upstream Messages stream: 10 input and 5 output tokens.
const anthropicSSE = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}` + "\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}` + "\n\n" +
	"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"

// TestUsageClientsShowsAccounts, end to end: a broker holding two
// Anthropic OAuth accounts, a gateway following it, a fake upstream. The
// gateway learns from its snapshot answer that the broker takes credential
// ids, names the serving account in its observed usage, and
// `omp usage clients` (text and --json) shows which account the gateway's
// caller burned — by email, never a token.
func TestUsageClientsShowsAccounts(t *testing.T) {
	var mu sync.Mutex
	var bearers []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		bearers = append(bearers, r.Header.Get("Authorization")+r.Header.Get("x-api-key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, anthropicSSE)
	}))
	t.Cleanup(up.Close)
	urls := func(provider, kind string) string {
		if provider == "anthropic" && kind == "baseUrl" {
			return up.URL
		}
		return "http://" + closedAddr(t)
	}
	b := startBrokerURLs(t, "", urls)
	b.upload(t, oauthCred("anthropic", "alice@example.com", "refresh-alice"))

	dir := t.TempDir()
	gm := &gateway.Main{Config: gateway.Config{
		Bind: "127.0.0.1:0", TokenPath: filepath.Join(dir, "auth-gateway.token"),
		BrokerURL: b.url, BrokerToken: b.token, URLs: urls,
		Logger: slog.New(slog.DiscardHandler), Out: io.Discard, Version: "cli-test", ShutdownGrace: time.Second,
		InstallID: "gateway-install-1", Hostname: "gw-host", ObservedFlush: 50 * time.Millisecond,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := gm.Open(ctx); err != nil {
		t.Fatalf("gateway Open: %v", err)
	}
	gctx, gstop := context.WithCancel(context.Background())
	gdone := make(chan error, 1)
	go func() { gdone <- gm.Run(gctx) }()
	t.Cleanup(func() { gstop(); <-gdone; gm.Close() })
	if !gm.Broker.ObservedCredentialIDs() {
		t.Fatal("the gateway did not note the broker's observed-credential-id announcement")
	}
	raw, err := os.ReadFile(gm.Config.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(raw))

	// A caller with its own install id, as the reference pi-native client sends it.
	body := []byte(`{"model":"anthropic/claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gm.URL()+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-omp-install-id", "laptop-install-42")
	req.Header.Set("x-omp-hostname", "laptop")
	req.Header.Set("x-omp-app", "omp")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("gateway answered %d", resp.StatusCode)
	}

	c := newCLI(t)
	c.useBroker(b)
	type provRow = vault.ClientProviderUsage
	var laptop []provRow
	deadline := time.Now().Add(testTimeout)
	for laptop == nil {
		var doc struct{ Clients []vault.ClientSummary }
		out := c.ok("", "usage", "clients", "--json")
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("--json: %v\n%s", err, out)
		}
		for _, cl := range doc.Clients {
			if cl.InstallID == "laptop-install-42" && len(cl.Providers) > 0 {
				laptop = cl.Providers
			}
		}
		if laptop == nil && time.Now().After(deadline) {
			t.Fatalf("no usage for the caller at the broker:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(laptop) != 1 || laptop[0].Account != "alice@example.com" || laptop[0].CredentialID == 0 ||
		laptop[0].App != "omp" || laptop[0].InputTokens != 10 || laptop[0].OutputTokens != 5 {
		t.Fatalf("caller's rows %+v, want one omp/anthropic row on alice@example.com with 10 in / 5 out", laptop)
	}
	out := c.ok("", "usage", "clients")
	if !strings.Contains(out, "  app  provider   account            requests") || !strings.Contains(out, "  omp  anthropic  alice@example.com") {
		t.Fatalf("text table without the account:\n%s", out)
	}
	assertNoSecrets(t, result{stdout: out}, "acc-refresh-alice", "refresh-alice", b.token)
	mu.Lock()
	defer mu.Unlock()
	if len(bearers) != 1 || !strings.Contains(bearers[0], "acc-refresh-alice") {
		t.Fatalf("upstream saw %q, want alice's access token once", bearers)
	}
}
