package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault/server"
)

const streamRequest = "GET /v1/snapshot/stream HTTP/1.1\r\nHost: broker\r\nAuthorization: Bearer " + testToken + "\r\n\r\n"

// openRawStream sends the stream request on a fresh TCP connection.
func openRawStream(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	if _, err := io.WriteString(tc, streamRequest); err != nil {
		t.Fatal(err)
	}
	return tc
}

// readFirstSnapshot reads the raw (chunked) response until the end of the
// first `snapshot` frame.
func readFirstSnapshot(c net.Conn) error {
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if i := bytes.Index(got, []byte("event: snapshot\ndata: ")); i >= 0 && bytes.Contains(got[i:], []byte("\n\n")) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("after %q: %w", got, err)
		}
	}
}

func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(ents)
}

// waitFor polls cond until it holds or the deadline passes; it returns
// whether cond held, and the last description of the state.
func waitFor(d time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok || time.Now().After(deadline) {
			return ok, state
		}
		<-tick.C
	}
}

// TestStreamCyclesReleaseResources: 1 000 subscribe/read-first-frame/close
// cycles against the real server on a real listener leave the goroutine and
// file-descriptor counts where they started (within a small constant).
func TestStreamCyclesReleaseResources(t *testing.T) {
	e := newEnv(t)
	e.upsert("anthropic", oauthCred("a@b.c", e.clk.Now().UnixMilli()+3_600_000))
	addr := e.ts.Listener.Addr().String()
	cycle := func() {
		c := openRawStream(t, addr)
		if err := readFirstSnapshot(c); err != nil {
			c.Close()
			t.Fatalf("first frame: %v", err)
		}
		c.Close()
	}
	for range 5 { // warm up lazily started goroutines (hub, pools, server)
		cycle()
	}
	const slack = 8
	settle := func(g0, fd0 int) (bool, string) {
		g, fd := runtime.NumGoroutine(), openFDs(t)
		sub := e.metricValue(t, "omp_broker_stream_subscribers")
		return g <= g0+slack && fd <= fd0+slack && sub == "0", fmt.Sprintf("goroutines %d (start %d), fds %d (start %d), subscribers %s", g, g0, fd, fd0, sub)
	}
	// The baseline is taken once the warm-up subscribers are gone.
	eventually(t, "the warm-up subscribers to leave", func() bool { return e.metricValue(t, "omp_broker_stream_subscribers") == "0" })
	g0, fd0 := runtime.NumGoroutine(), openFDs(t)
	const cycles = 1000
	for range cycles {
		cycle()
	}
	if ok, state := waitFor(10*time.Second, func() (bool, string) { return settle(g0, fd0) }); !ok {
		buf := make([]byte, 1<<20)
		t.Fatalf("after %d stream cycles resources did not return: %s\n%s", cycles, state, buf[:runtime.Stack(buf, true)])
	}
}

// smallBufListener shrinks the kernel send buffer of every accepted
// connection, so a client that stops reading stalls the server's writes
// after kilobytes instead of megabytes.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestStalledSubscriberIsDropped: a subscriber that sends its GET and never
// reads must be dropped by the per-write deadline (Server.WriteTimeout) while
// a reading subscriber keeps receiving every credential. Without the
// deadline the stalled handler blocks in Write forever and the subscriber
// gauge never drops.
func TestStalledSubscriberIsDropped(t *testing.T) {
	const writeTimeout = 200 * time.Millisecond
	e := newEnv(t, func(s *server.Server) { s.WriteTimeout = writeTimeout })
	ts := httptest.NewUnstartedServer(e.srv.Handler())
	ts.Listener = smallBufListener{ts.Listener}
	ts.Start()
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	addr := ts.Listener.Addr().String()

	// The reading subscriber.
	reader := openRawStream(t, addr)
	defer reader.Close()
	br := bufio.NewReaderSize(reader, 1<<20)
	if _, err := br.ReadString('\n'); err != nil { // status line
		t.Fatal(err)
	}
	eventually(t, "the reader to subscribe", func() bool { return e.metricValue(t, "omp_broker_stream_subscribers") == "1" })

	// The stalled subscriber: tiny receive buffer, never reads.
	stalled := openRawStream(t, addr)
	defer stalled.Close()
	if err := stalled.SetReadBuffer(1024); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stalled subscriber to subscribe", func() bool { return e.metricValue(t, "omp_broker_stream_subscribers") == "2" })

	start := time.Now()
	// The reader collects the emails of every entry frame it receives.
	const uploads = 12
	big := strings.Repeat("A", 16<<10) // 12 × 16 KiB: far beyond the ~10 KiB of buffers between server and stalled client
	var mu sync.Mutex
	seen := map[string]bool{}
	readErr := make(chan error, 1)
	go func() {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				readErr <- err
				return
			}
			if i := strings.Index(line, `"email":"`); i >= 0 && strings.Contains(line, `"kind":"entry"`) {
				email, _, _ := strings.Cut(line[i+len(`"email":"`):], `"`)
				mu.Lock()
				seen[email] = true
				mu.Unlock()
			}
		}
	}()
	for i := range uploads {
		cred := oauthCred(fmt.Sprintf("u%d@x.y", i), e.clk.Now().UnixMilli()+3_600_000)
		cred.Access = big
		body, _ := json.Marshal(map[string]any{"provider": "anthropic", "credential": map[string]any{
			"type": "oauth", "access": cred.Access, "refresh": cred.Refresh, "expires": cred.Expires, "email": cred.Email}})
		if st, _, resp := e.post("/v1/credential", string(body)); st != 200 {
			t.Fatalf("upload %d = %d %.200s", i, st, resp)
		}
	}
	published := time.Now()
	t.Logf("uploads took %v", published.Sub(start))

	ok, state := waitFor(10*time.Second, func() (bool, string) {
		v := e.metricValue(t, "omp_broker_stream_subscribers")
		return v == "1", "subscribers " + v
	})
	if !ok {
		t.Fatalf("stalled subscriber not dropped %v after the last publication (write timeout %v): %s", time.Since(published).Round(time.Millisecond), writeTimeout, state)
	}
	t.Logf("stalled subscriber dropped %v after the last publication", time.Since(published).Round(time.Millisecond))
	ok, state = waitFor(10*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == uploads, fmt.Sprintf("reader saw %d of %d credentials", len(seen), uploads)
	})
	if !ok {
		select {
		case err := <-readErr:
			state += fmt.Sprintf(" (read error: %v)", err)
		default:
		}
		t.Fatal(state)
	}
	for i := range uploads {
		if !seen[fmt.Sprintf("u%d@x.y", i)] {
			t.Fatalf("reader missed credential %d", i)
		}
	}
}
