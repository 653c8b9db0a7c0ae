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
