package clitext

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Safe returns s ready to print on a terminal when s came from another
// party (a broker, a provider, a client's report): every character that
// can drive a terminal or reorder what is shown is replaced by a visible
// escape, so the text reads the same and cannot clear the screen, set the
// window title or write the clipboard. Newline and tab are kept, for
// multi-line text such as an error message; everything else is as in
// SafeLine. Text with nothing to replace is returned unchanged.
func Safe(s string) string { return escape(s, true) }

// SafeLine is Safe for one-line text (a table cell, a label, a heading):
// newline and tab are escaped too. It replaces the C0 controls, DEL, the
// C1 controls (U+0080–U+009F), the bidirectional embeddings, overrides and
// isolates (U+202A–U+202E, U+2066–U+2069) and bytes that are not UTF-8,
// as Go writes them in a quoted string: \n, \t, \r, \x1b, \u009b, \u202e,
// \xff.
func SafeLine(s string) string { return escape(s, false) }

func escape(s string, multiLine bool) string {
	i := firstUnsafe(s, multiLine)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r, multiLine):
			writeEscape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// firstUnsafe is the byte offset of the first character escape replaces,
// or -1.
func firstUnsafe(s string, multiLine bool) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r, multiLine) {
			return i
		}
		i += n
	}
	return -1
}

func unsafeRune(r rune, multiLine bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !multiLine
	case r < 0x20 || r == 0x7f: // C0 controls, DEL
		return true
	case r >= 0x80 && r <= 0x9f: // C1 controls
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	}
	return false
}

func writeEscape(b *strings.Builder, r rune) {
	switch {
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\t':
		b.WriteString(`\t`)
	case r == '\r':
		b.WriteString(`\r`)
	case r < utf8.RuneSelf:
		fmt.Fprintf(b, `\x%02x`, r)
	default:
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// Fprintf is fmt.Fprintf with the formatted text passed through Safe: for
// a message line whose arguments came from another party (an identity
// read from a file, an error from the broker). The format's own newlines
// are kept.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return io.WriteString(w, Safe(fmt.Sprintf(format, args...)))
}

// SafeJSON rewrites the characters of an encoded JSON document that
// encoding/json leaves raw but a terminal acts on (DEL, the C1 controls and
// the bidirectional controls) as \uXXXX escapes. Outside strings a JSON
// document holds only ASCII punctuation, literals and whitespace, so every
// such character sits inside a string, where the escape decodes to the
// same value: the document means exactly what it meant before.
func SafeJSON(doc []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(doc); {
		r, n := utf8.DecodeRune(doc[i:])
		if r != '\n' && r != '\t' && r >= 0x7f && unsafeRune(r, false) {
			if out == nil {
				out = make([]byte, 0, len(doc)+16)
			}
			out = append(out, doc[last:i]...)
			out = fmt.Appendf(out, `\u%04x`, r)
			last = i + n
		}
		i += n
	}
	if out == nil {
		return doc
	}
	return append(out, doc[last:]...)
}
