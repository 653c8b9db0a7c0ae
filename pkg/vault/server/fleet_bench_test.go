package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	"github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/server"
	"github.com/ompgo/omp/tools/benchcpu"
)

// BenchmarkBlockFanout100 measures a block post (POST
// /v1/credential/:id/block over a real listener, a real vault write)
// reaching 100 capable SSE subscribers: latency from the post to each
// subscriber reading its entry frame (target p99 ≤ 10 ms).
func BenchmarkBlockFanout100(b *testing.B) {
	e := newEnv(b, quiet, func(s *server.Server) { s.PollInterval = time.Hour })
	fill(b, e, 10)
	recs, err := e.store.List(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	target := recs[0]
	key := vault.ProviderKey(target.Provider, target.Credential.Type)
	base := e.clk.Now().UnixMilli() + 60_000
	var bc *client.Client // on the subscribers' transport, made once
	benchFanout(b, e, 100, true,
		func(line []byte) bool {
			return bytes.HasPrefix(line, []byte("data: {\"kind\":\"entry\"")) && bytes.Contains(line, []byte(`"blocks"`))
		},
		func(hc *http.Client, i int) error {
			if bc == nil {
				bc = client.New(e.ts.URL, testToken, hc)
			}
			// A raised deadline every time: a visible change, so every post bumps.
			return bc.PostBlock(context.Background(), target.ID,
				vault.CredentialBlock{ProviderKey: key, UntilMs: base + int64(i)})
		})
}

// BenchmarkObservedPost100 measures POST /v1/usage/observed with 100
// entries over a real listener into the real vault (target p50 ≤ 2 ms).
func BenchmarkObservedPost100(b *testing.B) {
	e := newEnv(b, quiet)
	now := e.clk.Now().UnixMilli()
	rep := api.ClientUsageReport{InstallID: "bench-install", Hostname: "bench-host", App: "gateway"}
	for j := range 100 {
		rep.Entries = append(rep.Entries, api.ObservedUsageEntry{At: now, Provider: fmt.Sprintf("provider-%d", j%5),
			Model: fmt.Sprintf("model-%d", j), Requests: 3, InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 5000, CostUsd: 0.02})
	}
	ctx := context.Background()
	var lat []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start(b)
	for b.Loop() {
		t0 := time.Now()
		if err := e.client.PostObserved(ctx, rep); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	cpu()
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
}

// BenchmarkSnapshot1000Blocks is GET /v1/snapshot for a capable reader
// over 1 000 credentials: one broker without blocks, one with a live block
// on every credential, one with two (target: one block ≤ none + 10 %).
// The variants run interleaved in one loop — every iteration sends one
// request to each, in a rotating order — so they get the same number of
// requests under the same machine load; CPU is the process CPU time
// around each request (client and server are this process). The client
// reads the body with large reads, as a JSON decoder over a buffered
// transport does, so the figure is the broker's, not an 8 KiB read loop's.
func BenchmarkSnapshot1000Blocks(b *testing.B) {
	type variant struct {
		name string
		e    *env
		hc   *http.Client
		size int
		lat  []time.Duration
		cpu  time.Duration
	}
	ctx := context.Background()
	var vs []*variant
	for perCred := range 3 {
		e := newEnv(b, quiet)
		fill(b, e, 1000)
		if perCred > 0 {
			recs, err := e.store.List(ctx, "")
			if err != nil {
				b.Fatal(err)
			}
			until := e.clk.Now().UnixMilli() + 3_600_000
			for _, r := range recs {
				key := vault.ProviderKey(r.Provider, r.Credential.Type)
				for _, scope := range []string{"", "model-policy:some-model"}[:perCred] {
					if _, err := e.store.PutBlock(ctx, r.ID, vault.CredentialBlock{ProviderKey: key, Scope: scope, UntilMs: until}); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		tr := &http.Transport{ReadBufferSize: 64 << 10}
		b.Cleanup(tr.CloseIdleConnections)
		vs = append(vs, &variant{name: fmt.Sprintf("blocks=%d", perCred), e: e, hc: &http.Client{Transport: tr}})
	}
	buf := make([]byte, 1<<20)
	get := func(v *variant) int {
		req, _ := http.NewRequest(http.MethodGet, v.e.ts.URL+"/v1/snapshot", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set(api.CapabilitiesHeader, client.Capabilities)
		resp, err := v.hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			k, err := resp.Body.Read(buf)
			n += k
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return n
	}
	for _, v := range vs {
		v.size = get(v) // warm: connection, pooled buffers, cached renders
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for j := range vs {
			v := vs[(i+j)%len(vs)]
			c0, t0 := benchcpu.Now(), time.Now()
			get(v)
			v.lat = append(v.lat, time.Since(t0))
			v.cpu += benchcpu.Now() - c0
		}
	}
	b.StopTimer()
	base := vs[0]
	for _, v := range vs {
		p50 := percentile(v.lat, 0.50)
		b.ReportMetric(float64(p50.Microseconds())/1000, v.name+"-p50-ms")
		b.ReportMetric(float64(v.cpu.Nanoseconds())/float64(len(v.lat)), v.name+"-cpu-ns/op")
		b.ReportMetric(float64(v.size), v.name+"-body-bytes")
		if v != base {
			b.ReportMetric(float64(p50)/float64(percentile(base.lat, 0.50)), v.name+"-p50-ratio")
			b.ReportMetric(float64(v.cpu)/float64(base.cpu), v.name+"-cpu-ratio")
		}
	}
}
