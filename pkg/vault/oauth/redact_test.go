package oauth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// encodings returns the forms of secret an echoing endpoint is expected to
// produce: raw, URL-encoded, JSON-escaped (with and without HTML escaping,
// with "\/"), and base64 in four variants behind a prefix of 0, 1 and 2
// bytes. Base64 forms are given as the whole encoding of prefix+secret; a
// Redactor must leave none of them whole.
func encodings(secret string) map[string]string {
	out := map[string]string{
		"raw":         secret,
		"query":       url.QueryEscape(secret),
		"path":        url.PathEscape(secret),
		"query lower": lowerHexEscapes(url.QueryEscape(secret)),
	}
	for _, html := range []bool{true, false} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(secret)
		q := strings.TrimSuffix(buf.String(), "\n")
		name := "json"
		if !html {
			name = "json no-html"
		}
		out[name] = q
		out[name+` \/`] = strings.ReplaceAll(q, "/", `\/`)
	}
	b64 := map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding, "raw std": base64.RawStdEncoding, "raw url": base64.RawURLEncoding}
	for name, enc := range b64 {
		for _, prefix := range []string{"", "u", "us"} {
			out["base64 "+name+" after "+prefix] = enc.EncodeToString([]byte(prefix + secret))
		}
	}
	return out
}

// leaks reports the encodings of secret found in out, with the redaction
// marker taken out first so that it can neither hide nor form an
// occurrence.
func leaks(out, secret string) []string {
	cleaned := strings.ReplaceAll(out, Redacted, "\x00")
	var found []string
	for name, form := range encodings(secret) {
		if strings.HasPrefix(name, "base64") {
			// A whole base64 value is found when its core is: check the
			// secret-only part the Redactor aims at.
			continue
		}
		if strings.Contains(cleaned, form) {
			found = append(found, name)
		}
	}
	for _, core := range base64Cores(secret) {
		if strings.Contains(cleaned, core) {
			found = append(found, "base64 core "+core)
		}
	}
	return found
}

func TestRedactRemovesEveryEncoding(t *testing.T) {
	secrets := []string{
		"rt_abc/def+ghi=jkl",     // reserved URL and base64 characters
		`sk-"quoted"&<tag>\back`, // JSON and HTML escapes
		"1//0gLongGoogleRefreshToken-xyz",
		"client secret with spaces",
		"ünïcödé-sécret",
	}
	for _, secret := range secrets {
		for name, form := range encodings(secret) {
			t.Run(secret+"/"+name, func(t *testing.T) {
				text := `400 {"error":"invalid_request","echo":"grant_type=refresh_token&x=` + form + `&y=1"}`
				got := Redact(text, secret)
				if l := leaks(got, secret); len(l) > 0 {
					t.Fatalf("Redact left %v in %q", l, got)
				}
				if strings.Contains(got, form) {
					t.Fatalf("Redact left the whole %s form in %q", name, got)
				}
				if !strings.Contains(got, Redacted) || !strings.HasPrefix(got, `400 {"error":"invalid_request"`) {
					t.Fatalf("Redact = %q, want the surrounding text kept and %s in place of the secret", got, Redacted)
				}
			})
		}
	}
}

func TestRedactTable(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{"no secret", "400 invalid_grant", []string{"abcd"}, "400 invalid_grant"},
		{"short secrets are ignored", "400 abc", []string{"abc", ""}, "400 abc"},
		{"raw", "token rt-1234 unknown", []string{"rt-1234"}, "token [redacted] unknown"},
		{"form body", "refresh_token=abc%2Fdef&client_secret=s%2Bx%3D", []string{"abc/def", "s+x="}, "refresh_token=[redacted]&client_secret=[redacted]"},
		{"lowercase percent escapes", "refresh_token=abc%2fdef", []string{"abc/def"}, "refresh_token=[redacted]"},
		{"json html escapes", `{"t":"a\u0026b\u003cc"}`, []string{"a&b<c"}, `{"t":"[redacted]"}`},
		{"json uppercase escapes", `{"t":"a\u0026b\u003Cc"}`, []string{"a&b<c"}, `{"t":"[redacted]"}`},
		{"json escaped slash", `{"t":"1\/\/0g-abc"}`, []string{"1//0g-abc"}, `{"t":"[redacted]"}`},
		{"overlapping secrets become one marker", "xxabcdefyy", []string{"abcdef", "defg", "cdef"}, "xx[redacted]yy"},
		{"two occurrences", "rt-1234 and rt-1234", []string{"rt-1234"}, "[redacted] and [redacted]"},
		{"basic authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("client-id:client-secret-1")), []string{"client-secret-1"}, "Basic "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in, tt.secrets...)
			if tt.name == "basic authorization" {
				// The characters at the core's edges also encode client-id bytes
				// and may stay; the secret's own characters must not.
				if !strings.HasPrefix(got, tt.want) || !strings.Contains(got, Redacted) || len(leaks(got, tt.secrets[0])) > 0 {
					t.Fatalf("Redact = %q", got)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSecretsOfSkipsTheRemoteSentinel(t *testing.T) {
	for _, s := range SecretsOf(mcpCred("sek-ret", "__remote__")) {
		if s == "__remote__" {
			t.Fatal("SecretsOf lists the remote refresh sentinel: every snapshot would be redacted")
		}
	}
}

// FuzzRedact: for any secret of at least four bytes and any surrounding
// text, no encoding of the secret survives Redact, and Redact never panics.
func FuzzRedact(f *testing.F) {
	f.Add("abc/def", "refresh_token=", "&client_id=x")
	f.Add("sk-\"<&>\"", `{"error":"`, `"}`)
	f.Add("1//0gXYZ", "Basic dXM6", "==")
	f.Add("]abc", "[redacted", "")
	f.Fuzz(func(t *testing.T, secret, before, after string) {
		for _, form := range encodings(secret) {
			out := Redact(before+form+after+form, secret)
			if len(secret) < minSecretLen || strings.Contains(secret, "\x00") {
				continue // not redacted by design / cannot be told from the marker
			}
			if l := leaks(out, secret); len(l) > 0 {
				t.Fatalf("secret %q: Redact(%q) = %q leaves %v", secret, before+form+after+form, out, l)
			}
		}
	})
}
