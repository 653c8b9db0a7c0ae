package clitext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSafe(t *testing.T) {
	for _, tc := range []struct {
		name, in, line, multi string
	}{
		{"plain", "laptop-01.example.com", "laptop-01.example.com", "laptop-01.example.com"},
		{"accents and CJK", "café 日本語 naïve", "café 日本語 naïve", "café 日本語 naïve"},
		{"emoji", "deploy 🚀 ok 👍🏽", "deploy 🚀 ok 👍🏽", "deploy 🚀 ok 👍🏽"},
		{"replacement char kept", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb"},
		{"ESC", "a\x1bb", `a\x1bb`, `a\x1bb`},
		{"BEL", "ding\x07", `ding\x07`, `ding\x07`},
		{"OSC 52 clipboard", "h\x1b]52;c;ZWNobyBwd25lZA==\x07", `h\x1b]52;c;ZWNobyBwd25lZA==\x07`, `h\x1b]52;c;ZWNobyBwd25lZA==\x07`},
		{"OSC 0 title", "\x1b]0;owned\x1b\\", `\x1b]0;owned\x1b\`, `\x1b]0;owned\x1b\`},
		{"CSI clear", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`, `\x1b[2J\x1b[H`},
		{"C1 CSI", "x\u009b2Jy", `x\u009b2Jy`, `x\u009b2Jy`},
		{"C1 OSC and ST", "\u009d0;t\u009c", `\u009d0;t\u009c`, `\u009d0;t\u009c`},
		{"DEL and NUL", "a\x7fb\x00c", `a\x7fb\x00c`, `a\x7fb\x00c`},
		{"carriage return", "ok\rFAIL", `ok\rFAIL`, `ok\rFAIL`},
		{"newline and tab", "line1\n\tline2", `line1\n\tline2`, "line1\n\tline2"},
		{"bidi override", "evil\u202etxt.exe", `evil\u202etxt.exe`, `evil\u202etxt.exe`},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`, `\u2066a\u2067b\u2068c\u2069`},
		{"bidi embeddings", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`, `\u202a\u202b\u202c\u202d`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"raw C1 byte", "a\x9bb", `a\x9bb`, `a\x9bb`},
		{"empty", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SafeLine(tc.in); got != tc.line {
				t.Errorf("SafeLine(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got := Safe(tc.in); got != tc.multi {
				t.Errorf("Safe(%q) = %q, want %q", tc.in, got, tc.multi)
			}
			for _, got := range []string{SafeLine(tc.in), Safe(tc.in)} {
				checkInert(t, got)
				if again := Safe(got); again != got {
					t.Errorf("Safe is not idempotent: %q → %q", got, again)
				}
			}
		})
	}
}

// checkInert fails when s could drive a terminal.
func checkInert(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%q is not valid UTF-8", s)
	}
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Errorf("%q still holds %U", s, r)
		}
	}
}

func FuzzSafe(f *testing.F) {
	f.Add("\x1b]52;c;aGk=\x07\u009b\u202e\xff")
	f.Add("plain 🚀")
	f.Fuzz(func(t *testing.T, s string) {
		checkInert(t, Safe(s))
		line := SafeLine(s)
		checkInert(t, line)
		if strings.ContainsAny(line, "\n\t") {
			t.Errorf("SafeLine(%q) = %q keeps a newline or tab", s, line)
		}
	})
}

// The --json outputs are not passed through Safe: encoding/json writes
// every C0 control (ESC, BEL, newline…) as a \u escape, so no escape
// sequence reaches the terminal raw.
func TestJSONLineEscapesControls(t *testing.T) {
	var b strings.Builder
	in := "h\x1b]52;c;aGk=\x07\x1b[2J\r\n"
	if err := JSONLine(&b, map[string]string{"hostname": in}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(strings.TrimSuffix(out, "\n"), "\x1b\x07\r\n") {
		t.Errorf("JSON output holds a raw control: %q", out)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(out), &back); err != nil || back["hostname"] != in {
		t.Errorf("JSON round trip: %v %q", err, back["hostname"])
	}
}

func TestFprintf(t *testing.T) {
	var b strings.Builder
	if _, err := Fprintf(&b, "failed %s: %s\n", "a@x\x1b[2J", "upload: \x07\u202e"); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "failed a@x\\x1b[2J: upload: \\x07\\u202e\n"; got != want {
		t.Errorf("Fprintf wrote %q, want %q", got, want)
	}
}

func TestSafeJSON(t *testing.T) {
	in := map[string]string{"host": "a\x7fb\u009b2Jc\u202ed\u2066e", "plain": "héllo ✓"}
	doc, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got := SafeJSON(doc)
	for _, r := range string(got) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Fatalf("SafeJSON left %U raw in %s", r, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("SafeJSON output is not JSON: %v: %s", err, got)
	}
	if back["host"] != in["host"] || back["plain"] != in["plain"] {
		t.Fatalf("SafeJSON changed the values: %q", back)
	}
	clean := []byte(`{"a":"b"}`)
	if got := SafeJSON(clean); &got[0] != &clean[0] {
		t.Fatal("SafeJSON copied a clean document")
	}
}
