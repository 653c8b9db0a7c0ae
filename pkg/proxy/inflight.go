package proxy

import (
	"io"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxInFlightBytes is the default cap on the request body bytes all
// requests of a gateway hold at once (256 MiB). A request holds its body
// and, until the upstream has it, an encoding of about the same size, so
// the gateway's memory for bodies stays near twice the cap.
const DefaultMaxInFlightBytes = 256 << 20

// InFlightRetryAfter is the Retry-After of a request refused because the
// gateway holds its in-flight byte cap.
const InFlightRetryAfter = time.Second

// inflight counts the request body bytes held by the requests in progress,
// up to a cap. A request takes its bytes before it reads them and gives
// them back when its body is released; a request that does not fit is
// refused rather than queued.
type inflight struct {
	mu    sync.Mutex
	used  int64 // guarded by mu
	limit int64 // 0: no cap
}

// take reserves n bytes; false when they do not fit under the cap.
func (f *inflight) take(n int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limit > 0 && f.used+n > f.limit {
		return false
	}
	f.used += n
	return true
}

// give returns n reserved bytes.
func (f *inflight) give(n int64) {
	f.mu.Lock()
	f.used -= n
	f.mu.Unlock()
}

// bytes is the number of bytes reserved now.
func (f *inflight) bytes() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used
}

// errInFlightFull is the answer to a request that does not fit under the
// in-flight cap: 503 with Retry-After, in the route's envelope.
func errInFlightFull(limit int64) error {
	return &apiError{Status: 503, RetryAfter: InFlightRetryAfter,
		Message: "The gateway is at its in-flight request byte limit (" + strconv.FormatInt(limit, 10) + " bytes); retry later"}
}

// meteredBody reserves the bytes of a body of unknown length as they are
// read, into *held; a read past the cap fails with errInFlightFull.
type meteredBody struct {
	r    io.Reader
	f    *inflight
	held *int64
}

func (m *meteredBody) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if n > 0 {
		if !m.f.take(int64(n)) {
			return 0, errInFlightFull(m.f.limit)
		}
		*m.held += int64(n)
	}
	return n, err
}
