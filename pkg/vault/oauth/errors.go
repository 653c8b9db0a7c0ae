package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/ompgo/omp/internal/retryafter"
)

// RefreshError is a failed token request. Its text reads like the
// reference's, e.g. "OpenAI Codex token refresh failed: 400 invalid_grant",
// and never contains a token. Err is the cause: an *oauth2.RetrieveError for
// an HTTP failure, a transport or context error, or a validation error.
type RefreshError struct {
	Provider    string        // provider id
	Label       string        // ErrorLabel of the provider
	Status      int           // HTTP status of the token endpoint; 0 if none
	Code        string        // OAuth "error" code, if any
	Description string        // OAuth "error_description" or message, if any
	RetryAfter  time.Duration // Retry-After of a 429/503 reply; 0 if none
	Err         error

	detail string // formatted status and body summary, secrets redacted
	text   string // the whole message, when set (MCP rows use the reference wording)
}

func (e *RefreshError) Error() string {
	if e.text != "" {
		return e.text
	}
	if e.detail == "" {
		return e.Label + " token refresh failed"
	}
	return e.Label + " token refresh failed: " + e.detail
}

// Unwrap returns the cause.
func (e *RefreshError) Unwrap() error { return e.Err }

// newError wraps err, summarising an HTTP failure. Every text that goes
// into the error, including the cause's reply body, passes through red,
// which holds the secrets the request carried.
func (p *Provider) newError(err error, red *Redactor) *RefreshError {
	e := &RefreshError{Provider: p.ID, Label: p.ErrorLabel, Err: err}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		echoed := scrubReply(re, red)
		e.Status = re.Response.StatusCode
		e.Code = re.ErrorCode
		e.Description = re.ErrorDescription
		e.RetryAfter = retryafter.Header(re.Response.Header.Get("Retry-After"), time.Now())
		switch {
		case isRedirect(e.Status):
			e.detail = redirectDetail(re.Response)
		case echoed:
			e.detail = withheldDetail(e.Status, e.Code)
		default:
			e.detail = FormatEndpointError(e.Status, string(re.Body))
		}
	} else {
		e.detail = err.Error()
	}
	e.detail = red.Redact(e.detail)
	return e
}

// scrubReply removes the request's secrets from a token endpoint's error
// reply in place and reports whether the reply echoed one. A reply that
// echoed a secret keeps neither its body nor any field that held the
// secret: only the status and a clean error code remain, so no encoding of
// the secret the redactor does not know can be stored or shown.
func scrubReply(re *oauth2.RetrieveError, red *Redactor) bool {
	echoed := false
	if body := string(re.Body); red.Redact(body) != body {
		re.Body = nil
		echoed = true
	}
	for _, field := range []*string{&re.ErrorCode, &re.ErrorDescription, &re.ErrorURI} {
		if red.Redact(*field) != *field {
			*field = ""
			echoed = true
		}
	}
	return echoed
}

// withheldDetail describes an error reply whose body echoed a secret.
func withheldDetail(status int, code string) string {
	d := strconv.Itoa(status)
	if code != "" {
		d += " " + excerpt(code)
	}
	return d + " (reply body withheld: it echoed a secret of the request)"
}

func isRedirect(status int) bool { return status >= 300 && status < 400 }

// redirectDetail describes a redirect answered by a token endpoint: the
// status and the origin the Location points to, never its path or query
// (which may carry parameters of the request).
func redirectDetail(resp *http.Response) string {
	d := strconv.Itoa(resp.StatusCode) + " redirect"
	if loc, err := resp.Location(); err == nil && loc.Host != "" {
		d += " to " + origin(loc)
	}
	return d + " not followed: token requests go only to the configured token endpoint"
}

// maxExcerpt bounds how much of a non-JSON error body goes into a message.
const maxExcerpt = 200

