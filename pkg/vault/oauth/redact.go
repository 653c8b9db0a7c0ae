package oauth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// Redacted replaces every secret found by a Redactor.
const Redacted = "[redacted]"

// minSecretLen is the shortest secret a Redactor looks for: shorter values
// (an empty client secret, a placeholder) would match ordinary text.
const minSecretLen = 4

// Redactor removes the secrets of one token request from text that may
// echo them: an upstream error body, a transport error, a log line, a
// stored disable cause. A secret is found in each form an endpoint is
// likely to echo it in:
//   - raw;
//   - URL-encoded, as a query or form value and as a path segment, with
//     upper- or lowercase hex digits;
//   - inside a JSON string, as encoding/json writes it (with and without
//     HTML escaping, \u0026-style) and with "/" written as "\/";
//   - base64, standard and URL alphabets, padded or not, at any of the
//     three byte alignments it can have inside a longer encoded value
//     (for example client_id:client_secret in a Basic authorization);
//   - each base64 form URL-encoded and JSON-escaped as well.
//
// The zero Redactor redacts nothing. A Redactor is safe for concurrent use.
type Redactor struct {
	forms []string // every form of every secret, longest first, no duplicates
}

// NewRedactor returns a Redactor for secrets; empty secrets and secrets
// shorter than four bytes are ignored.
func NewRedactor(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	add := func(f string) {
		if len(f) >= minSecretLen && !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for _, s := range secrets {
		if len(s) < minSecretLen {
			continue
		}
		for _, base := range append([]string{s}, base64Cores(s)...) {
			for _, f := range wrappings(base) {
				add(f)
			}
		}
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return &Redactor{forms: forms}
}

// Redact returns s with every occurrence of every form of the secrets
// replaced by Redacted. Overlapping occurrences become one Redacted.
func (r *Redactor) Redact(s string) string {
	if r == nil || len(r.forms) == 0 || s == "" {
		return s
	}
	// Record every occurrence, overlapping ones included, as the furthest
	// end of an occurrence starting at each byte; then rebuild s with each
	// covered run replaced once. Working on the original text (rather than
	// replacing form after form) means a replacement can never create or
	// hide an occurrence of another form.
	var reach []int // reach[i]: end of the longest occurrence starting at i, 0 if none
	for _, f := range r.forms {
		for from := 0; from <= len(s)-len(f); {
			i := strings.Index(s[from:], f)
			if i < 0 {
				break
			}
			start := from + i
			if reach == nil {
				reach = make([]int, len(s))
			}
			reach[start] = max(reach[start], start+len(f))
			from = start + 1
		}
	}
	if reach == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if reach[i] == 0 {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(Redacted)
		for end := reach[i]; i < end; i++ {
			end = max(end, reach[i])
		}
	}
	return b.String()
}

// Redact is NewRedactor(secrets...).Redact(s).
func Redact(s string, secrets ...string) string {
	return NewRedactor(secrets...).Redact(s)
}

// SecretsOf lists the secrets a credential carries: its access and refresh
// tokens, its API key and, for MCP rows, the client secret.
func SecretsOf(cred vault.Credential) []string {
	out := []string{cred.Access, cred.Key}
	if cred.Refresh != vault.RemoteRefreshSentinel {
		out = append(out, cred.Refresh)
	}
	if sec := cred.ExtraString(mcpClientSecret); sec != "" {
		out = append(out, sec)
	}
	return out
}

// wrappings returns s and the forms it takes inside a URL and inside a
// JSON string.
func wrappings(s string) []string {
	out := []string{s}
	for _, esc := range []string{url.QueryEscape(s), url.PathEscape(s)} {
		out = append(out, esc, lowerHexEscapes(esc))
	}
	for _, j := range jsonForms(s) {
		out = append(out, j, strings.ReplaceAll(j, "/", `\/`))
	}
	return out
}

// jsonForms returns s as encoding/json writes it inside a string, with and
// without HTML escaping, and with the \u escapes' hex digits in uppercase.
func jsonForms(s string) []string {
	var out []string
	for _, html := range []bool{true, false} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(html)
		if enc.Encode(s) != nil {
			continue
		}
		q := strings.TrimSuffix(buf.String(), "\n")
		q = q[1 : len(q)-1] // drop the quotes
		out = append(out, q, upperUnicodeEscapes(q))
	}
	return out
}

// base64Cores returns, for the standard and URL alphabets, the part of the
// base64 encoding of s that is the same wherever s sits in the encoded
// value: one core for each of the three offsets s can have relative to a
// 3-byte group. The characters before and after a core also depend on the
// neighbouring bytes and are left as they are.
func base64Cores(s string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := range 3 {
			buf := make([]byte, k+len(s))
			copy(buf[k:], s)
			full := enc.EncodeToString(buf)
			// Character i holds bits [6i, 6i+6) of the input; keep the
			// characters whose bits all come from s.
			start := (8*k + 5) / 6
			end := 8 * (k + len(s)) / 6
			if end-start >= minSecretLen {
				out = append(out, full[start:end])
			}
		}
	}
	return out
}

// lowerHexEscapes rewrites the %XX escapes of s with lowercase hex digits.
func lowerHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = toLowerASCII(b[i+1])
			b[i+2] = toLowerASCII(b[i+2])
		}
	}
	return string(b)
}

// upperUnicodeEscapes rewrites the \uXXXX escapes of a JSON string body
// with uppercase hex digits.
func upperUnicodeEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+5 < len(b); i++ {
		if b[i] == '\\' && b[i+1] == '\\' {
			i++ // an escaped backslash, not the start of an escape
			continue
		}
		if b[i] == '\\' && b[i+1] == 'u' {
			for j := i + 2; j < i+6; j++ {
				if b[j] >= 'a' && b[j] <= 'f' {
					b[j] -= 'a' - 'A'
				}
			}
			i += 5
		}
	}
	return string(b)
}

func toLowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
