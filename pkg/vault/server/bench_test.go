package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	"github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/server"
)

func quiet(s *server.Server) { s.Logger = slog.New(slog.DiscardHandler) }

// fill stores n credentials (3 OAuth : 1 API key) over n/10 providers.
func fill(b *testing.B, e *env, n int) {
	ctx := context.Background()
	now := e.clk.Now().UnixMilli()
	for i := range n {
		provider := fmt.Sprintf("provider-%02d", i%(n/10+1))
		var c vault.Credential
		if i%4 == 3 {
			// API keys live in providers of their own: an OAuth upload
			// disables its provider's API keys (18.1.21).
			provider = "keys-" + provider
			c = vault.Credential{Type: vault.TypeAPIKey, Key: fmt.Sprintf("sk-%06d-%s", i, strings.Repeat("k", 40))}
		} else {
			c = vault.Credential{Type: vault.TypeOAuth, Access: fmt.Sprintf("access-%06d-%s", i, strings.Repeat("a", 200)),
				Refresh: "refresh-" + fmt.Sprint(i), Expires: now + int64(i)*60_000, Email: fmt.Sprintf("user%d@example.com", i)}
		}
		if _, err := e.store.Upsert(ctx, provider, c); err != nil {
			b.Fatal(err)
		}
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkSnapshot1000 is GET /v1/snapshot over a real listener with 1 000
// credentials in the real SQLite vault (target p50 ≤ 2 ms).
func BenchmarkSnapshot1000(b *testing.B) {
	e := newEnv(b, quiet)
	fill(b, e, 1000)
	hc := e.ts.Client()
	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/v1/snapshot", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return int(n)
	}
	size := get()
	lat := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		get()
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(size), "body-bytes")
}

// BenchmarkFanout1000 measures one credential change (a real vault write)
// reaching 1 000 SSE subscribers: latency from the write call to each
// subscriber reading its entry frame (target p99 ≤ 50 ms).
func BenchmarkFanout1000(b *testing.B) {
	e := newEnv(b, quiet, func(s *server.Server) { s.PollInterval = time.Hour })
	fill(b, e, 10)
	ctxb := context.Background()
	benchFanout(b, e, 1000, false, func(line []byte) bool { return bytes.Equal(line, []byte("event: entry\n")) },
		func(_ *http.Client, i int) error {
			_, err := e.store.Upsert(ctxb, "provider-00", vault.Credential{Type: vault.TypeAPIKey, Key: fmt.Sprintf("sk-change-%d", i)})
			return err
		})
}

// benchFanout holds subs SSE subscribers of e's snapshot stream (sending
// the capabilities header when capable) and, for each round of b's loop,
// measures from change(i) to each subscriber reading a line for which
// arrived holds; it reports their p50 and p99. change gets the
// subscribers' HTTP client.
func benchFanout(b *testing.B, e *env, subs int, capable bool, arrived func(line []byte) bool, change func(hc *http.Client, i int) error) {
	tr := &http.Transport{MaxIdleConnsPerHost: subs + 4}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	arrivals := make(chan time.Time, subs)
	var ready, wg sync.WaitGroup
	for range subs {
		ready.Add(1)
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+"/v1/snapshot/stream", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			if capable {
				req.Header.Set(api.CapabilitiesHeader, client.Capabilities)
			}
			resp, err := hc.Do(req)
			if err != nil {
				ready.Done()
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReaderSize(resp.Body, 64<<10)
			first := true
			for {
				line, err := br.ReadSlice('\n')
				if err != nil && err != bufio.ErrBufferFull {
					return
				}
				if first && bytes.HasPrefix(line, []byte("data: ")) {
					first = false
					ready.Done()
				}
				if arrived(line) {
					arrivals <- time.Now()
				}
			}
		})
	}
	ready.Wait()
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if err := change(hc, i); err != nil {
			b.Fatal(err)
		}
		for range subs {
			select {
			case at := <-arrivals:
				lat = append(lat, at.Sub(t0))
			case <-time.After(10 * time.Second):
				b.Fatal("a subscriber missed the change")
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	cancel()
	e.ts.CloseClientConnections()
	wg.Wait()
}

// BenchmarkIdleSubscriberMemory measures heap + stacks per idle stream
// subscriber, server side (its handler goroutine, net/http's connection
// goroutine and buffers, the keepalive ticker) plus the raw client socket
// (target ≤ 32 KiB).
func BenchmarkIdleSubscriberMemory(b *testing.B) {
	const subs = 1000
	e := newEnv(b, quiet)
	fill(b, e, 10)
	addr := strings.TrimPrefix(e.ts.URL, "http://")
	req := []byte("GET /v1/snapshot/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testToken + "\r\n\r\n")
	for b.Loop() {
		before := memInUse()
		conns := make([]net.Conn, 0, subs)
		buf := make([]byte, 64<<10)
		for range subs {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Write(req); err != nil {
				b.Fatal(err)
			}
			var got []byte
			for !bytes.Contains(got, []byte("}\n\n")) {
				n, err := c.Read(buf)
				if err != nil {
					b.Fatal(err)
				}
				got = append(got, buf[:n]...)
			}
			conns = append(conns, c)
		}
		buf = nil
		after := memInUse()
		b.ReportMetric(float64(after-before)/subs, "B/subscriber")
		for _, c := range conns {
			c.Close()
		}
	}
}

func memInUse() uint64 {
	// Several cycles: each GC halves at most the stacks of idle goroutines,
	// so this measures the steady state of a long-idle subscriber.
	for range 8 {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if testing.Verbose() {
		fmt.Printf("heap %d stack %d goroutines %d\n", m.HeapInuse, m.StackInuse, runtime.NumGoroutine())
	}
	return m.HeapInuse + m.StackInuse
}
