package proxy

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/llm"
)

// PingInterval is how often an Anthropic Messages stream gets a ping frame
// (gateway.md §6.3).
const PingInterval = 15 * time.Second

// writeStream sends the stream as the format's SSE, one flush per event
// (never buffered). A failure after the 200 is the format's error event
// (the encoder writes it from the error event); a client gone ends the
// loop, and the request context has already cancelled the upstream call.
func (s *Server) writeStream(ctx context.Context, w http.ResponseWriter, f *format, req *llm.Request, st *llm.Stream) {
	sse.SetHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	out := sse.NewHTTPWriter(w, 0)
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
			buf = enc.encode(buf[:0], &ev)
			if !write(buf) || ev.Type.IsTerminal() {
				return
			}
		}
		return
	}
	p := startPump(st)
	defer p.stop(st)
	tick := time.NewTicker(s.pingInterval)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				return
			}
			buf = enc.encode(buf[:0], &ev)
			if !write(buf) || ev.Type.IsTerminal() {
				return
			}
			p.release()
		case <-tick.C:
			buf = enc.ping(buf[:0])
			if !write(buf) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// pump ranges over a stream on its own goroutine, so the writer can send
// keepalive frames while the upstream is silent. The producer hands over
// one event and waits for release before it asks the upstream for the
// next, so the event's Partial stays valid while it is encoded.
type pump struct {
	events chan llm.Event
	next   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

func startPump(st *llm.Stream) *pump {
	p := &pump{events: make(chan llm.Event), next: make(chan struct{}), done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(p.events)
		for ev := range st.Events() {
			select {
			case p.events <- ev:
			case <-p.done:
				return
			}
			select {
			case <-p.next:
			case <-p.done:
				return
			}
		}
	}()
	return p
}

// release lets the producer read the next event.
func (p *pump) release() {
	select {
	case p.next <- struct{}{}:
	case <-p.done:
	}
}

// stop ends the producer: done unblocks a handover, closing the stream
// unblocks an upstream read; then it waits for the goroutine.
func (p *pump) stop(st *llm.Stream) {
	close(p.done)
	_ = st.Close()
	p.wg.Wait()
}
