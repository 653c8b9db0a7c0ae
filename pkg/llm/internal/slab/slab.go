// Package slab hands out the content slices of a decoded request from a
// few shared backing arrays. llm.Content is a large flat struct (about 300
// bytes); allocating one slice per message costs a 300-message request
// hundreds of allocations, and growing them by append copies each block
// several times.
package slab

import "github.com/ompgo/omp/pkg/llm"

// maxChunk bounds one backing array (in blocks).
const maxChunk = 1024

// Contents carves content slices out of backing arrays that double in
// size. The zero value is ready to use; use one per decoded request.
type Contents struct {
	free []llm.Content
	last int // size of the last backing array
}

// Take returns a zeroed slice of n blocks. Its capacity is n, so an
// append to it reallocates instead of reaching a neighbour.
func (s *Contents) Take(n int) []llm.Content {
	if n == 0 {
		return nil
	}
	if len(s.free) < n {
		s.last = min(max(2*s.last, 16), maxChunk)
		s.free = make([]llm.Content, max(n, s.last))
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}

// Copy returns a slab copy of src (nil when src is empty).
func (s *Contents) Copy(src []llm.Content) []llm.Content {
	out := s.Take(len(src))
	copy(out, src)
	return out
}
