package brokerapi_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/brokerapi"
)

// BenchmarkBlockFanout100 measures a block post (POST
// /v1/credential/:id/block over a real listener, a real vault write)
// reaching 100 capable SSE subscribers: latency from the post to each
// subscriber reading its entry frame (target p99 ≤ 10 ms).
func BenchmarkBlockFanout100(b *testing.B) {
	const subs = 100
	e := newEnv(b, quiet, func(s *brokerapi.Server) { s.PollInterval = time.Hour })
	fill(b, e, 10)
	recs, err := e.store.List(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	target := recs[0]
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
			req.Header.Set(brokerapi.CapabilitiesHeader, brokerapi.ClientCapabilities)
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
				if bytes.HasPrefix(line, []byte("data: {\"kind\":\"entry\"")) && bytes.Contains(line, []byte(`"blocks"`)) {
					arrivals <- time.Now()
				}
			}
		})
	}
	ready.Wait()
	client := brokerapi.NewClient(e.ts.URL, testToken, hc)
	key := vault.ProviderKey(target.Provider, target.Credential.Type)
	base := e.clk.Now().UnixMilli() + 60_000
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		// A raised deadline every time: a visible change (Decision F4).
		if err := client.PostBlock(context.Background(), target.ID, vault.CredentialBlock{ProviderKey: key, UntilMs: base + int64(i)}); err != nil {
			b.Fatal(err)
		}
		for range subs {
			select {
			case at := <-arrivals:
				lat = append(lat, at.Sub(t0))
			case <-time.After(10 * time.Second):
				b.Fatal("a subscriber missed the block")
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

// BenchmarkObservedPost100 measures POST /v1/usage/observed with 100
// entries over a real listener into the real vault (target p50 ≤ 2 ms).
func BenchmarkObservedPost100(b *testing.B) {
	e := newEnv(b, quiet)
	now := e.clk.Now().UnixMilli()
	rep := brokerapi.ClientUsageReport{InstallID: "bench-install", Hostname: "bench-host", App: "gateway"}
	for j := range 100 {
		rep.Entries = append(rep.Entries, brokerapi.ObservedUsageEntry{At: now, Provider: fmt.Sprintf("provider-%d", j%5),
			Model: fmt.Sprintf("model-%d", j), Requests: 3, InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 5000, CostUsd: 0.02})
	}
	ctx := context.Background()
	var lat []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := e.client.PostObserved(ctx, rep); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
}

// BenchmarkSnapshot1000Blocks is GET /v1/snapshot for a capable reader
// over 1 000 credentials, without blocks and with two live blocks on every
// credential (target: with ≤ without + 10 %).
func BenchmarkSnapshot1000Blocks(b *testing.B) {
	for _, withBlocks := range []bool{false, true} {
		name := "none"
		if withBlocks {
			name = "blocks"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, quiet)
			fill(b, e, 1000)
			ctx := context.Background()
			if withBlocks {
				recs, err := e.store.List(ctx, "")
				if err != nil {
					b.Fatal(err)
				}
				until := e.clk.Now().UnixMilli() + 3_600_000
				for _, r := range recs {
					key := vault.ProviderKey(r.Provider, r.Credential.Type)
					for _, scope := range []string{"", "model-policy:some-model"} {
						if _, err := e.store.PutBlock(ctx, r.ID, vault.CredentialBlock{ProviderKey: key, Scope: scope, UntilMs: until}); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			hc := e.ts.Client()
			get := func() int {
				req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/v1/snapshot", nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set(brokerapi.CapabilitiesHeader, brokerapi.ClientCapabilities)
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
			var lat []time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				get()
				lat = append(lat, time.Since(t0))
			}
			b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(size), "body-bytes")
		})
	}
}
