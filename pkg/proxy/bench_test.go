package proxy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/tools/benchcpu"
)

// benchGateway is a gateway in front of a fake Anthropic API that answers
// every request with the anthropicText stream, one flush per event.
func benchGateway(b *testing.B) (url string, client *http.Client) {
	b.Helper()
	events := strings.SplitAfter(anthropicText, "\n\n")
	// Not newUpstream: it keeps every request body, which would dominate
	// the profile of the large request.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		for _, ev := range events {
			_, _ = io.WriteString(w, ev)
			fl.Flush()
		}
	}))
	b.Cleanup(up.Close)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	gw := gateway(b, src, map[string]string{"anthropic": up.URL}, nil)
	client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	return gw.URL, client
}

// bigChat is a ~300 KB chat conversation of 300 messages, as in
// tools/benchgateway.
func bigChat(stream bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"model":"anthropic/claude-sonnet-4-5","stream":%t,"messages":[`, stream)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		text := fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 37))
		fmt.Fprintf(&b, `{"role":%q,"content":%q}`, role, text)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func benchPost(b *testing.B, c *http.Client, url string, body []byte) *http.Response {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gatewayToken)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		b.Fatalf("status %d: %s", resp.StatusCode, msg)
	}
	return resp
}

// BenchmarkChatToAnthropic is a non-streamed chat completion through the
// gateway to an Anthropic upstream, end to end over loopback.
func BenchmarkChatToAnthropic(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"small", []byte(`{"model":"anthropic/claude-sonnet-4-5","messages":[{"role":"user","content":"Say hello"}]}`)},
		{"300KB", bigChat(false)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			url, c := benchGateway(b)
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			done := benchcpu.Start(b)
			for b.Loop() {
				resp := benchPost(b, c, url, bc.body)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done()
		})
	}
}

// BenchmarkStreamTTFT is a streamed chat completion through the gateway;
// ttft-ns/op is the time from sending to the first content delta.
func BenchmarkStreamTTFT(b *testing.B) {
	url, c := benchGateway(b)
	body := []byte(`{"model":"anthropic/claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"Say hello"}]}`)
	b.ReportAllocs()
	var ttft time.Duration
	for b.Loop() {
		t0 := time.Now()
		resp := benchPost(b, c, url, body)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal("stream ended before the first token: ", err)
			}
			if bytes.Contains(line, []byte(`"content":"Hello `)) {
				break
			}
		}
		ttft += time.Since(t0)
		_, _ = io.Copy(io.Discard, br)
		resp.Body.Close()
	}
	b.ReportMetric(float64(ttft.Nanoseconds())/float64(b.N), "ttft-ns/op")
}

// BenchmarkOpenStreams holds 200 streams open at once, through the
// gateway (chat format, Anthropic upstream) and through a bare
// httputil.ReverseProxy, and reports the heap+stack in use per open
// stream. Both figures include the client and the fake upstream (same
// for both); the difference is the gateway's own share.
func BenchmarkOpenStreams(b *testing.B) {
	const n = 200
	events := strings.SplitAfter(anthropicText, "\n\n")
	var mu sync.Mutex
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		rel := release
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		for i, ev := range events {
			if i == 3 {
				select {
				case <-rel:
				case <-r.Context().Done():
					return
				}
			}
			_, _ = io.WriteString(w, ev)
			fl.Flush()
		}
	}))
	b.Cleanup(up.Close)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	gw := gateway(b, src, map[string]string{"anthropic": up.URL}, nil)
	target, _ := neturl.Parse(up.URL)
	bare := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		FlushInterval: -1,
	})
	b.Cleanup(bare.Close)

	for _, tc := range []struct{ name, url, path, body, first string }{
		{"gateway", gw.URL, "/v1/chat/completions", `{"model":"anthropic/claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"content":"Hello `},
		{"bare", bare.URL, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"text":"Hello `},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perStream, stacks float64
			for b.Loop() {
				c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
				mu.Lock()
				release = make(chan struct{})
				rel := release
				mu.Unlock()
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				var ready, done sync.WaitGroup
				for range n {
					ready.Add(1)
					done.Add(1)
					go func() {
						defer done.Done()
						req, _ := http.NewRequest(http.MethodPost, tc.url+tc.path, strings.NewReader(tc.body))
						req.Header.Set("Authorization", "Bearer "+gatewayToken)
						req.Header.Set("x-api-key", "sk-ant-bench")
						req.Header.Set("Content-Type", "application/json")
						resp, err := c.Do(req)
						if err != nil {
							b.Error(err)
							ready.Done()
							return
						}
						defer resp.Body.Close()
						br := bufio.NewReader(resp.Body)
						for {
							line, err := br.ReadSlice('\n')
							if err != nil {
								b.Error("stream ended before the first token: ", err)
								ready.Done()
								return
							}
							if bytes.Contains(line, []byte(tc.first)) {
								break
							}
						}
						ready.Done()
						<-rel
						_, _ = io.Copy(io.Discard, br)
					}()
				}
				ready.Wait()
				time.Sleep(50 * time.Millisecond) // let every goroutine park
				runtime.GC()
				runtime.ReadMemStats(&after)
				close(rel)
				done.Wait()
				c.CloseIdleConnections()
				used := func(m *runtime.MemStats) float64 { return float64(m.HeapInuse + m.StackInuse) }
				perStream = (used(&after) - used(&before)) / n
				stacks = (float64(after.StackInuse) - float64(before.StackInuse)) / n
			}
			b.ReportMetric(perStream/1024, "KiB/stream")
			b.ReportMetric(stacks/1024, "stack-KiB/stream")
		})
	}
}

// BenchmarkEmbeddings is one embeddings request through the gateway: a
// short input, a 1536-float answer (text-embedding-3-small's size), as in
// tools/benchgateway.
func BenchmarkEmbeddings(b *testing.B) {
	var answer bytes.Buffer
	answer.WriteString(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[`)
	for i := range 1536 {
		if i > 0 {
			answer.WriteByte(',')
		}
		fmt.Fprintf(&answer, "%.8f", float64(i%97)/97-0.5)
	}
	answer.WriteString(`]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer.Bytes())
	}))
	b.Cleanup(up.Close)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openai", "sk-vault")}}
	gw := gateway(b, src, map[string]string{"openai": up.URL + "/v1"}, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	body := []byte(`{"model":"openai/text-embedding-3-small","input":"The quick brown fox jumps over the lazy dog"}`)
	b.ReportAllocs()
	done := benchcpu.Start(b)
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/embeddings", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+gatewayToken)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	done()
}
