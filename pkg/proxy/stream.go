package proxy

import (
	"net/http"
	"sync"
	"time"

	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/llm"
)

// PingInterval is how often an Anthropic Messages stream gets a ping frame.
const PingInterval = 15 * time.Second

// startStream answers 200 with the SSE headers (or the format's own
// streamed Content-Type) and sends them at once; nil when the client is
// gone.
func startStream(w http.ResponseWriter, f *format) *sse.Writer {
	sse.SetHeaders(w.Header())
	if f.streamType != "" {
		w.Header()["Content-Type"] = f.jsonTypeValue
	}
	w.WriteHeader(http.StatusOK)
	if http.NewResponseController(w).Flush() != nil {
		return nil
	}
	return sse.NewHTTPWriter(w, 0)
}

// writeStream sends the stream as the format's SSE on out (startStream),
// one flush per event (never buffered). A failure after the 200 is the
// format's error event (the encoder writes it from the error event); a
// client gone ends the loop, and the request context has already
// cancelled the upstream call. It returns the message of the terminal
// event (for observed usage), nil when the stream ended without one.
func (s *Server) writeStream(out *sse.Writer, f *format, req *llm.Request, st *llm.Stream) (final *llm.Message) {
	enc := f.newEncoder(req, s.now())
	var buf []byte
	write := func(b []byte) bool {
		if len(b) == 0 {
			return true
		}
		if err := out.WriteFrames(b); err != nil {
			s.log.Info("auth-gateway stream write failed", "format", f.name, "error", err)
			return false
		}
		return true
	}
	if enc.ping == nil {
		for ev := range st.Events() {
			if ev.Type.IsTerminal() {
				final = ev.Partial
			}
			buf = enc.encode(buf[:0], &ev)
			if !write(buf) || ev.Type.IsTerminal() {
				return final
			}
		}
		return final
	}
	// Keepalive frames come from a timer callback rather than a second
	// goroutine reading the upstream: the handler goroutine reads and
	// encodes every event itself (no per-event hand-off), and mu keeps the
	// callback's ping frame from interleaving with an event's frames. A
	// failed ping closes the stream, which unblocks the upstream read.
	var (
		mu      sync.Mutex
		stopped bool
		pingBuf []byte
		timer   *time.Timer
	)
	mu.Lock() // the callback reads timer
	timer = time.AfterFunc(s.pingInterval, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		pingBuf = enc.ping(pingBuf[:0])
		if !write(pingBuf) {
			stopped = true
			_ = st.Close()
			return
		}
		timer.Reset(s.pingInterval)
	})
	mu.Unlock()
	defer func() {
		mu.Lock()
		stopped = true // no ping is written once the handler returns
		mu.Unlock()
		timer.Stop()
	}()
	for ev := range st.Events() {
		if ev.Type.IsTerminal() {
			final = ev.Partial
		}
		buf = enc.encode(buf[:0], &ev)
		mu.Lock()
		ok := !stopped && write(buf)
		mu.Unlock()
		if !ok || ev.Type.IsTerminal() {
			return final
		}
	}
	return final
}
