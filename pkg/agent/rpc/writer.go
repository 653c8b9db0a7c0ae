package rpc

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Writer is the one stdout writer: frames are queued without bound (the
// command loop never waits for the host) and written in order, each
// batch flushed, by one goroutine. A frame over MaxFrame is replaced by a
// small one that says so.
type Writer struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  [][]byte
	closed bool
	done   chan struct{}
}

// NewWriter starts a writer to w; Close stops it.
func NewWriter(w io.Writer) *Writer {
	q := &Writer{done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.run(bufio.NewWriterSize(w, 64<<10))
	return q
}

func (q *Writer) run(w *bufio.Writer) {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.queue) == 0 && !q.closed {
			q.cond.Wait()
		}
		batch, closed := q.queue, q.closed
		q.queue = nil
		q.mu.Unlock()
		for _, b := range batch {
			_, _ = w.Write(b)
		}
		_ = w.Flush()
		if closed && len(batch) == 0 {
			return
		}
	}
}

func (q *Writer) push(b []byte) {
	q.mu.Lock()
	q.queue = append(q.queue, b)
	q.mu.Unlock()
	q.cond.Signal()
}

// Close writes what is queued and stops the writer; a host that no
// longer reads stdout gets 5 s before the process exits anyway.
func (q *Writer) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Signal()
	select {
	case <-q.done:
	case <-time.After(5 * time.Second):
	}
}

// Raw queues a copy of one encoded frame; an oversize frame becomes an
// rpc_frame_error naming its type.
func (q *Writer) Raw(b []byte) {
	if len(b) > MaxFrame {
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &typ)
		q.Value(map[string]any{"type": "rpc_frame_error", "originalType": typ.Type, "error": "RPC frame exceeded the transport limit"})
		return
	}
	line := make([]byte, len(b)+1)
	copy(line, b)
	line[len(b)] = '\n'
	q.push(line)
}

// AgentEnd queues the encoded agent_end event b; when oversize, its
// messages are reduced to their count n and its flags kept.
func (q *Writer) AgentEnd(b []byte, n int, isTerminal, yielded bool) {
	if len(b) > MaxFrame {
		q.Value(reducedAgentEnd{Type: "agent_end", Messages: []any{}, IsTerminal: isTerminal, Yielded: yielded, MessageCount: n})
		return
	}
	q.Raw(b)
}

// reducedAgentEnd is an oversize agent_end frame without its messages.
type reducedAgentEnd struct {
	Type         string `json:"type"`
	Messages     []any  `json:"messages"`
	IsTerminal   bool   `json:"isTerminal"`
	Yielded      bool   `json:"yielded"`
	MessageCount int    `json:"messageCount"`
}

// Value queues v encoded as JSON; an oversize response becomes a failed
// response to the same command.
func (q *Writer) Value(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "rpc_frame_error", "error": err.Error()})
	}
	if len(b) > MaxFrame {
		if r, ok := v.(*Response); ok {
			b, _ = json.Marshal(Error(r.ID, r.Command, "RPC response exceeded the transport limit"))
		}
	}
	q.Raw(b)
}
