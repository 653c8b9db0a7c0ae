package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/proxy"
)

// TestResponseOutlivesItsRecycledBody holds a response open after its
// request body went back to the pool, has other requests read into the
// pooled buffers meanwhile (bodies over httpx.MinPooled, the model id at
// another offset), and checks that the held response, streamed or not,
// still names the model it was asked for and finishes: nothing of the
// response phase views the released body.
func TestResponseOutlivesItsRecycledBody(t *testing.T) {
	for _, stream := range []bool{true, false} {
		release, held := make(chan struct{}), make(chan struct{})
		events := strings.SplitAfter(anthropicText, "\n\n")
		up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, n int, _ string) {
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			for i, ev := range events {
				if n == 0 && i == 3 {
					close(held)
					<-release
				}
				_, _ = io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			}
		})
		var srv *proxy.Server
		gw := anthropicGateway(t, up, func(s *proxy.Server) { srv = s })
		filler := strings.Repeat("lorem ipsum ", 2000) // ~24 KB: a pooled body buffer
		mode := "false"
		if stream {
			mode = "true"
		}
		type result struct {
			out string
			err error
		}
		done := make(chan result, 1)
		go func() { // not post: no t.Fatal off the test goroutine
			req, _ := http.NewRequest(http.MethodPost, gw+"/v1/chat/completions", strings.NewReader(
				`{"model":"anthropic/claude-sonnet-4-5","stream":`+mode+`,"messages":[{"role":"user","content":"`+filler+`"}]}`))
			req.Header.Set("Authorization", "Bearer "+gatewayToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- result{"", err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			done <- result{string(b), err}
		}()
		<-held
		waitInFlight(t, srv, 0) // the gateway has the upstream's answer: the body is released
		for range 4 {
			resp := post(t, gw+"/v1/chat/completions", gatewayToken,
				`{"stream":false,"messages":[{"role":"user","content":"`+filler+`x"}],"model":"anthropic/claude-sonnet-4-5"}`)
			if b := readAll(t, resp); resp.StatusCode != http.StatusOK {
				t.Fatalf("other request: %d %s", resp.StatusCode, b)
			}
		}
		close(release)
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !strings.Contains(r.out, `"model":"anthropic/claude-sonnet-4-5"`) || !strings.Contains(r.out, "world") {
			t.Errorf("stream %v: held response %s", stream, r.out)
		}
		for _, line := range strings.Split(r.out, "\n") {
			if strings.HasPrefix(line, "data: {") && !strings.Contains(line, `"model":"anthropic/claude-sonnet-4-5"`) {
				t.Errorf("chunk without the requested model: %s", line)
			}
		}
	}
}