// FormatEndpointError summarises a token endpoint error reply the way the
// reference's formatOpenAICodexTokenEndpointError does: "<status>",
// "<status> <error>", "<status> <error>: <description>" for an OAuth JSON
// error, else "<status> <body excerpt>" (whitespace collapsed, truncated).
func FormatEndpointError(status int, body string) string {
	st := strconv.Itoa(status)
	trimmed := strings.TrimSpace(body)
	if trimmed == "" {
		return st
	}
	var obj map[string]any
	if json.Unmarshal([]byte(trimmed), &obj) != nil || obj == nil {
		return st + " " + excerpt(trimmed)
	}
	code := describe(obj["error"])
	desc := describe(obj["error_description"])
	switch {
	case code != "" && desc != "" && code != desc:
		return st + " " + excerpt(code+": "+desc)
	case code != "":
		return st + " " + excerpt(code)
	case desc != "":
		return st + " " + excerpt(desc)
	}
	if msg := describe(obj["message"]); msg != "" {
		return st + " " + excerpt(msg)
	}
	return st + " " + excerpt(trimmed)
}

// describe renders one value of an error body (reference
// describeTokenEndpointValue): strings, numbers, booleans, or objects with
// code/error and message/error_description/description.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		code := describe(firstOf(x, "code", "error"))
		msg := describe(firstOf(x, "message", "error_description", "description"))
		switch {
		case code != "" && msg != "" && code != msg:
			return code + ": " + msg
		case code != "":
			return code
		case msg != "":
			return msg
		}
		b, _ := json.Marshal(x)
		return string(b)
	}
	return ""
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v
		}
	}
	return nil
}

// excerpt collapses whitespace, replaces invalid UTF-8 and keeps at most
// maxExcerpt characters (the reference counts characters, not bytes).
func excerpt(s string) string {
	s = strings.ToValidUTF8(strings.Join(strings.Fields(s), " "), "\uFFFD")
	if len(s) > maxExcerpt {
		r := []rune(s)
		if len(r) > maxExcerpt {
			r = r[:maxExcerpt]
		}
		s = string(r) + "…"
	}
	return s
}

// Class is the outcome class of a failed refresh.
type Class int

// Failure classes.
const (
	// Transient failures leave the credential alone for the next attempt.
	Transient Class = iota
	// Definitive failures mean the grant is dead: disable the credential.
	Definitive
)

func (c Class) String() string {
	if c == Definitive {
		return "definitive"
	}
	return "transient"
}

// definitiveCodes are OAuth error codes that mean the grant or client is
// unusable whatever the HTTP status (RFC 6749 §5.2, RFC 6750 §3.1, plus
// provider variants).
var definitiveCodes = map[string]bool{
	"invalid_grant":         true,
	"invalid_token":         true,
	"invalid_client":        true,
	"unauthorized_client":   true,
	"access_denied":         true,
	"invalid_refresh_token": true,
	"refresh_token_expired": true,
	"refresh_token_reused":  true,
	"token_revoked":         true,
	"token_expired":         true,
}

// Classify tells a definitive refresh failure from a transient one by the
// error's type, never its text:
//   - context deadline or cancellation, net.Error (no reply) → Transient;
//   - *oauth2.RetrieveError: 429, 5xx and 3xx → Transient (a redirect is
//     never followed and says nothing about the grant: the endpoint moved or
//     is misconfigured, and the credential must survive until that is
//     fixed); a definitive OAuth error code (invalid_grant, invalid_token,
//     unauthorized_client, …) or status 400/401/403 → Definitive; anything
//     else → Transient;
//   - every other error (validation, unknown provider, nil) → Transient.
func Classify(err error) Class {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Transient
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		switch {
		case status == http.StatusTooManyRequests || status >= 500 || isRedirect(status):
			return Transient
		case definitiveCodes[strings.ToLower(re.ErrorCode)]:
			return Definitive
		case status == http.StatusBadRequest || status == http.StatusUnauthorized || status == http.StatusForbidden:
			return Definitive
		}
		return Transient
	}
	return Transient
}

var (
	definitiveText = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)invalid_grant|invalid_token|revoked|unauthorized|expired.*refresh|refresh.*expired`)
	})
	authStatusText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(401|403)\b`) })
	networkText    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)timeout|network|fetch failed|ECONNREFUSED`) })
)

// IsDefinitiveMessage is the reference's isDefinitiveOAuthFailure, kept
// for failures known only by their text (client reports):
// invalid_grant/invalid_token/revoked/unauthorized/expired refresh → true;
// else a 401 or 403 not accompanied by a network hint → true; else false.
func IsDefinitiveMessage(msg string) bool {
	if definitiveText().MatchString(msg) {
		return true
	}
	return authStatusText().MatchString(msg) && !networkText().MatchString(msg)
}
