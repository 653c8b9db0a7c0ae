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

func TestClass(t *testing.T) {
	for _, tc := range []struct{ n, c int }{{1, 0}, {16, 0}, {17, 1}, {32, 1}, {33, 2}, {512, 5}, {513, 6}, {1024, 6}} {
		if got := class(tc.n); got != tc.c || minClass<<got < tc.n {
			t.Errorf("class(%d) = %d, want %d", tc.n, got, tc.c)
		}
	}
}

// A recycling slab hands back its arrays cleared, and the next request's
// slab takes them instead of allocating.
func TestRecycledArraysComeBackCleared(t *testing.T) {
	s := Contents{Recycle: true}
	a := s.Copy([]llm.Content{llm.Text("secret"), llm.Text("b")})
	if len(s.arrays) != 1 {
		t.Fatalf("%d arrays recorded, want 1", len(s.arrays))
	}
	backing := s.arrays[0]
	if &(*backing)[0] != &a[0] {
		t.Fatal("the slice is not carved from the recorded array")
	}
	s.Release()
	if (*backing)[0].Text != "" || (*backing)[1].Text != "" {
		t.Fatal("a released array still holds the request's blocks")
	}
	if len(s.arrays) != 0 || s.free != nil {
		t.Fatal("Release left arrays or free space behind")
	}
	// Without Recycle nothing is recorded.
	var plain Contents
	plain.Copy([]llm.Content{llm.Text("x")})
	if len(plain.arrays) != 0 {
		t.Fatal("a plain slab recorded its array")
	}
	// Oversize takes are never pooled.
	r := Contents{Recycle: true}
	r.Take(maxChunk + 1)
	if len(r.arrays) != 0 {
		t.Fatal("an oversize array was recorded")
	}
	allocs := testing.AllocsPerRun(100, func() {
		r := Contents{Recycle: true}
		r.Copy([]llm.Content{llm.Text("x")})
		r.Release()
	})
	if allocs > 1 { // the arrays list; the backing array comes from the pool
		t.Fatalf("%v allocations per recycled request", allocs)
	}
}
