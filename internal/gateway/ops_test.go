package gateway_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/pkg/vault"
)

// The operational routes against the real broker: usage through the
// remote store, the credential check through the broker's snapshot.
func TestOperationalRoutesAgainstBroker(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ops-1"}); err != nil {
		t.Fatal(err)
	}
	cfg := gatewayConfig(t, b)
	g := startGateway(t, cfg)
	raw, _ := os.ReadFile(cfg.TokenPath)
	tok := strings.TrimSpace(string(raw))

	if code, body := get(t, g.m.URL()+"/v1/usage", tok); code != 200 || !strings.HasPrefix(body, `{"generatedAt":`) || !strings.HasSuffix(body, `"reports":[]}`) {
		t.Errorf("/v1/usage: %d %s", code, body)
	}
	code, body := get(t, g.m.URL()+"/v1/credentials/check", tok)
	if code != 200 || !strings.HasSuffix(body, `"credentials":[{"id":1,"provider":"openai","type":"api_key","ok":null,"reason":"no usage probe configured for provider openai"}]}`) {
		t.Errorf("/v1/credentials/check: %d %s", code, body)
	}
	if strings.Contains(body, "sk-ops-1") {
		t.Error("the check leaked the key")
	}
	if code, _ := get(t, g.m.URL()+"/v1/credentials/check", ""); code != 401 {
		t.Errorf("check without a token: %d", code)
	}

	if code, body := get(t, g.m.URL()+"/metrics", tok); code != 200 || !strings.Contains(body, "omp_gateway_broker_sync_mode{mode=") ||
		!strings.Contains(body, `omp_gateway_http_requests_total{format="",provider="",route="/v1/usage",status="200"} 1`) {
		t.Errorf("/metrics: %d %s", code, body)
	}

	rows, err := gateway.Check(ctx, cfg, false)
	if err != nil || len(rows) != 1 || rows[0].Provider != "openai" || rows[0].OK != nil {
		t.Errorf("Check: %+v %v", rows, err)
	}
	cfg.BrokerURL = ""
	if _, err := gateway.Check(ctx, cfg, false); !errors.Is(err, gateway.ErrCheckNoBroker) {
		t.Errorf("Check without a broker: %v", err)
	}
}
