package jsonw

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c\n\t<>&", "\u2028\x00\xff", "héllo", "\b\f\x7f", "0123456789abcdef<x>"} {
		f.Add(s)
	}
	f.Add(strings.Repeat("lorem ipsum dolor sit amet ", 5) + "\u2028" + strings.Repeat("x", 70) + "<\xff>")
	f.Fuzz(func(t *testing.T, s string) {
		// Long inputs take the word-at-a-time path, short ones the tail,
		// and runs of more than four clean words the block copy.
		checkString(t, s)
		checkString(t, "0123456789abcdef"+s+s+s)
		checkString(t, prose[:len(s)%64+40]+s+prose+s)
	})
}

// prose is a clean run long enough for the block copy.
var prose = strings.Repeat("lorem ipsum dolor sit amet ", 8)

// TestMasksFlagEveryByteTheyMust checks the word masks for every byte in
// every lane of a clean word: maskPlain and maskString flag exactly the
// bytes their dialect does not copy as they are (lowest flag on the
// byte), maskBlockString at least String's.
func TestMasksFlagEveryByteTheyMust(t *testing.T) {
	for c := range 256 {
		for lane := range 8 {
			b := []byte("abcdefgh")
			b[lane] = byte(c)
			v := binary.LittleEndian.Uint64(b)
			for _, tc := range []struct {
				name string
				m    uint64
				safe bool
			}{{"maskPlain", maskPlain(v), plain[c]}, {"maskString", maskString(v), htmlSafe[c]}} {
				if got := tc.m != 0; got == tc.safe {
					t.Errorf("%s(%#x in lane %d) flags %v", tc.name, c, lane, got)
				} else if got && bits.TrailingZeros64(tc.m)>>3 != lane {
					t.Errorf("%s(%#x in lane %d): lowest flag in lane %d", tc.name, c, lane, bits.TrailingZeros64(tc.m)>>3)
				}
			}
			if !htmlSafe[c] && maskBlockString(v) == 0 {
				t.Errorf("maskBlockString misses %#x in lane %d", c, lane)
			}
		}
	}
}

// TestEveryEscapeAtEveryOffset puts each byte class both dialects treat
// specially at every offset of a long clean run, so each lands in every
// lane of the word and block loops.
func TestEveryEscapeAtEveryOffset(t *testing.T) {
	for _, e := range []string{"^", "|", "~", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "<", ">", "&", "\b", "\u2028", "\u2029", "\xff", "\xe2\x80", "é", "😀", "\ufffd"} {
		for p := range len(prose) + 1 {
			checkString(t, prose[:p]+e+prose[p:])
		}
	}
}

func checkString(t *testing.T, s string) {
	t.Helper()
	{
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, want %s", s, got, want)
		}
		if got, want := Plain(nil, s), refPlain(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("Plain(%q) = %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(Plain(nil, s), &back); err != nil || back != strings.ToValidUTF8(s, "\ufffd") && utf8.ValidString(s) {
			t.Fatalf("Plain(%q) decodes to %q, %v", s, back, err)
		}
		// An exact-size buffer is filled in place, and so is one
		// that runs out in the middle (the rest goes through the tail).
		exact := Plain(nil, s)
		pbuf := make([]byte, 0, len(exact))
		if got := Plain(pbuf, s); !bytes.Equal(got, exact) || cap(got) != cap(pbuf) || &got[0] != &pbuf[:1][0] {
			t.Fatalf("Plain into exact buffer = %s (reallocated: %v)", got, cap(got) != cap(pbuf) || &got[0] != &pbuf[:1][0])
		}
		buf := make([]byte, 0, len(want))
		if got := String(buf, s); !bytes.Equal(got, want) || cap(got) != cap(buf) || &got[0] != &buf[:1][0] {
			t.Fatalf("String into exact buffer = %s (reallocated: %v)", got, cap(got) != cap(buf) || &got[0] != &buf[:1][0])
		}
		if got := String(make([]byte, 0, len(s)+1), s); !bytes.Equal(got, want) {
			t.Fatalf("String into a buffer of len(s)+1 = %s", got)
		}
	}
}

