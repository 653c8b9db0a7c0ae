package jsonr

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
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
		if Valid(b) != ok || ValidString(string(b)) != ok {
			t.Fatalf("Valid disagrees with Skip for %q", b)
		}
		w := NewReader(b)
		walk(w)
		if walked := w.End() == nil; walked != ok {
			t.Fatalf("walk valid=%v, Skip valid=%v for %q", walked, ok, b)
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

// FuzzLongStrings reads fuzzed string bodies set in long clean runs, so
// the block scan of plain strings and the block copy of escaped ones meet
// every byte the fuzzer finds, and compares with encoding/json.
func FuzzLongStrings(f *testing.F) {
	for _, s := range []string{"", `\"`, `\n`, "\xff", "\x01", `\u00e9\ud800`, "é😀", `"`, `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lead := prose[:len(s)%64]
		checkLongString(t, `"`+lead+prose+s+prose+s+prose+`"`)
		checkLongString(t, `"\t`+lead+prose+s+prose+s+prose+`"`) // escaped from the start
	})
}

// prose is a clean run long enough for the block loops.
var prose = strings.Repeat("lorem ipsum dolor sit amet ", 8)

// checkLongString reads the string literal lit, followed in an array by
// a long one (so its end can fall inside a block), with String and with
// Skip, and compares with encoding/json: the same strings, or an error for
// the same input.
func checkLongString(t *testing.T, lit string) {
	t.Helper()
	doc := "[" + lit + `,"` + prose + `"]`
	var want []string
	werr := json.Unmarshal([]byte(doc), &want)
	r := NewReader([]byte(doc))
	var got []string
	for range r.Elems() {
		got = append(got, r.String())
	}
	if err := r.End(); (err == nil) != (werr == nil) || werr == nil && !slices.Equal(got, want) {
		t.Fatalf("String(%q) = %q, %v; encoding/json: %q, %v", lit, got, err, want, werr)
	}
	// Skip takes any valid value (a fuzzed literal can make the array
	// mixed, which encoding/json refuses as []string).
	r = NewReader([]byte(doc))
	r.Skip()
	if err, valid := r.End(), json.Valid([]byte(doc)); (err == nil) != valid {
		t.Fatalf("Skip(%q): %v; json.Valid: %v", lit, err, valid)
	}
}

// TestEverySpecialAtEveryOffset puts each byte class the string scan
// stops at or validates at every offset of a long clean run, plain and
// after an escape.
func TestEverySpecialAtEveryOffset(t *testing.T) {
	for _, e := range []string{`\"`, `\\`, `\n`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "\x00", "\x1f", "\x7f", "\xff", "\xe2\x80", "é", "😀", "\u2028", `"`, `\`, `\x`} {
		for p := range len(prose) + 1 {
			checkLongString(t, `"`+prose[:p]+e+prose[p:]+`"`)
			checkLongString(t, `"\n`+prose[:p]+e+prose[p:]+`"`)
		}
	}
}

func TestFieldsSkipsUnreadValues(t *testing.T) {
	doc := `{"a":"x\u00e9\ud83d\ude00","n":-1.5e3,"i":42,"b":true,"z":null,"arr":[1,{"k":[]}],"o":{"p":"q"}}`
	r := NewReader([]byte(doc))
	var got []string
	for key := range r.Fields() {
		switch k := string(key); k {
		case "a":
			got = append(got, r.String())
		case "n":
			if r.Float() != -1500 {
				t.Error("float")
			}
		case "i":
			if r.IntExact() != 42 {
				t.Error("int")
			}
		case "arr":
			for i := range r.Elems() {
				if i == 1 {
					got = append(got, string(r.Raw()))
				}
			}
		default:
			// left unread: skipped
		}
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "xé😀" || got[1] != `{"k":[]}` {
		t.Fatalf("got %q", got)
	}
}

func TestBreakingOutOfFieldsIsAnError(t *testing.T) {
	r := NewReader([]byte(`{"a":1,"b":2}`))
	for range r.Fields() {
		break
	}
	if r.Err() == nil {
		t.Fatal("early break not reported")
	}
}

func TestObjectReturnsCallbackError(t *testing.T) {
	stop := errors.New("stop")
	r := NewReader([]byte(`{"a":1,"b":2}`))
	if err := r.Object(func([]byte) error { return stop }); err != stop {
		t.Fatalf("err = %v, want stop", err)
	}
}

func TestNestingBeyondTheInlineStack(t *testing.T) {
	for _, depth := range []int{31, 32, 33, 200} {
		doc := strings.Repeat(`{"a":[`, depth) + strings.Repeat(`]}`, depth)
		r := NewReader([]byte(doc))
		r.Skip()
		if err := r.End(); err != nil {
			t.Errorf("depth %d: %v", depth, err)
		}
	}
	r := NewReader([]byte(strings.Repeat("[", maxDepth+1)))
	r.Skip()
	if r.End() == nil {
		t.Error("depth beyond maxDepth accepted")
	}
}

func TestIntExactRejectsFractionsIntAcceptsIntegralOnes(t *testing.T) {
	for doc, want := range map[string]bool{`1.0`: true, `1e3`: true, `1.5`: false, `99999999999999999999`: false} {
		r0 := NewReader([]byte(doc))
		if r0.Int(); (r0.Err() == nil) != want {
			t.Errorf("Int(%s) ok=%v, want %v", doc, r0.Err() == nil, want)
		}
		r := NewReader([]byte(doc))
		if r.IntExact(); r.Err() == nil {
			t.Errorf("IntExact(%s) accepted", doc)
		}
	}
}

func TestEachFieldAndFoldsTo(t *testing.T) {
	var keys []string
	if err := EachField([]byte(`{"type":"object","Pro\u0070s":{}}`), func(k string, _ []byte) { keys = append(keys, k) }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[1] != "Props" || !FoldsTo([]byte(keys[1]), "x", "props") || FoldsTo([]byte("prop"), "props") {
		t.Fatalf("keys %q", keys)
	}
	if EachField([]byte(`[1]`), func(string, []byte) {}) == nil {
		t.Fatal("array accepted as object")
	}
}

// TestFoldsToMatchesEncodingJSON checks FoldsTo against the key matching
// of encoding/json itself, including Unicode folds that change the byte
// length of a key (U+017F "ſ" folds to "s", U+212A Kelvin to "k").
func TestFoldsToMatchesEncodingJSON(t *testing.T) {
	type target struct {
		PartialJSON string `json:"partial_json"`
	}
	for _, key := range []string{"partial_json", "PARTIAL_JSON", "partial_jſon", "partial_json\u017f", "partial_jso", "partial_jsonx", "pArtial_jſon"} {
		var v target
		if err := json.Unmarshal([]byte(`{"`+key+`":"hit"}`), &v); err != nil {
			t.Fatal(err)
		}
		if want, got := v.PartialJSON == "hit", FoldsTo([]byte(key), "x", "partial_json"); got != want {
			t.Errorf("FoldsTo(%q) = %v, encoding/json matches: %v", key, got, want)
		}
	}
	if !FoldsTo([]byte("thin\u212Aing"), "thinking") {
		t.Error("Kelvin sign does not fold to k")
	}
}

func TestStringsSurviveReset(t *testing.T) {
	var r Reader
	r.Reset([]byte(`["a\nb","c"]`))
	var got []string
	for range r.Elems() {
		got = append(got, r.String())
	}
	r.Reset([]byte(`"d\te"`))
	got = append(got, r.String())
	if got[0] != "a\nb" || got[1] != "c" || got[2] != "d\te" || r.End() != nil {
		t.Fatalf("got %q, %v", got, r.Err())
	}
}

func BenchmarkString(b *testing.B) {
	doc, _ := json.Marshal(strings.Repeat(`lorem ipsum "quoted" <tag> `, 1000))
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		r := NewReader(doc)
		_ = r.String()
	}
}

// BenchmarkStrings reads the strings of a chat body: prose is ~1 KB of
// plain ASCII (a view, no copy), newlines the same text as paragraphs
// (decoded into the arena after the first escape), code a source file
// with an escape every few bytes.
func BenchmarkStrings(b *testing.B) {
	text := "message 7: " + strings.Repeat("lorem ipsum dolor sit amet ", 37)
	for _, w := range []struct{ name, s string }{
		{"prose", text},
		{"newlines", strings.ReplaceAll(text, "amet ", "amet\n")[:len(text)/3] + text[len(text)/3:]},
		{"code", strings.Repeat("func main() {\n\tfmt.Println(\"hello, world\")\n\tx := map[string]int{\"a\": 1}\n}\n", 14)},
		{"short40", text[:40]},
		{"short72", text[:72]},
		{"short100", text[:100]},
	} {
		doc, _ := json.Marshal(w.s)
		b.Run(w.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			r := NewReader(doc)
			for b.Loop() {
				r.ResetReuse(doc)
				_ = r.String()
			}
		})
	}
}

func TestLargeDocumentsDecodeLikeEncodingJSON(t *testing.T) {
	// Strings larger than the arena move to larger ones as they decode.
	const big = 1 << 20
	in := []string{strings.Repeat("a\"b\\c\n\u00e9 ", big/8), "x\ny", strings.Repeat("\t<&>", big/3), "plain", "😀\n"}
	doc, _ := json.Marshal(in)
	r := NewReader(doc)
	var got []string
	for range r.Elems() {
		got = append(got, r.String())
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if got[i] != in[i] {
			t.Fatalf("string %d differs (len %d vs %d)", i, len(got[i]), len(in[i]))
		}
	}
}

// walk reads every value with the typed methods and the iterators.
func walk(r *Reader) {
	switch r.Peek() {
	case '{':
		for range r.Fields() {
			walk(r)
		}
	case '[':
		for range r.Elems() {
			walk(r)
		}
	case '"':
		_ = r.String()
	case 't', 'f':
		r.Bool()
	case 'n':
		r.Null()
	default:
		r.Number()
	}
}

func TestValidDoesNotAllocate(t *testing.T) {
	b := []byte(`{"path":"file_1.go","limit":200,"nested":[1,2,{"a":"b\n"}]}`)
	if n := testing.AllocsPerRun(100, func() { Valid(b) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func TestArenaIsSizedByTheEscapedShare(t *testing.T) {
	// 300 strings of 1 KB, one in ten with escapes: the arenas should
	// take about 30 KB, far below the 300 KB the unread input measures.
	var in []string
	for i := range 300 {
		s := strings.Repeat("x", 1000)
		if i%10 == 0 {
			s = strings.Repeat("a\"b", 250)
		}
		in = append(in, s)
	}
	doc, _ := json.Marshal(in)
	r := NewReader(doc)
	for range r.Elems() {
		_ = r.String()
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	if total := r.spent + cap(r.arena); total > len(doc)/4 {
		t.Fatalf("arenas took %d bytes for a %d-byte document", total, len(doc))
	}
}

func TestRawAndSinceAreCappedAtTheirLength(t *testing.T) {
	data := []byte(`[{"a":1},"tail"]`)
	r := NewReader(data)
	var first []byte
	for range r.Elems() {
		if first == nil {
			first = r.Raw()
		} else {
			r.Skip()
		}
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	_ = append(first, "XXXXXXXX"...)
	if string(data) != `[{"a":1},"tail"]` || cap(first) != len(first) {
		t.Fatalf("append to Raw overwrote the input: %s (cap %d)", data, cap(first))
	}
	r.Reset([]byte(`{"a":1}   `))
	mark := r.Mark()
	r.Skip()
	whole := r.Since(mark)
	if string(whole) != `{"a":1}` || cap(whole) != len(whole) {
		t.Fatalf("Since: %q, cap %d", whole, cap(whole))
	}
}
