package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/gateway"
)

// anthropicPong is an Anthropic Messages stream answering "pong".
const anthropicPong = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"pong\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

func TestGatewayCheckNoBroker(t *testing.T) {
	c := newCLI(t)
	r := c.run("", "auth-gateway", "check")
	if r.code != 1 || r.stderr != gateway.MsgCheckNoBroker+"\n" || r.stdout != "" {
		t.Fatalf("exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = "http://"+closedAddr(t), "tok-never-shown-456"
	r = c.run("", "auth-gateway", "check", "--json")
	if r.code != 1 || r.stderr != "error: "+gateway.MsgNoSnapshot+"\n" || r.stdout != "" {
		t.Fatalf("broker down: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	assertNoSecrets(t, r, "tok-never-shown-456")
}

func TestGatewayCheckAgainstBroker(t *testing.T) {
	b := startBroker(t, "")
	b.upload(t, apiKeyCred("anthropic", "sk-ant-check-1"), apiKeyCred("openai", "sk-oa-check-2"))
	anth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("x-api-key") != "sk-ant-check-1" {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, anthropicPong)
	}))
	defer anth.Close()
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer oa.Close()
	c := newCLI(t)
	c.useBroker(b)
	c.env["OMP_PROVIDER_ANTHROPIC_BASE_URL"] = anth.URL
	c.env["OMP_PROVIDER_OPENAI_BASE_URL"] = oa.URL

	r := c.run("", "auth-gateway", "check")
	want := "broker: " + b.url + "\n\nanthropic (1)\n" +
		"  unknown  id=  1 api_key (api key) — usage probe does not support api_key credentials for anthropic\n\nopenai (1)\n" +
		"  unknown  id=  2 api_key (api key) — no usage probe configured for provider openai\n\n" +
		"0 ok, 0 failed, 2 unverifiable, 2 total\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("check: exit %d\n got %q\nwant %q\nstderr %q", r.code, r.stdout, want, r.stderr)
	}

	r = c.run("", "auth-gateway", "check", "--strict")
	lines := strings.Split(r.stdout, "\n")
	if r.code != 1 || len(lines) != 10 || lines[0] != "broker: "+b.url+" [strict]" ||
		!strings.HasPrefix(lines[3], "  unknown  [chat: ok] id=  1 api_key (api key) — usage probe does not support api_key credentials for anthropic") ||
		!strings.HasPrefix(lines[6], "  unknown  [chat: FAIL] id=  2 api_key (api key) — no usage probe configured for provider openai; chat: ") ||
		!strings.Contains(lines[6], "Incorrect API key provided") ||
		lines[8] != "0 ok, 0 failed, 2 unverifiable, 1 chat-failed, 2 total" {
		t.Fatalf("strict: exit %d\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}

	r = c.run("", "auth-gateway", "check", "--strict", "--json")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "{\n  \"broker\": \""+b.url+"\",\n  \"strict\": true,\n  \"credentials\": [\n    {\n      \"id\": 1,") {
		t.Fatalf("json: exit %d %s", r.code, r.stdout)
	}
	var doc struct {
		Credentials []struct {
			ID         int64 `json:"id"`
			OK         *bool `json:"ok"`
			Completion struct {
				OK      *bool  `json:"ok"`
				ModelID string `json:"modelId"`
			} `json:"completion"`
		} `json:"credentials"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Credentials) != 2 {
		t.Fatalf("%v %s", err, r.stdout)
	}
	if c0 := doc.Credentials[0]; c0.OK != nil || c0.Completion.OK == nil || !*c0.Completion.OK || c0.Completion.ModelID == "" {
		t.Errorf("anthropic row %+v", c0)
	}
	if !strings.Contains(r.stdout, `"ok": null`) {
		t.Errorf("ok null not serialised: %s", r.stdout)
	}
	assertNoSecrets(t, r, b.token, "sk-ant-check-1", "sk-oa-check-2")
}