// refPlain is the pi-native codec's original string writer, whose bytes
// the pinative, OpenAI and Google goldens hold.
func refPlain(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func TestDialectsDifferOnlyInHTMLAndShortEscapes(t *testing.T) {
	for _, tc := range []struct{ in, str, plain string }{
		{"<a&b>", `"\u003ca\u0026b\u003e"`, `"<a&b>"`},
		{"\b\f", `"\b\f"`, `"\u0008\u000c"`},
		{"\u2028\xff\x01", `"\u2028\ufffd\u0001"`, `"\u2028\ufffd\u0001"`},
	} {
		if got := string(String(nil, tc.in)); got != tc.str {
			t.Errorf("String(%q) = %s, want %s", tc.in, got, tc.str)
		}
		if got := string(Plain(nil, tc.in)); got != tc.plain {
			t.Errorf("Plain(%q) = %s, want %s", tc.in, got, tc.plain)
		}
	}
}

func TestFloat(t *testing.T) {
	for f, want := range map[float64]string{1: "1", 0.5: "0.5", -2: "-2", 1e20: "1e+20"} {
		if got := string(Float(nil, f)); got != want {
			t.Errorf("Float(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestNumberMatchesEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -0.5, 1e21, 1e-7, 123456789.125, 3e-9} {
		want, _ := json.Marshal(f)
		if got := string(Number(nil, f)); got != string(want) {
			t.Errorf("Number(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestFieldsSeparateMembers(t *testing.T) {
	dst := append([]byte(nil), '{')
	dst = PlainField(dst, "a", "<x>")
	dst = IntField(dst, "n", 3)
	dst = BoolField(dst, "b", true)
	dst = RawField(dst, "r", []byte(`[1]`))
	dst = append(dst, '}')
	if want := `{"a":"<x>","n":3,"b":true,"r":[1]}`; string(dst) != want {
		t.Fatalf("got %s, want %s", dst, want)
	}
}

func TestCompactRepairsOrKeeps(t *testing.T) {
	for in, want := range map[string]string{`{ "a" : [1, 2] }`: `{"a":[1,2]}`, `{"a":1}`: `{"a":1}`, `{bad`: `{}`, ``: `{}`} {
		if got := string(Compact(nil, []byte(in), "{}")); got != want {
			t.Errorf("Compact(%q) = %s, want %s", in, got, want)
		}
	}
}

func BenchmarkPlain(b *testing.B) {
	s := strings.Repeat("hello \"world\" the quick brown fox\n", 1000)
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = Plain(buf[:0], s)
	}
}

// BenchmarkStrings writes both dialects on the gateway's workloads: prose
// is one ~1 KB chat message of plain ASCII (the 300-message benchmark
// request is 300 of them), escapes a line with quotes, '<>&' and a
// newline every few words, linesN source code (or paragraphs) with
// N-byte lines.
func BenchmarkStrings(b *testing.B) {
	for _, w := range []struct{ name, s string }{
		{"prose", "message 7: " + strings.Repeat("lorem ipsum dolor sit amet ", 37)},
		{"escapes", strings.Repeat("hello \"world\" <b>the</b> quick & brown fox\n", 30)},
		{"lines40", strings.Repeat("\tif err := w.Write(buf[:n]); err != nil {\n", 25)},
		{"lines72", strings.Repeat("// lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiu\n", 15)},
		{"lines100", strings.Repeat("// lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut lab\n", 10)},
		{"lines200", strings.Repeat(strings.Repeat("lorem ipsum dolor sit amet ", 7)+"consectetur adipis\n", 5)},
	} {
		for _, d := range []struct {
			name string
			fn   func([]byte, string) []byte
		}{{"String", String}, {"Plain", Plain}} {
			b.Run(w.name+"/"+d.name, func(b *testing.B) {
				buf := make([]byte, 0, 2*len(w.s))
				b.SetBytes(int64(len(w.s)))
				for b.Loop() {
					buf = d.fn(buf[:0], w.s)
				}
			})
		}
	}
}

func TestPlainDoesNotReallocateAnExactBuffer(t *testing.T) {
	s := strings.Repeat("tool output <ok> ", 20)
	buf := make([]byte, 0, len(s)+2)
	if n := testing.AllocsPerRun(100, func() { buf = Plain(buf[:0], s) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
