package config

import (
	"maps"
	"strings"
	"testing"
)

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"plain pair", "A=1", map[string]string{"A": "1"}},
		{"blank lines and full-line comments ignored", "\n  # c\n#A=1\nB=2\n", map[string]string{"B": "2"}},
		{"export prefix dropped", "export A=1\nexport\tB = 2", map[string]string{"A": "1", "B": "2"}},
		{"spaces around key and value trimmed", "  A  =   hello world   ", map[string]string{"A": "hello world"}},
		{"inline comment after whitespace stripped", "A=val # note\nB=val\t#x", map[string]string{"A": "val", "B": "val"}},
		{"hash without preceding space kept", "A=a#b\nB=#x", map[string]string{"A": "a#b", "B": "#x"}},
		{"double quotes keep hash and spaces", `A=" x # y "`, map[string]string{"A": " x # y "}},
		{"single quotes", `A='v # w'`, map[string]string{"A": "v # w"}},
		{"backticks", "A=`v`", map[string]string{"A": "v"}},
		{"escaped quote does not close", `A="a\"b" tail`, map[string]string{"A": `a\"b`}},
		{"unterminated quote runs to end", `A="abc`, map[string]string{"A": "abc"}},
		{"no escape processing", `A="a\nb"`, map[string]string{"A": `a\nb`}},
		{"empty value", "A=\nB=''", map[string]string{"A": "", "B": ""}},
		{"value keeps later equals", "A=b=c", map[string]string{"A": "b=c"}},
		{"invalid names dropped", "1A=x\nA-B=y\n=z\nexport=1\nC D=2", map[string]string{"export": "1"}},
		{"line without equals ignored", "JUSTTEXT\nA=1", map[string]string{"A": "1"}},
		{"CRLF line endings", "A=1\r\nB=\"2\"\r\n", map[string]string{"A": "1", "B": "2"}},
		{"later duplicate wins", "A=1\nA=2", map[string]string{"A": "2"}},
		{"BOM stripped", "\uFEFFA=1", map[string]string{"A": "1"}},
		{"NUL value dropped", "A=x\x00y\nB=1", map[string]string{"B": "1"}},
		{"OMP keys not mirrored by the parser", "OMP_X=1", map[string]string{"OMP_X": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseDotenv([]byte(tt.in))
			if !maps.Equal(got, tt.want) {
				t.Errorf("ParseDotenv(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{"A=1", "export A='x'", "A=\"x # y\" # z", "#c\nB=`q", "\uFEFFA=\r\n", "A=\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for k, v := range ParseDotenv(data) {
			if !ValidEnvName(k) {
				t.Fatalf("invalid key %q", k)
			}
			if strings.ContainsAny(v, "\x00\n") {
				t.Fatalf("value %q holds NUL or newline", v)
			}
		}
	})
}
