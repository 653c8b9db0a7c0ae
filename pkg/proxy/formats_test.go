package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

func anthropicGateway(t *testing.T, up *upstream, tune ...func(*proxy.Server)) string {
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	return gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil, tune...).URL
}

func TestResponsesToAnthropic(t *testing.T) {
	gw := anthropicGateway(t, anthropicOK(t))
	c := openaiClient(gw)
	params := responses.ResponseNewParams{
		Model: "anthropic/claude-sonnet-4-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openaisdk.String("Say hello")},
	}
	s := c.Responses.NewStreaming(context.Background(), params)
	var final *responses.Response
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.completed" {
			r := ev.Response
			final = &r
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if final == nil || final.OutputText() != "Hello world" {
		t.Fatalf("terminal response %v", final)
	}
	resp, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Hello world" || resp.Status != "completed" {
		t.Errorf("response %s", resp.RawJSON())
	}
}

func TestPiNativeToAnthropic(t *testing.T) {
	gw := anthropicGateway(t, anthropicOK(t))
	body := `{"modelId":"anthropic/claude-sonnet-4-5","context":{"messages":[{"role":"user","content":"hi","timestamp":1}]},"options":{"sessionId":"s-1"}}`
	resp := post(t, gw+"/v1/pi/stream", gatewayToken, body)
	got := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(got, `"type":"done"`) || !strings.HasSuffix(got, "data: [DONE]\n\n") || !strings.Contains(got, "Hello world") {
		t.Errorf("%d %s", resp.StatusCode, got)
	}
	resp = post(t, gw+"/v1/pi/stream", gatewayToken, strings.Replace(body, `"options"`, `"stream":false,"options"`, 1))
	if got := readAll(t, resp); resp.StatusCode != 200 || !strings.HasPrefix(got, `{"message":{`) || !strings.Contains(got, "Hello world") {
		t.Errorf("%d %s", resp.StatusCode, got)
	}
	h := resp.Header
	if h.Get("x-litellm-model-id") != "claude-sonnet-4-5" || h.Get("x-request-id") == "" || h.Get("x-request-id") != h.Get("request-id") ||
		h.Get("openai-processing-ms") == "" || h.Get("x-litellm-response-cost") == "" {
		t.Errorf("response headers %v", h)
	}
	if id := h.Get("x-request-id"); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("x-request-id %q is not a random UUID", id)
	}
}

func TestMidStreamErrorIsTheFormatsErrorEvent(t *testing.T) {
	replay, err := os.ReadFile("../llm/anthropic/testdata/upstream_midstream_error.sse")
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ string) { writeSSE(w, string(replay)) })
	gw := anthropicGateway(t, up)
	chat := `{"model":"claude-sonnet-4-5","stream":%s,"messages":[{"role":"user","content":"hi"}]}`

	resp := post(t, gw+"/v1/chat/completions", gatewayToken, strings.Replace(chat, "%s", "true", 1))
	got := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(got, `data: {"error":{"message":"anthropic HTTP 529 overloaded_error: Overloaded"`) || strings.Contains(got, "[DONE]") {
		t.Errorf("stream: %d %s", resp.StatusCode, got)
	}
	// Not streamed: the failure is the envelope, with the upstream's status.
	resp = post(t, gw+"/v1/chat/completions", gatewayToken, strings.Replace(chat, "%s", "false", 1))
	got = readAll(t, resp)
	if resp.StatusCode != 503 || !strings.Contains(got, `"message":"Overloaded"`) {
		t.Errorf("non-stream: %d %s", resp.StatusCode, got)
	}
	resp = post(t, gw+"/v1/messages", gatewayToken, `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	got = readAll(t, resp)
	if resp.StatusCode != 529 || got != `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` {
		t.Errorf("messages non-stream: %d %s", resp.StatusCode, got)
	}
}

func TestMessagesPingWhileUpstreamIsSilent(t *testing.T) {
	frames := strings.SplitAfter(anthropicText, "\n\n")
	// The upstream goes silent after its first frame until the client has
	// read a ping (a 10 s hang guard: then the test fails for want of one).
	pinged := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, frames[0])
		w.(http.Flusher).Flush()
		select {
		case <-pinged:
		case <-time.After(10 * time.Second):
		}
		_, _ = io.WriteString(w, strings.Join(frames[1:], ""))
	})
	gw := anthropicGateway(t, up, func(s *proxy.Server) { proxy.SetPingInterval(s, 50*time.Millisecond) })
	resp := post(t, gw+"/v1/messages", gatewayToken, `{"model":"claude-sonnet-4-5","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	var got strings.Builder
	br := bufio.NewReader(resp.Body)
	once := false
	for {
		line, err := br.ReadString('\n')
		got.WriteString(line)
		if line == "event: ping\n" && !once {
			once = true
			close(pinged)
		}
		if err != nil {
			break
		}
	}
	start, ping, stop := strings.Index(got.String(), "event: message_start"), strings.Index(got.String(), "event: ping"), strings.Index(got.String(), "event: message_stop")
	if start < 0 || ping < start || stop < ping {
		t.Errorf("want message_start, ping, …, message_stop:\n%s", got.String())
	}
}
