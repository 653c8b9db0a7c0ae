package jsonw

import (
	"encoding/json"
	"testing"
)

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c\n\t<>&", "\u2028\x00\xff", "héllo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestFloat(t *testing.T) {
	for f, want := range map[float64]string{1: "1", 0.5: "0.5", -2: "-2", 1e20: "1e+20"} {
		if got := string(Float(nil, f)); got != want {
			t.Errorf("Float(%v) = %s, want %s", f, got, want)
		}
	}
}
