package jsonr

import (
	"bytes"
	"testing"
)

// TestAliasingRule checks the package doc's aliasing rule: decoded values
// survive Reset and NewReader while the input is unchanged; escape-free
// Bytes and Raw alias the input, escaped Bytes the arena, which
// ResetReuse (and only it) hands back for reuse; String's results are
// copies.
func TestAliasingRule(t *testing.T) {
	in := []byte(`{"plain":"abcd","esc":"x\ny","raw":{"k":[1,2]},"str":"efgh"}`)
	r := NewReader(in)
	var plain, esc, raw []byte
	var str string
	r.BeginObject()
	for r.More() {
		switch string(r.Key()) {
		case "plain":
			plain = r.Bytes()
		case "esc":
			esc = r.Bytes()
		case "raw":
			raw = r.Raw()
		case "str":
			str = r.String()
		}
	}
	if err := r.End(); err != nil || string(plain) != "abcd" || string(esc) != "x\ny" || string(raw) != `{"k":[1,2]}` || str != "efgh" {
		t.Fatalf("decode: %q %q %q %q %v", plain, esc, raw, str, err)
	}

	// Reset and a new document with escapes: every earlier value survives.
	r.Reset([]byte(`["p\tq","r\ns"]`))
	r.Skip()
	if string(plain) != "abcd" || string(esc) != "x\ny" || string(raw) != `{"k":[1,2]}` {
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
	if string(plain) != "####" || string(raw) != "###########" {
		t.Fatalf("escape-free values should alias the input: %q %q", plain, raw)
	}
	if string(esc) != "x\ny" {
		t.Fatalf("an escaped string lives in the arena, not the input: %q", esc)
	}
	if str != "efgh" {
		t.Fatalf("String's result should own its bytes: %q", str)
	}

	// ResetReuse hands the arena back: the next escaped string may overwrite
	// esc. (This is why the rule ends at ResetReuse.)
	r2 := NewReader([]byte(`"a\nb"`))
	first := r2.Bytes()
	r2.ResetReuse([]byte(`"c\td"`))
	second := r2.Bytes()
	if string(second) != "c\td" || string(first) != "c\td" {
		t.Fatalf("ResetReuse reused the arena: first %q second %q (update the rule if this changed)", first, second)
	}
}
