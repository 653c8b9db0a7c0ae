package broker_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/httpx/httpxtest"
)

// Anonymous requests with unique long methods cost the broker a bounded
// amount of log and metrics: the method label is one of a fixed set, the
// 401 lines are rate limited and clipped, and a request line over the
// header limit is refused before any handler runs.
func TestBrokerAnonymousFloodStaysBounded(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	before := len(h.logs.String())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: waitLong}
	for i := range 300 {
		method := fmt.Sprintf("M%03d%s", i, strings.Repeat("X", 8<<10))
		req, err := http.NewRequest(method, b.url+"/v1/"+strings.Repeat("p", 4<<10), nil)
		if err != nil {
			t.Fatal(err)
		}
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
	huge, _, _ := httpxtest.RawExchange(t, b.url, strings.Repeat("M", 900<<10)+" /v1/snapshot HTTP/1.1\r\nHost: x\r\n\r\n", waitLong)
	if huge.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("900 KB method = %d, want 431", huge.StatusCode)
	}

	logs := h.logs.String()[before:]
	if n := strings.Count(logs, "auth-broker request unauthorized"); n != 1 {
		t.Errorf("%d unauthorized lines for 300 requests within the window, want 1", n)
	}
	if len(logs) > 4<<10 {
		t.Errorf("300 anonymous requests wrote %d bytes of log", len(logs))
	}
	metrics, _ := b.scrape(t)
	if len(metrics) > 64<<10 {
		t.Errorf("/metrics is %d bytes after 300 anonymous requests", len(metrics))
	}
	if !strings.Contains(metrics, `omp_broker_http_requests_total{method="OTHER",route="unmatched",status="401"} 300`) {
		t.Errorf("the 300 requests are not counted under method OTHER:\n%s", grepLines(metrics, "omp_broker_http_requests_total"))
	}
	if strings.Contains(metrics, "XXXXXXXX") {
		t.Error("a client-chosen method reached a metric label")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The logged peer is the connection's address; X-Forwarded-For is logged,
// as forwarded_for, only from a configured trusted proxy.
func TestBrokerLogsTheRealPeer(t *testing.T) {
	for _, tc := range []struct {
		name, trusted, want string
	}{
		{"untrusted", "", "peer=127.0.0.1 credentials="},
		{"trusted proxy", "127.0.0.1/32", "peer=127.0.0.1 forwarded_for=203.0.113.9 credentials="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			b := h.startWith(t, func(c *broker.Config) { c.TrustedProxies = tc.trusted })
			req, _ := http.NewRequest(http.MethodGet, b.url+"/v1/snapshot", nil)
			req.Header.Set("Authorization", b.bearer())
			req.Header.Set("X-Forwarded-For", "203.0.113.9")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			logs := h.logs.String()
			line := grepLines(logs, "auth-broker snapshot served")
			if !strings.Contains(line, tc.want) {
				t.Fatalf("snapshot line %q, want %q", line, tc.want)
			}
			if tc.trusted == "" && strings.Contains(logs, "203.0.113.9") {
				t.Fatal("an untrusted X-Forwarded-For reached the log")
			}
		})
	}
	h := newHarness(t)
	m := &broker.Main{Config: broker.Config{Bind: "127.0.0.1:0", DBPath: h.dbPath(), TokenPath: filepath.Join(h.dir, "t"),
		KeyPath: filepath.Join(h.dir, "k"), TrustedProxies: "10.0.0.0/33"}}
	if err := m.Open(t.Context()); err == nil || !strings.Contains(err.Error(), "OMP_TRUSTED_PROXIES") {
		t.Fatalf("Open with a bad trusted proxy = %v, want an error naming OMP_TRUSTED_PROXIES", err)
	}
	m.Close()
}

// A request body that stalls fails with 408 at the body read timeout and
// the connection is closed, token or not. The exchange's read deadline
// (waitLong) is far below the 2 min total cap, so a 408 is the stall
// timeout's; without a token the 401 comes before any body is read.
func TestBrokerSlowBodyTimesOut(t *testing.T) {
	h := newHarness(t)
	b := h.startWith(t, func(c *broker.Config) { c.BodyReadTimeout = 300 * time.Millisecond })
	for _, authz := range []string{b.bearer(), ""} {
		hdr := ""
		if authz != "" {
			hdr = "Authorization: " + authz + "\r\n"
		}
		resp, body, closed := httpxtest.RawExchange(t, b.url, "POST /v1/credential HTTP/1.1\r\nHost: x\r\n"+hdr+
			"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"provider\":", waitLong)
		want := http.StatusRequestTimeout
		if authz == "" {
			want = http.StatusUnauthorized
		}
		if resp.StatusCode != want {
			t.Fatalf("authz %t: status %d %s, want %d", authz != "", resp.StatusCode, body, want)
		}
		if !closed {
			t.Errorf("authz %t: connection left open after the stalled body", authz != "")
		}
	}
}

// The startup line shows the token file's real mode; a group- or
// world-readable file is made private, with a warning naming it.
func TestBrokerTokenFileMode(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.dir, "auth-broker.token")
	tok, err := config.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	b := h.start(t)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o after start, want 0600", st.Mode().Perm())
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `msg="auth-broker bearer token file was readable by group or others; changed to mode 0600" path=`+path+" was=0644") {
		t.Errorf("no warning naming the file:\n%s", logs)
	}
	if !strings.Contains(logs, `msg="auth-broker bearer token loaded" path=`+path+" mode=0600") {
		t.Errorf("startup line does not show the real mode:\n%s", logs)
	}
	if b.token != tok {
		t.Error("the existing token was replaced")
	}
}

// Without a token every path but the open ones is 401, escaped spellings
// of the open ones included: routing is not revealed to anonymous callers.
func TestBrokerAnonymousPathsAre401(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	for path, want := range map[string]int{
		"/v1/healthz":    http.StatusOK,
		"/v1/%68ealthz":  http.StatusUnauthorized,
		"/%68ealthz":     http.StatusUnauthorized,
		"/healthz":       http.StatusUnauthorized,
		"/no/such/route": http.StatusUnauthorized,
		"/v1/snapshot":   http.StatusUnauthorized,
	} {
		resp, body, _ := httpxtest.RawExchange(t, b.url, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", waitLong)
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
}
