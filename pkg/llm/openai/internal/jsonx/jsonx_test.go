package jsonx

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain ascii text that is longer than eight bytes", "quote\" back\\slash",
		"ctl\x00\x01\x1f\n\r\t", "utf8 é ✓ 😀", "bad \xff utf8", "\u2028\u2029", "<html>&",
	} {
		want, _ := json.Marshal(s)
		got := AppendString(nil, s)
		var a, b string
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("AppendString(%q) = %s: invalid JSON: %v", s, got, err)
		}
		_ = json.Unmarshal(want, &b)
		if a != b {
			t.Errorf("AppendString(%q) decodes to %q, encoding/json to %q", s, a, b)
		}
	}
}

func TestDecoderReadsNestedDocument(t *testing.T) {
	doc := `{"a":"x\u00e9\ud83d\ude00","n":-1.5e3,"i":42,"b":true,"z":null,"arr":[1,{"k":[]}],"o":{"p":"q"}}`
	d := NewDecoder([]byte(doc))
	var got []string
	for key := range d.Fields() {
		switch k := string(key); k {
		case "a":
			got = append(got, d.String())
		case "n":
			if d.Float() != -1500 {
				t.Error("float")
			}
		case "i":
			if d.Int() != 42 {
				t.Error("int")
			}
		case "b":
			if !d.Bool() {
				t.Error("bool")
			}
		case "arr":
			got = append(got, string(d.Raw()))
		default:
			// left unconsumed: skipped
		}
	}
	if err := d.End(); err != nil {
		t.Fatal(err)
	}
	if got[0] != "xé😀" || got[1] != `[1,{"k":[]}]` {
		t.Fatalf("got %q", got)
	}
}

func TestDecoderRejectsMalformedInput(t *testing.T) {
	for _, doc := range []string{`{"a":}`, `{"a" 1}`, `[1,]`, `"\x01"`, `"\q"`, `01`, `{"a":1}x`, `tru`, `"abc`, `[` + strings.Repeat("[", MaxDepth+1)} {
		d := NewDecoder([]byte(doc))
		d.Skip()
		if d.End() == nil {
			t.Errorf("%q accepted", doc)
		}
	}
}

func FuzzDecoder(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c"}]}`, `"\ud800x"`, `-0.5e-3`, `[true,false,null]`, `{"k\"":"\u0041"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(b)
		raw := d.Raw()
		err := d.End()
		if valid := json.Valid(b); valid != (err == nil) {
			t.Fatalf("json.Valid=%v, jsonx err=%v for %q", valid, err, b)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(bytes.TrimSpace(b), raw) {
			t.Fatalf("raw %q != input", raw)
		}
		if len(b) > 0 && bytes.TrimSpace(b)[0] == '"' {
			var want string
			_ = json.Unmarshal(b, &want)
			got := NewDecoder(b).String()
			if got != want {
				t.Fatalf("string %q: got %q want %q", b, got, want)
			}
			var back string
			if err := json.Unmarshal(AppendString(nil, got), &back); err != nil || back != got {
				t.Fatalf("AppendString round trip of %q: %q, %v", got, back, err)
			}
		}
	})
}

func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("hello \"world\" the quick brown fox\n", 1000)
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}

func BenchmarkDecodeString(b *testing.B) {
	doc := AppendString(nil, strings.Repeat("hello world the quick brown fox\n", 1000))
	b.SetBytes(int64(len(doc)))
	d := &Decoder{}
	for b.Loop() {
		d.Reset(doc)
		_ = d.Bytes()
	}
}
