package e2e_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/broker"
)

// post sends body to the gateway's path and returns the status and body.
func post(t *testing.T, gwURL, token, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, gwURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func noUpstream(t *testing.T) *fakeUpstream {
	return newFake(t, func(w http.ResponseWriter, r *http.Request, n int, key string) {
		t.Errorf("the demo reached an upstream: %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusInternalServerError)
	})
}

func withDemo(c *broker.Config) { c.Demo = true }

const demoHello = `{"model":"demo-echo","messages":[{"role":"user","content":"hello"}]}`

// The demo model answers through every inbound wire format, streamed and
// not, and calls a tool when asked; nothing goes upstream.
func TestDemoProviderAnswersEveryFormat(t *testing.T) {
	f := noUpstream(t)
	dir := t.TempDir()
	b := startBroker(t, f, dir, "127.0.0.1:0", withDemo)
	gw, token := startGateway(t, f, b, filepath.Join(dir, "gw"))
	cases := []struct{ path, body, want string }{
		{"/v1/chat/completions", demoHello, `demo: you said \"hello\"`},
		{"/v1/chat/completions", `{"model":"demo-echo","stream":true,"messages":[{"role":"user","content":"hello"}]}`, `"content":" said"`},
		{"/v1/messages", `{"model":"demo-echo","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, `demo: you said \"hi\"`},
		{"/v1/messages", `{"model":"demo-echo","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"text_delta","text":" said"`},
		{"/v1/responses", `{"model":"demo-echo","input":"hey"}`, `demo: you said \"hey\"`},
		{"/v1/responses", `{"model":"demo-echo","stream":true,"input":"hey"}`, `"delta":" said"`},
		// A tool offered and asked for: a call of the first tool.
		{"/v1/chat/completions", `{"model":"demo-echo","tools":[{"type":"function","function":{"name":"clock","parameters":{"type":"object"}}}],` +
			`"messages":[{"role":"user","content":"use a tool"}]}`, `"name":"clock","arguments":"{}"`},
		// Its result: quoted.
		{"/v1/chat/completions", `{"model":"demo-echo","tools":[{"type":"function","function":{"name":"clock","parameters":{"type":"object"}}}],` +
			`"messages":[{"role":"user","content":"use a tool"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"clock","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"12:00"}]}`, `demo: the tool clock returned \"12:00\"`},
	}
	for _, c := range cases {
		status, body := post(t, gw.URL(), token, c.path, c.body)
		if status != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d %s\nwant it to contain %s", c.path, c.body, status, body, c.want)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d upstream requests", n)
	}
}

// The demo is off unless the broker is started with it: a broker without
// it serves no demo model, and disables a demo credential an earlier start
// stored.
func TestDemoProviderOffUnlessAsked(t *testing.T) {
	f := noUpstream(t)
	dir := t.TempDir()
	unknown := func(phase string, b *runningBroker) {
		t.Helper()
		gw, token := startGateway(t, f, b, filepath.Join(dir, "gw-"+phase))
		status, body := post(t, gw.URL(), token, "/v1/chat/completions", demoHello)
		if status != http.StatusNotFound || !strings.Contains(body, "Unknown model: demo-echo") || !strings.Contains(body, "start the broker with --demo") {
			t.Fatalf("%s: demo-echo answered %d %s", phase, status, body)
		}
		if status, body = post(t, gw.URL(), token, "/v1/chat/completions", strings.Replace(demoHello, "demo-echo", "demo/demo-echo", 1)); status != http.StatusNotFound {
			t.Fatalf("%s: demo/demo-echo answered %d %s", phase, status, body)
		}
	}

	b := startBroker(t, f, dir, "127.0.0.1:0")
	unknown("fresh", b)
	b.stop()

	b = startBroker(t, f, dir, "127.0.0.1:0", withDemo)
	gw, token := startGateway(t, f, b, filepath.Join(dir, "gw-demo"))
	if status, body := post(t, gw.URL(), token, "/v1/chat/completions", demoHello); status != http.StatusOK {
		t.Fatalf("with the demo: %d %s", status, body)
	}
	b.stop()

	b = startBroker(t, f, dir, "127.0.0.1:0")
	unknown("restarted", b)
}
