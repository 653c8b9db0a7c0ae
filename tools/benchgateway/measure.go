package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// request is one request shape: its path and body.
type request struct {
	path string
	body []byte
}

var (
	anthropicSmall  = request{"/v1/messages", []byte(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"Say hello"}]}`)}
	anthropicStream = request{"/v1/messages", []byte(`{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"` + longMarker + `"}]}`)}
	anthropicHold   = request{"/v1/messages", []byte(`{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"` + holdMarker + `"}]}`)}
	embedOurs       = request{"/v1/embeddings", []byte(`{"model":"openai/text-embedding-3-small","input":"The quick brown fox jumps over the lazy dog"}`)}
	embedBare       = request{"/v1/embeddings", []byte(`{"model":"text-embedding-3-small","input":"The quick brown fox jumps over the lazy dog"}`)}
	chatSmall       = request{"/v1/chat/completions", []byte(`{"model":"anthropic/claude-sonnet-4-5","messages":[{"role":"user","content":"Say hello"}]}`)}
	chatStream      = request{"/v1/chat/completions", []byte(`{"model":"anthropic/claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"` + longMarker + `"}]}`)}
	chatHold        = request{"/v1/chat/completions", []byte(`{"model":"anthropic/claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"` + holdMarker + `"}]}`)}
	anthropicBig    = bigRequest(false)
	chatBig         = bigRequest(true)
)

// The gateway's requests in the Gemini API (-inbound gemini): the same
// conversations, the model and the stream flag in the path.
const geminiModelPath = "/v1beta/models/anthropic/claude-sonnet-4-5"

var (
	geminiSmall  = request{geminiModelPath + ":generateContent", []byte(`{"contents":[{"role":"user","parts":[{"text":"Say hello"}]}]}`)}
	geminiStream = request{geminiModelPath + ":streamGenerateContent?alt=sse", []byte(`{"contents":[{"role":"user","parts":[{"text":"` + longMarker + `"}]}]}`)}
	geminiHold   = request{geminiModelPath + ":streamGenerateContent?alt=sse", []byte(`{"contents":[{"role":"user","parts":[{"text":"` + holdMarker + `"}]}]}`)}
	geminiBig    = bigGeminiRequest()
)

// bigGeminiRequest is bigRequest's conversation as Gemini contents.
func bigGeminiRequest() request {
	var b bytes.Buffer
	b.WriteString(`{"contents":[`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		role := "user"
		if i%2 == 1 {
			role = "model"
		}
		text := fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 37))
		fmt.Fprintf(&b, `{"role":%q,"parts":[{"text":%q}]}`, role, text)
	}
	b.WriteString(`]}`)
	return request{geminiModelPath + ":generateContent", b.Bytes()}
}

