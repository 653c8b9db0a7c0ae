package proxy_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

// noAuthGateway serves a NoAuth proxy.Server over one Anthropic key whose
// upstream is up, with the given allow-lists.
func noAuthGateway(t *testing.T, up *upstream, hosts, origins []string) *httptest.Server {
	t.Helper()
	s, err := proxy.New(proxy.Options{
		Source:         &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}},
		NoAuth:         true,
		AllowedHosts:   hosts,
		AllowedOrigins: origins,
		Logger:         slog.New(slog.DiscardHandler),
		Version:        "test",
		URLs:           func(string, string) string { return up.srv.URL },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

const chatHi = `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`

// send makes a request to the gateway with the given Host (when not
// empty) and headers, and returns the response with its body read.
func send(t *testing.T, method, url, host, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// A web page can send a no-auth gateway a cross-origin POST without a
// preflight (text/plain), or rebind its own name to 127.0.0.1: each is
// refused before anything reaches the upstream.
func TestNoAuthRefusesWebPages(t *testing.T) {
	up := anthropicOK(t)
	gw := noAuthGateway(t, up, nil, nil)
	chat := gw.URL + "/v1/chat/completions"
	port := gw.URL[strings.LastIndexByte(gw.URL, ':'):]
	for _, tc := range []struct {
		name, method, host, body string
		header                   map[string]string
		status                   int
		want                     string
	}{
		{"cross-origin text/plain POST", http.MethodPost, "", chatHi,
			map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain;charset=UTF-8"},
			403, `{"error":"Origin http://evil.example is not allowed: a gateway without auth answers only its own pages and --allowed-origin origins"}`},
		{"cross-origin JSON POST", http.MethodPost, "", chatHi,
			map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, 403, "Origin http://evil.example is not allowed"},
		{"null origin", http.MethodPost, "", chatHi,
			map[string]string{"Origin": "null", "Content-Type": "application/json"}, 403, "Origin null is not allowed"},
		{"cross-origin preflight", http.MethodOptions, "", "",
			map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, 403, "Origin http://evil.example is not allowed"},
		{"rebound DNS name", http.MethodPost, "evil.example" + port, chatHi,
			map[string]string{"Content-Type": "application/json"},
			403, `{"error":"Host evil.example` + port + ` is not allowed: a gateway without auth answers only localhost, IP addresses and --allowed-host names"}`},
		{"rebound DNS name, GET", http.MethodGet, "evil.example" + port, "", nil, 403, "Host evil.example" + port + " is not allowed"},
		{"text/plain without Origin", http.MethodPost, "", chatHi,
			map[string]string{"Content-Type": "text/plain"},
			415, `{"error":{"message":"Content-Type must be application/json: a gateway without auth refuses other bodies, which any web page can send","type":"invalid_request_error","param":null,"code":null}}`},
		{"form body without Origin", http.MethodPost, "", chatHi,
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "Content-Type must be application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, tc.method, chat, tc.host, tc.body, tc.header)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s\nwant %d %s", resp.StatusCode, body, tc.status, tc.want)
			}
			if o := resp.Header.Get("Access-Control-Allow-Origin"); o != "" {
				t.Errorf("refused request answered Access-Control-Allow-Origin %q", o)
			}
		})
	}
	if seen := up.seen(); len(seen) != 0 {
		t.Fatalf("the upstream got %d requests from refused callers", len(seen))
	}
}

// What a no-auth gateway still answers: SDK-style JSON without Origin, its
// own pages, localhost names, and the allow-listed hosts and origins, with
// CORS naming the origin rather than "*".
func TestNoAuthServesLocalClients(t *testing.T) {
	up := anthropicOK(t)
	gw := noAuthGateway(t, up, []string{"gw.example"}, []string{"http://app.example:3000"})
	chat := gw.URL + "/v1/chat/completions"
	port := gw.URL[strings.LastIndexByte(gw.URL, ':'):]
	jsonType := map[string]string{"Content-Type": "application/json"}

	t.Run("SDK", func(t *testing.T) {
		c := openaiClient(gw.URL)
		resp, err := c.Chat.Completions.New(context.Background(), chatParams("claude-sonnet-4-5"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content != "Hello world" {
			t.Errorf("completion %s", resp.RawJSON())
		}
	})
	for _, tc := range []struct {
		name, host string
		header     map[string]string
		allow      string // the Access-Control-Allow-Origin wanted
	}{
		{"JSON without Origin", "", jsonType, ""},
		{"JSON with charset", "", map[string]string{"Content-Type": "application/json; charset=utf-8"}, ""},
		{"localhost", "localhost" + port, jsonType, ""},
		{"a .localhost name", "omp.localhost" + port, jsonType, ""},
		{"IPv6 loopback", "[::1]" + port, jsonType, ""},
		{"allowed host", "GW.example" + port, jsonType, ""},
		{"own page", "", map[string]string{"Content-Type": "application/json", "Origin": gw.URL}, gw.URL},
		{"allowed origin", "", map[string]string{"Content-Type": "application/json", "Origin": "http://app.example:3000"}, "http://app.example:3000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, http.MethodPost, chat, tc.host, chatHi, tc.header)
			if resp.StatusCode != 200 || !strings.Contains(body, "Hello world") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.allow {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.allow)
			}
		})
	}
	resp, _ := send(t, http.MethodOptions, chat, "", "", map[string]string{"Origin": "http://app.example:3000", "Access-Control-Request-Method": "POST"})
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "http://app.example:3000" ||
		resp.Header.Get("Vary") != "Origin" || resp.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Errorf("allowed preflight %d %v", resp.StatusCode, resp.Header)
	}
	if n := len(up.seen()); n != 9 {
		t.Errorf("the upstream got %d requests, want 9", n)
	}
}
