package proxy

import "sync"

// Request bodies are read into recycled buffers: a 300 KB agent request
// would otherwise cost a fresh, zeroed 300 KB allocation per request, and
// the garbage collector and the scavenger returning those pages to the OS
// cost more than the translation itself.
//
// A body is decoded in place (the canonical request's strings view it),
// so a buffer goes back to its pool only when the request is over
// (inference's deferred release) and nothing kept past the request may
// view it: the session id, the one request-derived string the gateway
// keeps (the sticky-credential map), is cloned.

// bodyClasses are the capacities of pooled buffers; larger bodies get a
// buffer of their own that is not recycled, and so do bodies up to
// minPooled: a streaming request holds its body until the stream ends, and
// a small one must not pin 64 KiB per open stream.
var bodyClasses = [...]int{64 << 10, 1 << 20, 4 << 20}

const minPooled = 16 << 10

var bodyPools [len(bodyClasses)]sync.Pool // of *[]byte

// getBody returns an empty buffer with capacity of at least n.
func getBody(n int) []byte {
	if n <= minPooled {
		return make([]byte, 0, max(n, 512))
	}
	for i, c := range bodyClasses {
		if n <= c {
			if p, ok := bodyPools[i].Get().(*[]byte); ok {
				return (*p)[:0]
			}
			return make([]byte, 0, c)
		}
	}
	return make([]byte, 0, n)
}

// putBody recycles b when its capacity is one of bodyClasses (a buffer
// that grew past its class, or an oversize one, is left to the GC).
func putBody(b []byte) {
	for i, c := range bodyClasses {
		if cap(b) == c {
			b = b[:0]
			bodyPools[i].Put(&b)
			return
		}
	}
}
