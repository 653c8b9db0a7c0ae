// Package slab hands out the content slices of a decoded request from a
// few shared backing arrays. llm.Content is a flat struct of about 180
// bytes; allocating one slice per message costs a 300-message request
// hundreds of allocations, and growing them by append copies each block
// several times.
package slab

import (
	"math/bits"
	"sync"

	"github.com/ompgo/omp/pkg/llm"
)

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
	Src Progress
	// Recycle takes the backing arrays from a pool (by power-of-two
	// size class) and keeps them in the list Release hands back. Only
	// for a caller that calls Release once nothing views the slices.
	Recycle bool
	free    []llm.Content
	last    int // size of the last backing array
	taken   int // blocks handed out
	arrays  []*[]llm.Content
}

// pools holds recycled backing arrays by size class: class c holds
// arrays of minClass << c blocks.
var pools [classes]sync.Pool

const (
	minClass = 16
	classes  = 7 // 16 … 1024 (maxChunk) blocks
)

// class returns the smallest class holding n blocks (n ≤ maxChunk).
func class(n int) int {
	if n <= minClass {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(minClass-1))
}

// array returns a zeroed backing array of at least n blocks: recycled
// when s.Recycle, else fresh and exact.
func (s *Contents) array(n int) []llm.Content {
	if !s.Recycle || n > maxChunk {
		return make([]llm.Content, n)
	}
	c := class(n)
	p, _ := pools[c].Get().(*[]llm.Content)
	if p == nil {
		a := make([]llm.Content, minClass<<c)
		p = &a
	}
	s.arrays = append(s.arrays, p)
	return *p
}

// Release clears the recycled backing arrays and pools them. Nothing may
// use a slice Take or Copy returned afterwards.
func (s *Contents) Release() {
	for _, p := range s.arrays {
		clear(*p)
		pools[class(len(*p))].Put(p)
	}
	clear(s.arrays)
	s.arrays, s.free = s.arrays[:0], nil
}

// Take returns a zeroed slice of n blocks. Its capacity is n, so an
// append to it reallocates instead of reaching a neighbour.
func (s *Contents) Take(n int) []llm.Content {
	if n == 0 {
		return nil
	}
	if len(s.free) < n {
		s.last = min(s.next(), maxChunk)
		s.free = s.array(max(n, s.last))
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
