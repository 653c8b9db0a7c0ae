package proxy_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

// chatOfSize is a chat request of exactly n bytes.
func chatOfSize(n int) []byte {
	head, tail := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"`, `"}]}`
	return []byte(head + strings.Repeat("a", n-len(head)-len(tail)) + tail)
}

// waitInFlight waits until the server holds want body bytes.
func waitInFlight(t *testing.T, s *proxy.Server, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for proxy.InFlightBytes(s) != want {
		if time.Now().After(deadline) {
			t.Fatalf("in-flight bytes %d, want %d", proxy.InFlightBytes(s), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// The gateway holds at most MaxInFlightBytes of request bodies at once: with
// one 800 KB body half sent, another 800 KB request (declared length or
// not) is answered 503 with Retry-After before the upstream sees it, and
// once the first is done the next one is served.
func TestInFlightByteCap(t *testing.T) {
	up := anthropicOK(t)
	s, err := proxy.New(proxy.Options{
		Source:           &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}},
		Tokens:           []string{gatewayToken},
		MaxInFlightBytes: 1 << 20,
		Logger:           slog.New(slog.DiscardHandler),
		URLs:             func(string, string) string { return up.srv.URL },
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(s.Handler())
	t.Cleanup(gw.Close)
	const size = 800_000
	body := chatOfSize(size)
	request := func(r io.Reader, length int64) *http.Request {
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions", r)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+gatewayToken)
		return req
	}

	// The first request's body comes slowly: half now, the rest later.
	pr, pw := io.Pipe()
	// Before the server's cleanup, which waits for this request.
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) })
	type result struct {
		resp *http.Response
		err  error
	}
	first := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(request(pr, size))
		first <- result{resp, err}
	}()
	if _, err := pw.Write(body[:size/2]); err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, s, size)

	for _, tc := range []struct {
		name   string
		body   io.Reader
		length int64
	}{
		{"declared length", bytes.NewReader(body), size},
		{"chunked", struct{ io.Reader }{bytes.NewReader(body)}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(request(tc.body, tc.length))
			if err != nil {
				t.Fatal(err)
			}
			got := readAll(t, resp)
			resp.Body.Close()
			want := `{"error":{"message":"The gateway is at its in-flight request byte limit (1048576 bytes); retry later"`
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.HasPrefix(got, want) {
				t.Errorf("%d Retry-After %q %s\nwant 503 Retry-After 1 %s", resp.StatusCode, resp.Header.Get("Retry-After"), got, want)
			}
		})
	}
	if n := len(up.seen()); n != 0 {
		t.Fatalf("the upstream got %d requests while the gateway was full", n)
	}
	waitInFlight(t, s, size)

	if _, err := pw.Write(body[size/2:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	res := <-first
	if res.err != nil {
		t.Fatal(res.err)
	}
	resp := res.resp
	if got := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(got, "Hello world") {
		t.Fatalf("first request: %d %s", resp.StatusCode, got)
	}
	resp.Body.Close()
	waitInFlight(t, s, 0)

	resp, err = http.DefaultClient.Do(request(bytes.NewReader(body), size))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(got, "Hello world") {
		t.Fatalf("request after the first finished: %d %s", resp.StatusCode, got)
	}
	resp.Body.Close()
	waitInFlight(t, s, 0)

	// A body larger than the whole cap can never fit: 413, as a body over
	// BodyLimit.
	resp, err = http.DefaultClient.Do(request(bytes.NewReader(chatOfSize(2<<20)), 2<<20))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 413 {
		t.Fatalf("body over the cap: %d %s", resp.StatusCode, got)
	}
}