// bigRequest is a ~300 KB conversation of 300 messages (~1 KB each),
// alternating user and assistant, in the chat or the Messages format.
func bigRequest(chat bool) request {
	var b bytes.Buffer
	if chat {
		b.WriteString(`{"model":"anthropic/claude-sonnet-4-5","messages":[`)
	} else {
		b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[`)
	}
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
	if chat {
		return request{"/v1/chat/completions", b.Bytes()}
	}
	return request{"/v1/messages", b.Bytes()}
}

var client = &http.Client{Transport: &http.Transport{
	MaxIdleConns: 4096, MaxIdleConnsPerHost: 2048, DisableCompression: true, IdleConnTimeout: time.Minute,
}}

func send(ctx context.Context, base, token string, r request) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+r.path, bytes.NewReader(r.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	} else {
		req.Header.Set("x-api-key", "sk-ant-api03-benchgateway")
	}
	return client.Do(req)
}

// endpoint is one way to reach the fake: direct, through the bare proxy,
// through the gateway; each has its own request shapes.
type endpoint struct {
	name                     string
	url, token               string
	small, stream, big, hold request
	embed                    request
	pid                      int
}

// latency sends r n times one after another and returns each duration
// (request sent → body fully read).
func latency(e *endpoint, r request, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		d, err := complete(e, r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// complete sends r once: the time from sending to the body fully read.
func complete(e *endpoint, r request) (time.Duration, error) {
	t0 := time.Now()
	resp, err := send(context.Background(), e.url, e.token, r)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return 0, fmt.Errorf("%s %s: %d %v", e.name, r.path, resp.StatusCode, err)
	}
	return time.Since(t0), nil
}

var firstToken = []byte("Tok0 ")

// firstTokenOnce streams r once: the time to the first text delta.
func firstTokenOnce(e *endpoint, r request) (time.Duration, error) {
	t0 := time.Now()
	resp, err := send(context.Background(), e.url, e.token, r)
	if err != nil {
		return 0, err
	}
	d, err := untilFirstToken(resp.Body)
	if err == nil {
		d = time.Since(t0)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return 0, fmt.Errorf("%s stream: %d %v", e.name, resp.StatusCode, err)
	}
	return d, nil
}

// interleaved measures n requests per endpoint in turns: each endpoint in
// turn sends one unmeasured request (its processes wake up from the others'
// turn) and then a block of measured ones, the order rotating each turn.
// Drift in the machine's speed (a noisy neighbour, a frequency step) then
// lands on all endpoints alike instead of on whichever ran its n then; a
// turn of one request each would instead measure how fast an idle process
// wakes on this VM, for every request. shape picks each endpoint's request;
// the result is each endpoint's p50.
func interleaved(eps []*endpoint, shape func(*endpoint) request, once func(*endpoint, request) (time.Duration, error), n int) ([]time.Duration, error) {
	const block = 20
	ds := make([][]time.Duration, len(eps))
	for turn := 0; len(ds[0]) < n; turn++ {
		for j := range eps {
			k := (turn + j) % len(eps)
			e := eps[k]
			m := min(block, n-len(ds[k]))
			for i := -1; i < m; i++ {
				d, err := once(e, shape(e))
				if err != nil {
					return nil, err
				}
				if i >= 0 {
					ds[k] = append(ds[k], d)
				}
			}
		}
	}
	out := make([]time.Duration, len(eps))
	for k := range ds {
		out[k] = p50(ds[k])
	}
	return out, nil
}

func untilFirstToken(body io.Reader) (time.Duration, error) {
	br := bufio.NewReaderSize(body, 4096)
	for {
		line, err := br.ReadSlice('\n')
		if bytes.Contains(line, firstToken) {
			return 0, nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return 0, fmt.Errorf("stream ended before the first token: %w", err)
		}
	}
}

// throughput runs conc workers sending r for d, worker i through
// eps[i mod len(eps)]; it returns completions per second and the number of
// completions. r.body is sent as is, so every endpoint must take the same
// request shape.
func throughput(eps []*endpoint, r request, conc int, d time.Duration) (float64, int64, error) {
	var n atomic.Int64
	var firstErr atomic.Value
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := range conc {
		e := eps[w%len(eps)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				resp, err := send(context.Background(), e.url, e.token, r)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					firstErr.CompareAndSwap(nil, fmt.Errorf("%s: status %d", e.name, resp.StatusCode))
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, err
	}
	return float64(n.Load()) / time.Since(t0).Seconds(), n.Load(), nil
}

// openStreams opens n held streams through e at once, waits until every
// one delivered its first token, reads the process's RSS, then releases
// them. It returns the RSS growth per open stream in KiB.
func openStreams(e *endpoint, f *fake, n int) (float64, error) {
	time.Sleep(300 * time.Millisecond)
	before, err := rssKiB(e.pid)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ready, done sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := send(ctx, e.url, e.token, e.hold)
			if err != nil {
				errs <- err
				ready.Done()
				return
			}
			defer resp.Body.Close()
			_, err = untilFirstToken(resp.Body)
			ready.Done()
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
	ready.Wait()
	time.Sleep(300 * time.Millisecond) // let the process settle with all streams open
	open, rerr := rssKiB(e.pid)
	f.release()
	done.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("%s open streams: %w", e.name, err)
	}
	if rerr != nil {
		return 0, rerr
	}
	return float64(open-before) / float64(n), nil
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
