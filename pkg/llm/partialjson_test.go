package llm

import (
	"encoding/json"
	"testing"
)

func TestParsePartialJSON(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty gives empty object", "", `{}`},
		{"complete object kept", `{"a":1}`, `{"a":1}`},
		{"open object closed", `{"a":1`, `{"a":1}`},
		{"dangling comma dropped", `{"a":1,`, `{"a":1}`},
		{"dangling key dropped", `{"a":1,"b`, `{"a":1}`},
		{"dangling colon dropped", `{"a":1,"b":`, `{"a":1}`},
		{"partial literal dropped", `{"a":tr`, `{}`},
		{"open string value closed", `{"city":"Par`, `{"city":"Par"}`},
		{"dangling escape trimmed", `{"p":"a\`, `{"p":"a"}`},
		{"partial unicode escape trimmed", `{"p":"a\u00`, `{"p":"a"}`},
		{"nested containers closed", `{"a":[1,{"b":[2`, `{"a":[1,{"b":[2]}]}`},
		{"garbage gives empty object", `xyz`, `{}`},
		{"only brace", `{`, `{}`},
		{"string in array closed", `["ab`, `["ab"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParsePartialJSON(tt.in)
			if string(got) != tt.want {
				t.Fatalf("ParsePartialJSON(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestFinalizeArguments(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"object kept byte for byte", `{"a": 1}`, `{"a": 1}`},
		{"empty becomes empty object", "", `{}`},
		{"invalid kept as raw", `{"a":`, `{"__raw":"{\"a\":"}`},
		{"non-object kept as raw", `[1]`, `{"__raw":"[1]"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FinalizeArguments(tt.in); string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func FuzzParsePartialJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\u00`, `{"x":"y"}`, `[[[`, `{"a":-1.5e`, `"\\\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := ParsePartialJSON(s)
		if !json.Valid(out) {
			t.Fatalf("ParsePartialJSON(%q) = %q: not valid JSON", s, out)
		}
		if fin := FinalizeArguments(s); !json.Valid(fin) || fin[0] != '{' {
			t.Fatalf("FinalizeArguments(%q) = %q: not a JSON object", s, fin)
		}
	})
}
