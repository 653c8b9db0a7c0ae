package httpx

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBufferPoolRecyclesLargeBuffersOnly(t *testing.T) {
	b := GetBuffer(300 << 10)
	if cap(b) != 1<<20 || len(b) != 0 {
		t.Fatalf("GetBuffer(300 KiB): len %d cap %d, want 0 and the 1 MiB class", len(b), cap(b))
	}
	b = append(b, "x"...)
	PutBuffer(b)
	// sync.Pool may drop any Put (GC; the race detector drops one in four
	// on purpose), so a reuse of any buffer released so far is checked
	// over a few tries, not of b alone.
	released := map[*byte]bool{&b[0]: true}
	reused := false
	for range 10 {
		c := GetBuffer(200 << 10)
		if len(c) != 0 {
			t.Fatalf("recycled buffer has len %d", len(c))
		}
		if cap(c) == cap(b) && released[&c[:1][0]] {
			reused = true
			break
		}
		released[&c[:1][0]] = true
		PutBuffer(c)
	}
	if !reused {
		t.Error("a released 1 MiB buffer was never handed out again")
	}
	if s := GetBuffer(100); cap(s) > MinPooled {
		t.Errorf("small body got cap %d: a small request must not pin a pooled buffer", cap(s))
	}
	if huge := GetBuffer(8 << 20); cap(huge) != 8<<20 {
		t.Errorf("8 MiB body: cap %d", cap(huge))
	}
}

func TestBufferRequestRecyclesOnlyWhenCallerAndTransportAreDone(t *testing.T) {
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer srv.Close()
	body := append(GetBuffer(300<<10), strings.Repeat("abcdefgh", 300<<7)...)
	want := string(body)
	req, release, err := NewBufferRequest(context.Background(), http.MethodPost, srv.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentLength != int64(len(want)) || req.GetBody == nil {
		t.Fatalf("ContentLength %d GetBody %v: want %d and a GetBody", req.ContentLength, req.GetBody != nil, len(want))
	}
	rb := req.Body.(*bufferReader).rb
	// A rewind (what a redirect or a stale-connection retry does) reads
	// the same bytes and holds the buffer until closed.
	again, _ := req.GetBody()
	if b, _ := io.ReadAll(again); string(b) != want {
		t.Fatal("GetBody reader: wrong bytes")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if b := <-got; string(b) != want {
		t.Fatalf("upstream got %d bytes, want %d", len(b), len(want))
	}
	// Transport done (poll: it may close the body after Do returns), the
	// caller and the rewound reader still hold the buffer.
	deadline := time.Now().Add(5 * time.Second)
	for rb.refs.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := rb.refs.Load(); n != 2 || rb.buf == nil {
		t.Fatalf("after Do: %d references (want 2: caller, open GetBody reader), buffer nil %v", n, rb.buf == nil)
	}
	release()
	release() // idempotent
	if rb.buf == nil {
		t.Fatal("buffer recycled while a GetBody reader is open")
	}
	again.Close()
	again.Close()
	if rb.refs.Load() != 0 || rb.buf != nil {
		t.Fatalf("all done: %d references, buffer recycled %v", rb.refs.Load(), rb.buf == nil)
	}
	if n, err := again.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Fatalf("read after close: %d, %v", n, err)
	}
}

func TestBufferRequestCloseDuringRead(t *testing.T) {
	req, release, err := NewBufferRequest(context.Background(), http.MethodPost, "http://127.0.0.1/", append(GetBuffer(100<<10), make([]byte, 100<<10)...))
	if err != nil {
		t.Fatal(err)
	}
	release()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := make([]byte, 512)
		for {
			if _, err := req.Body.Read(p); err != nil {
				return
			}
		}
	}()
	req.Body.Close()
	<-done // the race detector checks the buffer is not recycled under a read
}

func TestBufferRequestBadURL(t *testing.T) {
	_, release, err := NewBufferRequest(context.Background(), http.MethodPost, "://", GetBuffer(100<<10))
	if err == nil {
		t.Fatal("no error for a bad URL")
	}
	release()
}

func TestBufferRequestSmallBodyIsDroppedOnceSent(t *testing.T) {
	body := append(GetBuffer(4<<10), bytes.Repeat([]byte("x"), InMemoryBody+1)...)
	req, release, err := NewBufferRequest(context.Background(), http.MethodPost, "http://127.0.0.1/", body)
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentLength != InMemoryBody+1 || req.GetBody == nil {
		t.Fatalf("small body: ContentLength %d, GetBody %v", req.ContentLength, req.GetBody != nil)
	}
	rb := req.Body.(*bufferReader).rb
	release()
	req.Body.Close()
	if rb.buf != nil {
		t.Fatal("a sent small body is still referenced by its request")
	}
}

// countingConn counts the writes on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A tiny request goes out in one write, headers and body together; a
// larger one as headers, then body.
func TestBufferRequestTinyBodyIsOneWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	var writes atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countingConn{c, &writes}, err
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, tc := range []struct {
		size, writes int
	}{{InMemoryBody, 1}, {InMemoryBody + 1, 2}} {
		writes.Store(0)
		body := append(GetBuffer(tc.size), bytes.Repeat([]byte("x"), tc.size)...)
		req, release, err := NewBufferRequest(context.Background(), http.MethodPost, srv.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		release()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := writes.Load(); int(got) != tc.writes {
			t.Errorf("a %d-byte body went out in %d writes, want %d", tc.size, got, tc.writes)
		}
	}
}
