package httpx_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/httpx"
)

func TestAdapter(t *testing.T) {
	var logs bytes.Buffer
	a := httpx.Adapter{Logger: slog.New(slog.NewTextHandler(&logs, nil)), CrashMessage: "auth-broker handler crashed"}
	tests := []struct {
		name     string
		h        httpx.HandlerFunc
		status   int
		body     string // "" with crashLog: the request-id message
		crashLog bool
	}{
		{"httpx error keeps its message", func(http.ResponseWriter, *http.Request) error {
			return &httpx.Error{Status: 404, Message: "No credential with id=3"}
		}, 404, `{"error":"No credential with id=3"}`, false},
		{"wrapped httpx error keeps its message", func(http.ResponseWriter, *http.Request) error {
			return errors.Join(errors.New("ctx"), &httpx.Error{Status: 400, Message: "bad"})
		}, 400, `{"error":"bad"}`, false},
		{"unknown error is a generic 500", func(http.ResponseWriter, *http.Request) error {
			return errors.New("db exploded secret-token")
		}, 500, "", true},
		{"httpx error without message is a generic 500", func(http.ResponseWriter, *http.Request) error {
			return &httpx.Error{Status: 400, Err: errors.New("secret-token")}
		}, 500, "", true},
		{"panic is a generic 500", func(http.ResponseWriter, *http.Request) error {
			panic("boom")
		}, 500, "", true},
		{"success passes through", func(w http.ResponseWriter, _ *http.Request) error {
			return httpx.WriteJSON(w, 201, map[string]bool{"ok": true})
		}, 201, `{"ok":true}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs.Reset()
			rec := httptest.NewRecorder()
			a.Handler(tt.h).ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
			want := tt.body
			id := rec.Header().Get("X-Request-Id")
			if tt.crashLog {
				if len(id) != 16 {
					t.Fatalf("X-Request-Id = %q", id)
				}
				want = `{"error":"internal error (request id ` + id + `)"}`
			} else if id != "" {
				t.Fatalf("X-Request-Id %q on an expected error", id)
			}
			if rec.Code != tt.status || rec.Body.String() != want || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("= %d %q %q", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"))
			}
			if got := strings.Contains(logs.String(), `msg="auth-broker handler crashed" method=GET path=/x error=`); got != tt.crashLog {
				t.Fatalf("crash logged = %v:\n%s", got, logs.String())
			}
			if tt.crashLog && !strings.Contains(logs.String(), "requestId="+id+"\n") {
				t.Fatalf("crash line does not carry request id %s:\n%s", id, logs.String())
			}
			if strings.Contains(rec.Body.String(), "goroutine") || strings.Contains(rec.Body.String(), "secret") {
				t.Fatal("internals sent to the client")
			}
		})
	}
}

// TestAdapterClassifyRender: the service decides what errors mean and how
// they look; the adapter sets Retry-After and X-Request-Id for it.
func TestAdapterClassifyRender(t *testing.T) {
	errBusy := errors.New("busy")
	a := httpx.Adapter{
		Logger: slog.New(slog.DiscardHandler),
		Classify: func(err error) httpx.Problem {
			if errors.Is(err, errBusy) {
				return httpx.Problem{Status: 503, Message: "try later", RetryAfter: 1500 * time.Millisecond}
			}
			return httpx.DefaultClassify(err)
		},
		Render: func(w http.ResponseWriter, _ *http.Request, p httpx.Problem) {
			_ = httpx.WriteJSON(w, p.Status, map[string]any{"type": "error", "error": map[string]string{"message": p.Message, "request_id": p.RequestID}})
		},
	}
	rec := httptest.NewRecorder()
	a.Handler(func(http.ResponseWriter, *http.Request) error { return errBusy }).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "2" || rec.Body.String() != `{"error":{"message":"try later","request_id":""},"type":"error"}` {
		t.Fatalf("= %d %q %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	rec = httptest.NewRecorder()
	a.Handler(func(http.ResponseWriter, *http.Request) error { return errors.New("x") }).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	id := rec.Header().Get("X-Request-Id")
	if rec.Code != 500 || id == "" || rec.Header().Get("Retry-After") != "" ||
		rec.Body.String() != `{"error":{"message":"internal error (request id `+id+`)","request_id":"`+id+`"},"type":"error"}` {
		t.Fatalf("= %d %q %q", rec.Code, id, rec.Body.String())
	}
}

func TestBearer(t *testing.T) {
	for _, bad := range [][]string{nil, {}, {""}, {" tok"}, {"tok\n"}} {
		if _, err := httpx.NewBearer(bad); err == nil {
			t.Errorf("NewBearer(%q) accepted", bad)
		}
	}
	b, err := httpx.NewBearer([]string{"alpha", "beta-longer-token"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		header string
		want   bool
	}{
		{"", false}, {"Bearer", false}, {"Bearer ", false}, {"Bearer  ", false}, {"Bearer alpha", true},
		{"bearer alpha", true}, {"BEARER\talpha ", true}, {"Bearer beta-longer-token", true}, {"Bearer alph", false},
		{"Bearer alphaa", false}, {"Bearer  alpha beta", false}, {"Bearealpha", false}, {"Basic alpha", false}, {"Beareralpha", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		if got := b.Authorized(r); got != tt.want {
			t.Errorf("Authorized(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer x", "bearer  y ", "Bearer", "Basic z", "BEARER\t\tq"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := httpx.BearerToken(h)
		if ok && (tok == "" || strings.TrimSpace(tok) != tok || !strings.HasSuffix(strings.TrimSpace(h), tok)) {
			t.Fatalf("BearerToken(%q) = %q", h, tok)
		}
	})
}

func TestReadJSON(t *testing.T) {
	tests := []struct {
		name, body string
		allowEmpty bool
		status     int
		msg        string
		want       string
	}{
		{"object is returned", `{"a":1}`, false, 0, "", `{"a":1}`},
		{"empty body is required", "", false, 400, "Request body required", ""},
		{"empty body may be allowed", "", true, 0, "", `{}`},
		{"syntax error is invalid", `{"a":`, false, 400, "Invalid JSON body: unexpected end of JSON input", ""},
		{"trailing garbage is invalid", `{} x`, true, 400, "Invalid JSON body: invalid character 'x' after top-level value", ""},
		{"oversized body is too large", strings.Repeat(" ", 65) + "{}", false, 413, "request body too large", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			raw, err := httpx.ReadJSON(httptest.NewRecorder(), r, 64, tt.allowEmpty)
			var he *httpx.Error
			if errors.As(err, &he) != (tt.status != 0) || (he != nil && (he.Status != tt.status || he.Message != tt.msg)) || string(raw) != tt.want {
				t.Fatalf("= %q %v", raw, err)
			}
		})
	}
}

func FuzzReadJSON(f *testing.F) {
	f.Add([]byte(`{"cause":"x"}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, err := httpx.ReadJSON(httptest.NewRecorder(), httptest.NewRequest("POST", "/", bytes.NewReader(b)), 1<<10, true)
		if err == nil && len(b) > 0 && !bytes.Equal(raw, b) {
			t.Fatal("body altered")
		}
		if p := httpx.DefaultClassify(err); err != nil && p.Unexpected {
			t.Fatalf("unclassified error %v", err)
		}
	})
}

func TestServeShutsDownGracefully(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.WriteHeader(200)
			http.NewResponseController(w).Flush()
			close(started)
			<-r.Context().Done() // a stream ends when its context is cancelled
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- httpx.Serve(ctx, ln, h, httpx.ServeOptions{DrainGrace: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	}()
	url := "http://" + ln.Addr().String()
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sresp, err := http.Get(url + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := http.Get(url + "/"); err == nil {
		t.Fatal("listener still open after shutdown")
	}
}

// A stream that ends on its own within DrainGrace is delivered whole: its
// context is not cancelled by the shutdown (the gateway's ShutdownGrace),
// and Serve returns once it ended, not at the end of the grace.
func TestServeLetsStreamsFinishWithinDrainGrace(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	started, finish := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte("first\n"))
		http.NewResponseController(w).Flush()
		close(started)
		select {
		case <-finish:
			_, _ = w.Write([]byte("last\n"))
		case <-r.Context().Done():
			_, _ = w.Write([]byte("cancelled\n"))
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// A grace far beyond the test's hang guard: a Serve that waited it out
	// instead of returning with the stream would fail the test.
	go func() {
		done <- httpx.Serve(ctx, ln, h, httpx.ServeOptions{DrainGrace: time.Minute, ShutdownTimeout: 2 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
	}()
	resp, err := http.Get("http://" + addr + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	cancel()
	// The stream ends only once the shutdown is under way (the listener
	// is closed).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still open 10 s after cancel")
		}
	}
	close(finish)
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "first\nlast\n" {
		t.Fatalf("stream body %q, %v; want it to finish on its own", body, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return once the stream ended; it waits out the drain grace")
	}
}
