package usageview

import (
	"strings"
	"unicode"

	"github.com/ompgo/omp/internal/clitext"
)

// Styled terminal text for `omp usage`: a line is a list of segments, each
// with one style, so a line can be measured and cut by display width before
// colour escapes are added: every line fits in 80 columns.

// TermWidth is the width every text line of `omp usage` fits in.
const TermWidth = 80

type style uint8

const (
	plain style = iota
	bold
	dim
	red
	yellow
	green
	cyan
	boldCyan
)

// sgr holds the escape that starts and the one that ends each style (the
// chalk colours the reference uses).
var sgr = [...][2]string{
	plain:    {"", ""},
	bold:     {"\x1b[1m", "\x1b[22m"},
	dim:      {"\x1b[2m", "\x1b[22m"},
	red:      {"\x1b[31m", "\x1b[39m"},
	yellow:   {"\x1b[33m", "\x1b[39m"},
	green:    {"\x1b[32m", "\x1b[39m"},
	cyan:     {"\x1b[36m", "\x1b[39m"},
	boldCyan: {"\x1b[1m\x1b[36m", "\x1b[39m\x1b[22m"},
}

type seg struct {
	text string
	st   style
}

type line []seg

// s is a segment of text in style st. The text is made terminal-safe here
// (clitext.SafeLine), so no label, cause or note from a provider, the
// broker or the vault can carry an escape onto the terminal, whichever
// line builds it; the only escapes render writes are its own styles.
func s(st style, text string) seg { return seg{clitext.SafeLine(text), st} }

func (l line) width() int {
	n := 0
	for _, sg := range l {
		n += Width(sg.text)
	}
	return n
}

// cut shortens l to at most w columns, ending with "…" when anything was
// dropped.
func (l line) cut(w int) line {
	if l.width() <= w {
		return l
	}
	var out line
	left := w - 1
	for _, sg := range l {
		sw := Width(sg.text)
		if sw <= left {
			out = append(out, sg)
			left -= sw
			continue
		}
		out = append(out, seg{truncCols(sg.text, left) + "…", sg.st})
		return out
	}
	return out
}

// Render joins lines; colour adds the SGR escapes.
func Render(lines []line, colour bool) string {
	var b strings.Builder
	for _, l := range lines {
		for _, sg := range l {
			if colour && sg.st != plain && sg.text != "" {
				b.WriteString(sgr[sg.st][0])
				b.WriteString(sg.text)
				b.WriteString(sgr[sg.st][1])
			} else {
				b.WriteString(sg.text)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Width is the terminal width of s: one column per rune, two for East
// Asian wide and emoji runes, none for combining marks.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200B:
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF, r >= 0xAC00 && r <= 0xD7A3,
		r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60,
		r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F, r >= 0x1F900 && r <= 0x1F9FF,
		r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}

// truncCols returns the longest prefix of s at most w columns wide.
func truncCols(s string, w int) string {
	n := 0
	for i, r := range s {
		rw := runeWidth(r)
		if n+rw > w {
			return s[:i]
		}
		n += rw
	}
	return s
}

// ellipsize cuts s to w columns with a trailing "…" when it is wider.
func ellipsize(s string, w int) string {
	if Width(s) <= w {
		return s
	}
	if w <= 0 {
		return ""
	}
	return truncCols(s, w-1) + "…"
}

// padRight pads s with spaces to w columns.
func padRight(s string, w int) string {
	if d := w - Width(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}

// clean is clitext.SafeLine: text from a provider, the broker or the vault
// with its controls, bidi overrides and invalid bytes shown as visible
// escapes, on one line. Callers apply it before measuring the text, so
// the columns are planned with the width the escapes take.
func clean(text string) string { return clitext.SafeLine(text) }
