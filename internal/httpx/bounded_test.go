package httpx_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/httpx"
)

// logLine renders attrs as the text handler does.
func logLine(attrs ...any) string {
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
			return slog.Attr{}
		}
		return a
	}})).Info("", attrs...)
	return strings.TrimSpace(b.String())
}

func TestPeerIsTheConnectionNotTheHeader(t *testing.T) {
	trusted, err := httpx.ParseTrustedProxies("10.0.0.0/8, 192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		remote, xff, real string
		trusted           httpx.TrustedProxies
		want              string
	}{
		{"203.0.113.5:4000", "1.2.3.4", "", nil, "peer=203.0.113.5"},
		{"203.0.113.5:4000", "1.2.3.4", "", trusted, "peer=203.0.113.5"},
		{"10.1.2.3:4000", " 1.2.3.4 , 5.6.7.8", "9.9.9.9", trusted, "peer=10.1.2.3 forwarded_for=1.2.3.4"},
		{"192.0.2.7:1", "", "9.9.9.9", trusted, "peer=192.0.2.7 forwarded_for=9.9.9.9"},
		{"192.0.2.8:1", "", "9.9.9.9", trusted, "peer=192.0.2.8"},
		{"[::ffff:10.0.0.1]:1", "1.2.3.4", "", trusted, "peer=::ffff:10.0.0.1 forwarded_for=1.2.3.4"},
		{"", "1.2.3.4", "", trusted, "peer=unknown"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		if tt.xff != "" {
			r.Header.Set("X-Forwarded-For", tt.xff)
		}
		if tt.real != "" {
			r.Header.Set("X-Real-IP", tt.real)
		}
		var got string
		httpx.Guard(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got = logLine(httpx.Peer(r))
		}), httpx.ServeOptions{TrustedProxies: tt.trusted}).ServeHTTP(httptest.NewRecorder(), r)
		if got != tt.want {
			t.Errorf("remote %q xff %q real %q: %q, want %q", tt.remote, tt.xff, tt.real, got, tt.want)
		}
	}
}

func TestParseTrustedProxies(t *testing.T) {
	if tp, err := httpx.ParseTrustedProxies(""); err != nil || len(tp) != 0 {
		t.Fatalf("empty list = %v, %v", tp, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.1/x"} {
		if _, err := httpx.ParseTrustedProxies(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: error %v should name it", bad, err)
		}
	}
}

func TestClipAndMethodLabel(t *testing.T) {
	for in, want := range map[string]string{
		"GET": "GET", "PROPFIND": "OTHER", "get": "OTHER", strings.Repeat("A", 900): "OTHER", "OPTIONS": "OPTIONS",
	} {
		if got := httpx.MethodLabel(in); got != want {
			t.Errorf("MethodLabel(%.20q) = %q, want %q", in, got, want)
		}
	}
	if got := httpx.Clip("/v1/x", 128); got != "/v1/x" {
		t.Errorf("short path altered: %q", got)
	}
	long := httpx.Clip(strings.Repeat("M", 900_000), 16)
	if long != strings.Repeat("M", 16)+"…(900000 bytes)" {
		t.Errorf("long = %q", long)
	}
	if got := httpx.Clip("a\nb\x00 é", 64); got != "a%0Ab%00%20%C3%A9" {
		t.Errorf("escaped = %q", got)
	}
}

func TestLogLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &httpx.LogLimiter{Window: 10 * time.Second, Now: func() time.Time { return now }}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	r := httptest.NewRequest("GET", "/", nil)
	r.Method = strings.Repeat("X", 1<<20)
	for range 300 {
		l.LogRequest(log, "unauthorized", r)
	}
	now = now.Add(10 * time.Second)
	l.LogRequest(log, "unauthorized", r)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "suppressed=0") || !strings.Contains(lines[1], "suppressed=299") {
		t.Fatalf("lines = %q", lines)
	}
	if logs.Len() > 1024 {
		t.Fatalf("300 requests with a 1 MiB method logged %d bytes", logs.Len())
	}
}

// serve runs h behind Serve with opts on a loopback listener.
func serve(t *testing.T, h http.Handler, opts httpx.ServeOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		opts.Logger = slog.New(slog.DiscardHandler)
		opts.DrainGrace = 10 * time.Millisecond
		_ = httpx.Serve(ctx, ln, h, opts)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// A body that stops sending fails with 408 after the read timeout and the
// connection is closed; one that trickles fails at the total cap; one that
// arrived keeps a long response alive past the read timeout. Each case
// sets the other bound far out of reach (a minute), so the 408 shows which
// bound fired without timing it; the client's read deadlines only guard
// against a hang.
func TestServeBoundsBodyReads(t *testing.T) {
	const stall, total, never = 200 * time.Millisecond, time.Second, time.Minute
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := httpx.ReadBody(w, r, 1<<20, true)
		if err != nil {
			httpx.Adapter{}.Error(w, r, err)
			return
		}
		w.WriteHeader(200)
		_ = http.NewResponseController(w).Flush()
		time.Sleep(3 * stall) // the subject: a response that outlasts the read timeout
		_, _ = io.WriteString(w, "done")
	})

	t.Run("stalled", func(t *testing.T) {
		addr := serve(t, h, httpx.ServeOptions{BodyReadTimeout: stall, BodyTotalTimeout: never})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":")
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), httpx.MsgBodyTimeout) {
			t.Fatalf("status %d body %q, want 408", resp.StatusCode, body)
		}
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("connection still open after the 408")
		}
	})

	t.Run("trickle past the total cap", func(t *testing.T) {
		addr := serve(t, h, httpx.ServeOptions{BodyReadTimeout: never, BodyTotalTimeout: total})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
		var once sync.Once
		stop := make(chan struct{})
		go func() { // one byte every 100 ms: never stalls, never ends
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		defer once.Do(func() { close(stop) })
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("status %d, want 408", resp.StatusCode)
		}
		// Not before the cap (a slow machine only makes it later).
		if took := time.Since(start); took < total {
			t.Fatalf("408 after %v, before the %v total cap", took, total)
		}
	})

	t.Run("long response after the body", func(t *testing.T) {
		addr := serve(t, h, httpx.ServeOptions{BodyReadTimeout: stall, BodyTotalTimeout: never})
		resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || string(body) != "done" {
			t.Fatalf("status %d body %q err %v", resp.StatusCode, body, err)
		}
	})
}

// A request line and headers over MaxHeaderBytes are refused with 431
// before any handler runs.
func TestServeLimitsHeaderBytes(t *testing.T) {
	ran := false
	addr := serve(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }), httpx.ServeOptions{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go fmt.Fprintf(c, "%s / HTTP/1.1\r\nHost: x\r\n\r\n", strings.Repeat("M", 200<<10))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || ran {
		t.Fatalf("status %d (handler ran: %v), want 431", resp.StatusCode, ran)
	}
}
