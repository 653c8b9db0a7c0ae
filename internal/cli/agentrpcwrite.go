package cli

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// The RPC mode's frame writer (D64) and model/thinking-level helpers.

func rpcModelOf(m llm.Model) rpcModel {
	in := m.Input
	if in == nil {
		in = []llm.Modality{llm.ModalityText}
	}
	return rpcModel{ID: m.ID, Name: cmp.Or(m.Name, m.ID), API: m.API, Provider: m.Provider, BaseURL: m.BaseURL,
		Reasoning: m.Reasoning, Input: in, Cost: m.Cost, ContextWindow: m.ContextWindow, MaxTokens: m.MaxTokens,
		Compat: m.Compat}
}

func isThinkingLevel(l string) bool { return slices.Contains(thinkingLevels, l) }

// clampLevel keeps a level the model supports: "off" without reasoning,
// xhigh becomes high where the model lacks it (D14).
func clampLevel(m llm.Model, level string) string {
	if !m.Reasoning {
		return "off"
	}
	if level == "xhigh" && !supportsXHigh(m) {
		return "high"
	}
	return level
}

func supportsXHigh(m llm.Model) bool {
	return m.Thinking != nil && slices.Contains(m.Thinking.Efforts, llm.Effort("xhigh"))
}

// nextLevel is cycle_thinking_level's order: off → minimal → low →
// medium → high (→ xhigh) → off.
func nextLevel(m llm.Model, cur string) string {
	order := []string{"off", "minimal", "low", "medium", "high"}
	if supportsXHigh(m) {
		order = append(order, "xhigh")
	}
	for i, l := range order {
		if l == cur {
			return order[(i+1)%len(order)]
		}
	}
	return order[0]
}

// rpcWriter is the one stdout writer: frames are queued without bound
// (the loop never waits for the client, §2.2) and written in order, each
// flushed, by one goroutine. Oversize frames are replaced (D64).
type rpcWriter struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  [][]byte
	closed bool
	done   chan struct{}
}

func newRPCWriter(w io.Writer) *rpcWriter {
	q := &rpcWriter{done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.run(bufio.NewWriterSize(w, 64<<10))
	return q
}

func (q *rpcWriter) run(w *bufio.Writer) {
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

func (q *rpcWriter) push(b []byte) {
	q.mu.Lock()
	q.queue = append(q.queue, b)
	q.mu.Unlock()
	q.cond.Signal()
}

// close writes what is queued and stops the writer; a host that no
// longer reads stdout gets 5 s before the process exits anyway.
func (q *rpcWriter) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Signal()
	select {
	case <-q.done:
	case <-time.After(5 * time.Second):
	}
}

// raw queues a copy of one encoded frame.
func (q *rpcWriter) raw(b []byte) {
	if len(b) > rpcMaxFrame {
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &typ)
		q.value(map[string]any{"type": "rpc_frame_error", "originalType": typ.Type, "error": "RPC frame exceeded the transport limit"})
		return
	}
	line := make([]byte, len(b)+1)
	copy(line, b)
	line[len(b)] = '\n'
	q.push(line)
}

// agentEnd queues agent_end, reduced to its message count when oversize.
func (q *rpcWriter) agentEnd(b []byte, n int) {
	if len(b) > rpcMaxFrame {
		q.value(map[string]any{"type": "agent_end", "messages": []any{}, "messageCount": n})
		return
	}
	q.raw(b)
}

// value queues v encoded as JSON; an oversize response becomes D64's error.
func (q *rpcWriter) value(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "rpc_frame_error", "error": err.Error()})
	}
	if len(b) > rpcMaxFrame {
		if r, ok := v.(*rpcResponse); ok {
			b, _ = json.Marshal(rpcError(r.ID, r.Command, "RPC response exceeded the transport limit"))
		}
	}
	q.raw(b)
}
