package rpc

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"
)

// Writer is the one stdout writer: frames are queued without bound (the
// command loop never waits for the host) and written in order, each
// batch flushed, by one goroutine. A frame that does not fit one line of
// MaxFrame bytes (newline included) is replaced by a small one that says
// so, or, once the host has negotiated protocol 2, split into rpc_chunk
// frames when it is at most MaxReassembly bytes.
type Writer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   [][]byte
	closed  bool
	done    chan struct{}
	chunked bool // protocol 2: oversize frames go out as rpc_chunk frames
	chunks  int  // chunked frames written so far; names the next chunkId
}

// ChunkPayload is the number of frame bytes one rpc_chunk frame carries.
const ChunkPayload = 256 << 10

// Chunk is one rpc_chunk frame: part index of count of a frame of
// byteLength bytes, the part base64-encoded in Data.
type Chunk struct {
	Type       string `json:"type"`
	ChunkID    string `json:"chunkId"`
	Index      int    `json:"index"`
	Count      int    `json:"count"`
	ByteLength int    `json:"byteLength"`
	Data       string `json:"data"`
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

// EnableChunks queues ack, the last frame written under protocol 1, and
// switches the writer to protocol 2 for every frame queued after it.
func (q *Writer) EnableChunks(ack any) {
	b, _ := json.Marshal(ack)
	q.mu.Lock()
	q.queue = append(q.queue, append(b, '\n'))
	q.chunked = true
	q.mu.Unlock()
	q.cond.Signal()
}

// oversize reports whether encoded frame b does not fit one line.
func oversize(b []byte) bool { return len(b)+1 > MaxFrame }

// queueChunks queues oversize frame b as rpc_chunk frames and reports
// true, or reports false when protocol 2 is off or b is over
// MaxReassembly. The chunks are queued together, so no other frame
// comes between them.
func (q *Writer) queueChunks(b []byte) bool {
	q.mu.Lock()
	if !q.chunked || len(b) > MaxReassembly {
		q.mu.Unlock()
		return false
	}
	q.chunks++
	id := "rpc-" + strconv.Itoa(q.chunks)
	count := (len(b) + ChunkPayload - 1) / ChunkPayload
	for i := range count {
		part := b[i*ChunkPayload : min(len(b), (i+1)*ChunkPayload)]
		line, _ := json.Marshal(Chunk{Type: "rpc_chunk", ChunkID: id, Index: i, Count: count, ByteLength: len(b),
			Data: base64.StdEncoding.EncodeToString(part)})
		q.queue = append(q.queue, append(line, '\n'))
	}
	q.mu.Unlock()
	q.cond.Signal()
	return true
}

// Raw queues a copy of one encoded frame; an oversize frame is chunked
// under protocol 2 and otherwise becomes an rpc_frame_error naming its
// type.
func (q *Writer) Raw(b []byte) {
	if oversize(b) && q.queueChunks(b) {
		return
	}
	if oversize(b) {
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
// messages are reduced to their count n and its flags kept, under either
// protocol.
func (q *Writer) AgentEnd(b []byte, n int, isTerminal, yielded bool) {
	if oversize(b) {
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

// Value queues v encoded as JSON; an oversize response is chunked under
// protocol 2 and otherwise becomes a failed response to the same command.
func (q *Writer) Value(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "rpc_frame_error", "error": err.Error()})
	}
	if oversize(b) && q.queueChunks(b) {
		return
	}
	if oversize(b) {
		if r, ok := v.(*Response); ok {
			b, _ = json.Marshal(Error(r.ID, r.Command, "RPC response exceeded the transport limit"))
		}
	}
	q.Raw(b)
}
