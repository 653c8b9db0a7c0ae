package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// deltas is the number of text deltas of the streamed reply.
const deltas = 50

// fake is a local Anthropic Messages API (and an OpenAI /v1/embeddings
// answering one fixed vector) on plain HTTP: a request with
// "stream":true gets an SSE stream (one flush per event); a non-streaming
// one gets the JSON message. A request whose body holds holdMarker gets
// message_start and the first delta, then is held until release (or the
// client goes away): the open streams of the memory measurement.
type fake struct {
	url string
	srv *http.Server

	mu   sync.Mutex
	hold chan struct{} // guarded by mu

	lastKey atomic.Value // string: the x-api-key of the latest request
}

// Markers in the prompt text that select the reply.
const (
	holdMarker = "HOLD-THIS-STREAM"
	longMarker = "STREAM-50-DELTAS"
)

var (
	smallJSON = []byte(`{"id":"msg_bench","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello world"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)
	// shortSSE is the same answer as a stream (the gateway always streams
	// upstream, even for a non-streaming client request).
	shortSSE  = sseEvents([]string{"Hello ", "world"})
	streamSSE = sseEvents(tokens(deltas))
)

// embeddingJSON is an OpenAI embeddings answer: one 1536-dimension
// vector, the size of text-embedding-3-small's.
var embeddingJSON = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[`)
	for i := range 1536 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%.8f", float64(i%97)/97-0.5)
	}
	b.WriteString(`]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`)
	return b.Bytes()
}()

func tokens(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Tok%d ", i)
	}
	return out
}

// sseEvents is an Anthropic stream answering the concatenated texts, one
// event per element.
func sseEvents(texts []string) [][]byte {
	var ev [][]byte
	add := func(name, data string) { ev = append(ev, []byte("event: "+name+"\ndata: "+data+"\n\n")) }
	add("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
	add("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for _, t := range texts {
		add("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+t+`"}}`)
	}
	add("content_block_stop", `{"type":"content_block_stop","index":0}`)
	add("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, len(texts)))
	add("message_stop", `{"type":"message_stop"}`)
	return ev
}

func startFake() (*fake, error) { return startFakeOn("127.0.0.1:0") }

// startFakeOn is startFake listening on bind.
func startFakeOn(bind string) (*fake, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	f := &fake{url: "http://" + ln.Addr().String(), hold: make(chan struct{})}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
	go f.srv.Serve(ln)
	return f, nil
}

// release lets every held stream finish and arms a new hold.
func (f *fake) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.hold)
	f.hold = make(chan struct{})
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings" {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(embeddingJSON)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.NotFound(w, r)
		return
	}
	f.lastKey.Store(r.Header.Get("x-api-key"))
	body, _ := io.ReadAll(r.Body)
	if !bytes.Contains(body, []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(smallJSON)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	events := shortSSE
	held := bytes.Contains(body, []byte(holdMarker))
	if held || bytes.Contains(body, []byte(longMarker)) {
		events = streamSSE
	}
	if held {
		f.mu.Lock()
		hold := f.hold
		f.mu.Unlock()
		for _, ev := range events[:3] {
			_, _ = w.Write(ev)
		}
		fl.Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
		events = events[3:]
	}
	for _, ev := range events {
		if _, err := w.Write(ev); err != nil {
			return
		}
		fl.Flush()
	}
}
