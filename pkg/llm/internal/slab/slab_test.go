package slab

import (
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

func TestSlicesDoNotOverlap(t *testing.T) {
	var s Contents
	a := s.Copy([]llm.Content{llm.Text("a")})
	b := s.Copy([]llm.Content{llm.Text("b"), llm.Text("c")})
	a = append(a, llm.Text("x")) // must not overwrite b[0]
	if b[0].Text != "b" || a[0].Text != "a" || cap(b) != 2 {
		t.Fatalf("a=%v b=%v", a, b)
	}
	if s.Take(0) != nil || s.Copy(nil) != nil {
		t.Fatal("empty take not nil")
	}
	big := s.Take(5000)
	if len(big) != 5000 || big[4999].Type != "" {
		t.Fatal("large take")
	}
}

type fakeProgress struct{ at, total int }

func (p *fakeProgress) Offset() int { return p.at }
func (p *fakeProgress) Len() int    { return p.total }

func TestArraysAreSizedByProgress(t *testing.T) {
	// One block per 1000 input bytes over 600 KB: about 600 blocks
	// should take little more than 600 slots, where doubling takes 1008.
	p := &fakeProgress{total: 600_000}
	s := Contents{Src: p}
	slots := 0
	for i := range 600 {
		p.at = (i + 1) * 1000
		if len(s.free) < 1 {
			slots += max(1, min(s.next(), maxChunk))
		}
		s.Take(1)
	}
	if slots > 700 {
		t.Fatalf("backing arrays held %d slots for 600 blocks", slots)
	}
}
