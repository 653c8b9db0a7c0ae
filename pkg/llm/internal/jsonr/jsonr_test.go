package jsonr

import (
	"encoding/json"
	"testing"
)

func TestReadObject(t *testing.T) {
	r := NewReader([]byte(` {"a": "x\u00e9\ud83d\ude00\n", "n": -1.5e2, "i": 42, "b": true, "z": null, "arr": [1, {"k": []}], "raw": {"q": [true]}} `))
	got := map[string]any{}
	if !r.BeginObject() {
		t.Fatal(r.Err())
	}
	for r.More() {
		switch k := string(r.Key()); k {
		case "a":
			got[k] = r.String()
		case "n":
			got[k] = r.Float()
		case "i":
			got[k] = r.Int()
		case "b":
			got[k] = r.Bool()
		case "z":
			got[k] = r.Null()
		case "raw":
			got[k] = string(r.Raw())
		default:
			r.Skip()
		}
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	if got["a"] != "xé😀\n" || got["n"] != -150.0 || got["i"] != int64(42) || got["b"] != true || got["z"] != true || got["raw"] != `{"q": [true]}` {
		t.Fatalf("got %v", got)
	}
}

func TestRejects(t *testing.T) {
	for _, s := range []string{`{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":01}`, `"\x"`, "\"a\x01\"", `[1 2]`, `{"a":tru}`, `{`, `{}x`, `-`, `1.`, `1e`, `[`, `{"a":1`} {
		r := NewReader([]byte(s))
		r.Skip()
		if r.End() == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestTypeErrors(t *testing.T) {
	r := NewReader([]byte(`{"a":"x"}`))
	r.BeginObject()
	r.More()
	r.Key()
	r.Int()
	if _, ok := r.Err().(*TypeError); !ok {
		t.Fatalf("err = %v", r.Err())
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9\ud800"}`, `"\ud83d\ude00"`, `[1e5,-0.5,true]`, "\"\xff\"", `  {}  `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		r.Skip()
		ok := r.End() == nil
		if ok != json.Valid(b) {
			t.Fatalf("Skip valid=%v, json.Valid=%v for %q", ok, !ok, b)
		}
		if !ok || len(b) == 0 {
			return
		}
		r = NewReader(b)
		if r.Peek() == '"' {
			got := r.String()
			var want string
			if err := json.Unmarshal(b, &want); err != nil || got != want {
				t.Fatalf("String(%q) = %q, want %q (%v)", b, got, want, err)
			}
		}
	})
}
