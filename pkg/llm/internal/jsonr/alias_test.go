package jsonr

import (
	"bytes"
	"testing"
)

// TestAliasingRule checks the package doc's aliasing rule: decoded values
// survive Reset and NewReader while the input is unchanged; escape-free
// strings and Raw alias the input, escaped strings the arena, which
// ResetReuse (and only it) hands back for reuse.
func TestAliasingRule(t *testing.T) {
	in := []byte(`{"plain":"abcd","esc":"x\ny","raw":{"k":[1,2]}}`)
	r := NewReader(in)
	var plain, esc string
	var raw []byte
	r.BeginObject()
	for r.More() {
		switch string(r.Key()) {
		case "plain":
			plain = r.String()
		case "esc":
			esc = r.String()
		case "raw":
			raw = r.Raw()
		}
	}
	if err := r.End(); err != nil || plain != "abcd" || esc != "x\ny" || string(raw) != `{"k":[1,2]}` {
		t.Fatalf("decode: %q %q %q %v", plain, esc, raw, err)
	}

	// Reset and a new document with escapes: every earlier value survives.
	r.Reset([]byte(`["p\tq","r\ns"]`))
	r.Skip()
	if plain != "abcd" || esc != "x\ny" || string(raw) != `{"k":[1,2]}` {
		t.Fatalf("after Reset: %q %q %q", plain, esc, raw)
	}

	// Raw's capacity is capped: an append copies instead of writing over
	// the input after it.
	grown := append(raw, '!')
	if &grown[0] == &raw[0] || !bytes.Equal(in[len(in)-1:], []byte("}")) {
		t.Fatal("append to Raw wrote into the input")
	}

	// Modifying the input changes exactly the values that alias it.
	for i := range in {
		in[i] = '#'
	}
	if plain != "####" || string(raw) != "###########" {
		t.Fatalf("escape-free values should alias the input: %q %q", plain, raw)
	}
	if esc != "x\ny" {
		t.Fatalf("an escaped string lives in the arena, not the input: %q", esc)
	}

	// ResetReuse hands the arena back: the next escaped string may overwrite
	// esc. (This is why the rule ends at ResetReuse.)
	r2 := NewReader([]byte(`"a\nb"`))
	first := r2.String()
	r2.ResetReuse([]byte(`"c\td"`))
	second := r2.String()
	if second != "c\td" || first != "c\td" {
		t.Fatalf("ResetReuse reused the arena: first %q second %q (update the rule if this changed)", first, second)
	}
}

// TestViews checks StringView and BytesView share memory and handle empty
// input.
func TestViews(t *testing.T) {
	b := []byte("xyz")
	s := StringView(b)
	b[0] = 'A'
	if s != "Ayz" || StringView(nil) != "" || StringView(b[:0]) != "" || len(BytesView("")) != 0 {
		t.Fatalf("views: %q", s)
	}
	v := BytesView("hello")
	if string(v) != "hello" || len(v) != 5 {
		t.Fatal("BytesView")
	}
}
