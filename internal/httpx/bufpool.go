package httpx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// Large request bodies pass through recycled buffers: the gateway reads a
// 300 KB agent request into one and encodes the upstream request into
// another. A fresh, zeroed 300 KB allocation per request (and the page
// faults of touching it after the scavenger returned it to the OS) costs
// more than the translation itself.
//
// bufClasses are the capacities of pooled buffers; larger buffers are
// allocated and left to the GC, and so are buffers up to minPooled: a
// small allocation is cheap, and a small streaming request, which holds
// its body until the stream ends, must not pin 64 KiB per open stream.
var bufClasses = [...]int{64 << 10, 1 << 20, 4 << 20}

// MinPooled is the largest capacity GetBuffer allocates exactly, unpooled.
const MinPooled = 16 << 10

// InMemoryBody is the largest body NewBufferRequest sends from a
// *bytes.Reader: one that fits an upstream connection's write buffer with
// the request headers.
const InMemoryBody = 1 << 10

var bufPools [len(bufClasses)]sync.Pool // of *[]byte

// GetBuffer returns an empty buffer with capacity of at least n: a
// recycled one of the smallest class that fits when n is over MinPooled
// and within the largest class.
func GetBuffer(n int) []byte {
	if n <= MinPooled {
		// Exact: a small streaming request's body lives as long as its
		// stream (the decoded request views it).
		return make([]byte, 0, max(n, 64))
	}
	for i, c := range bufClasses {
		if n <= c {
			if p, ok := bufPools[i].Get().(*[]byte); ok {
				return (*p)[:0]
			}
			return make([]byte, 0, c)
		}
	}
	return make([]byte, 0, n)
}

// PutBuffer recycles b when its capacity is one of the classes (a buffer
// that grew past its class, or an oversize one, is left to the GC).
// Nothing may use b afterwards.
func PutBuffer(b []byte) {
	if i := class(b); i >= 0 {
		b = b[:0]
		bufPools[i].Put(&b)
	}
}

// class is the index of b's class, or -1.
func class(b []byte) int {
	for i, c := range bufClasses {
		if cap(b) == c {
			return i
		}
	}
	return -1
}

// NewBufferRequest is http.NewRequestWithContext with body as the
// request body (Content-Length and GetBody set as for a *bytes.Reader),
// where body came from GetBuffer and goes back to the pool once nothing
// can read it any more: the caller has called release (after Client.Do
// returned: a redirect or a retry on a stale connection asks GetBody for
// a new reader only within Do) and the transport has closed every reader
// it was given (the RoundTripper contract: it closes the body, even on
// errors, possibly after Do returned while it still writes). A reader
// that is never closed only keeps the buffer from being recycled.
//
// A buffer of no class (small, or grown past its class) is not recycled,
// but the readers still drop it once closed: the http.Request lives as
// long as its response (a whole stream), the body bytes need not.
//
// A body of at most InMemoryBody bytes goes as a *bytes.Reader instead,
// which net/http knows to be in memory: it writes the request headers and
// such a body in one write, where it flushes the headers alone first for
// any other reader, and the upstream reads the request in one segment
// instead of waking again for its body. The request keeps a copy of that
// body as long as it lives.
func NewBufferRequest(ctx context.Context, method, url string, body []byte) (*http.Request, func(), error) {
	if len(body) <= InMemoryBody && class(body) < 0 {
		// An exact copy: body's array may be several times its length
		// (a size hint), and the request keeps this one for the stream.
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(bytes.Clone(body)))
		return req, func() {}, err
	}
	rb := &refBuffer{buf: body}
	rb.refs.Store(1) // the caller's, dropped by release
	req, err := http.NewRequestWithContext(ctx, method, url, rb.reader())
	if err != nil {
		rb.unref()
		return nil, func() {}, err
	}
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return rb.reader(), nil }
	var once sync.Once
	return req, func() { once.Do(rb.unref) }, nil
}

// refBuffer is a pooled buffer shared by the caller and the readers of
// one request; the last reference to go recycles it.
type refBuffer struct {
	buf  []byte
	refs atomic.Int32
}

func (rb *refBuffer) reader() *bufferReader {
	rb.refs.Add(1)
	r := &bufferReader{rb: rb}
	r.r.Reset(rb.buf)
	return r
}

func (rb *refBuffer) unref() {
	if rb.refs.Add(-1) == 0 {
		PutBuffer(rb.buf)
		rb.buf = nil
	}
}

var errBodyClosed = errors.New("httpx: read of a closed request body")

// bufferReader is one reader of a refBuffer. mu makes Close wait for a
// Read in progress (an HTTP/2 transport may close the body from another
// goroutine), so the buffer is never recycled under a read.
type bufferReader struct {
	mu     sync.Mutex
	rb     *refBuffer // nil once closed
	r      bytes.Reader
	closed bool
}

func (r *bufferReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errBodyClosed
	}
	return r.r.Read(p)
}

func (r *bufferReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.r.Reset(nil)
		r.rb.unref()
		r.rb = nil
	}
	return nil
}
