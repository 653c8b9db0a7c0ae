package gateway_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// TestGatewayOnClientToken: a gateway given a named client-scope broker
// token (not the shared bearer) starts, follows the broker's stream, and
// serves everything it relays — usage, usage history, the credential
// check: a gateway needs no admin right.
func TestGatewayOnClientToken(t *testing.T) {
	dir := t.TempDir()
	m := &broker.Main{Config: broker.Config{
		Bind: "127.0.0.1:0", DBPath: filepath.Join(dir, "vault.db"), TokenPath: filepath.Join(dir, "auth-broker.token"),
		KeyPath: filepath.Join(dir, "vault.key"), Logger: slog.New(slog.DiscardHandler), PollInterval: 50 * time.Millisecond,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done; m.Close() })
	raw, err := os.ReadFile(m.Config.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	shared := brokerclient.New(m.URL(), strings.TrimSpace(string(raw)), nil)

	tok, digest := vault.NewClientToken()
	if err := m.Store.CreateToken(ctx, vault.ClientToken{Name: "gw-eu", Scope: vault.ScopeClient, Digest: digest}); err != nil {
		t.Fatal(err)
	}
	b := &runningBroker{url: m.URL(), token: tok, client: brokerclient.New(m.URL(), tok, nil)}
	cfg := gatewayConfig(t, b)
	g := startGateway(t, cfg)
	rawGW, _ := os.ReadFile(cfg.TokenPath)
	gwTok := strings.TrimSpace(string(rawGW))

	if _, err := shared.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-client-token"}); err != nil {
		t.Fatal(err)
	}
	for {
		if es, _ := g.m.Store.List(ctx, "openai"); len(es) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the gateway on a client token did not follow the broker's stream")
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, path := range []string{"/v1/usage", "/v1/usage/history?days=2", "/v1/credentials/check"} {
		if code, body := get(t, g.m.URL()+path, gwTok); code != 200 {
			t.Errorf("%s through a client token: %d %s", path, code, body)
		}
	}
	if rows, err := gateway.Check(ctx, cfg, false); err != nil || len(rows) != 1 {
		t.Errorf("Check on a client token: %+v %v", rows, err)
	}
	// The same token cannot change the vault.
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-x"}); vault.ErrorCode(err) != vault.EFORBIDDEN {
		t.Errorf("upload with the gateway's client token: %v", err)
	}
}
