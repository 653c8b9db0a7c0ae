// Package slab hands out the content slices of a decoded request from a
// few shared backing arrays. llm.Content is a flat struct of about 180
// bytes; allocating one slice per message costs a 300-message request
// hundreds of allocations, and growing them by append copies each block
// several times.
package slab

import "github.com/ompgo/omp/pkg/llm"

// maxChunk bounds one backing array (in blocks).
const maxChunk = 1024

// Progress tells how far a decoder is through its input (a jsonr.Reader
// does).
type Progress interface {
	// Offset is the number of input bytes read.
	Offset() int
	// Len is the length of the input.
	Len() int
}

// Contents carves content slices out of backing arrays. The zero value is
// ready to use; use one per decoded request. Without Src the arrays
// double in size; with it, each new array is sized for the rest of the
// input at the rate of blocks per input byte seen so far, so a request
// wastes little more than one array's slack.
type Contents struct {
	// Src, when set, is the decoder's input position.
	Src   Progress
	free  []llm.Content
	last  int // size of the last backing array
	taken int // blocks handed out
}

// Take returns a zeroed slice of n blocks. Its capacity is n, so an
// append to it reallocates instead of reaching a neighbour.
func (s *Contents) Take(n int) []llm.Content {
	if n == 0 {
		return nil
	}
	if len(s.free) < n {
		s.last = min(s.next(), maxChunk)
		s.free = make([]llm.Content, max(n, s.last))
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	s.taken += n
	return out
}

// next returns the size of the next backing array.
func (s *Contents) next() int {
	if s.Src != nil {
		at, total := s.Src.Offset(), s.Src.Len()
		if at > 0 && s.taken > 0 && total > at {
			est := int(float64(s.taken) / float64(at) * float64(total-at))
			return max(est+est>>3+8, 16)
		}
	}
	return max(2*s.last, 4) // small first: a one-message request keeps its array while it streams
}

// Copy returns a slab copy of src (nil when src is empty).
func (s *Contents) Copy(src []llm.Content) []llm.Content {
	out := s.Take(len(src))
	copy(out, src)
	return out
}
