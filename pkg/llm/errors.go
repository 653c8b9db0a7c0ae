package llm

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// UpstreamError is a failure reported by a provider: a non-2xx response, or
// an error event inside a stream (Status is then the status of the stream,
// usually 200). Message is the provider's own message; it never contains a
// credential.
type UpstreamError struct {
	// Provider is the catalog provider id that failed.
	Provider string
	// Status is the HTTP status (0 when the failure had none).
	Status int
	// Type is the provider's error type ("rate_limit_error",
	// "insufficient_quota", "RESOURCE_EXHAUSTED", …).
	Type string
	// Code is the provider's error code, when it has one.
	Code string
	// Message is the provider's error message.
	Message string
	// RetryAfter is the delay the provider asked for (0 when none).
	RetryAfter time.Duration
	// RequestID is the provider's request id, for support.
	RequestID string
	// Err is an underlying cause (a transport error), if any.
	Err error
}

// Error returns "<provider> <status> <type>: <message>" with the empty parts
// left out and the retry-after hint appended.
func (e *UpstreamError) Error() string {
	b := make([]byte, 0, 64+len(e.Message))
	if e.Provider != "" {
		b = append(b, e.Provider...)
		b = append(b, ' ')
	}
	if e.Status != 0 {
		b = append(b, "HTTP "...)
		b = strconv.AppendInt(b, int64(e.Status), 10)
		b = append(b, ' ')
	}
	if e.Type != "" {
		b = append(b, e.Type...)
		b = append(b, ' ')
	}
	if len(b) > 0 {
		b = append(b[:len(b)-1], ": "...)
	}
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if msg == "" {
		msg = "upstream error"
	}
	b = append(b, msg...)
	if e.RetryAfter > 0 {
		b = append(b, " (retry after "...)
		b = append(b, e.RetryAfter.Round(time.Second).String()...)
		b = append(b, ')')
	}
	return string(b)
}

// Unwrap returns the underlying cause.
func (e *UpstreamError) Unwrap() error { return e.Err }

// TransportError is the UpstreamError of a request that got no response:
// message names the URL (scheme://host:port/path, never the query) and the
// reason, e.g. "request to http://127.0.0.1:9/v1/messages failed:
// connection refused" (httpx.TransportFailure builds both from the
// client's error); cause is the error without the URL.
func TransportError(provider, message string, cause error) *UpstreamError {
	return &UpstreamError{Provider: provider, Message: message, Err: cause}
}

// ErrorClass is the coarse kind of a failure, used for credential failover
// and for the gateway's status mapping.
type ErrorClass uint8

// Error classes.
const (
	ClassUpstream       ErrorClass = iota // 5xx, transport, unknown (502 upstream_error)
	ClassAuth                             // 401/403 (authentication_error)
	ClassRateLimit                        // 429 or usage / quota limit (rate_limit_error)
	ClassInvalidRequest                   // other 4xx (invalid_request_error)
	ClassAborted                          // context cancelled (499 request_aborted)
)

// String returns the gateway error type of the class.
func (c ErrorClass) String() string {
	switch c {
	case ClassAuth:
		return "authentication_error"
	case ClassRateLimit:
		return "rate_limit_error"
	case ClassInvalidRequest:
		return "invalid_request_error"
	case ClassAborted:
		return "request_aborted"
	}
	return "upstream_error"
}

// Classification is the outcome of Classify.
type Classification struct {
	Class ErrorClass
	// Status is the HTTP status the gateway answers with: the upstream's
	// own status when it had one in the class's range, else the class's
	// default (401, 429, 400, 499, 502).
	Status int
	// UsageLimit is true when the failure is a usage / quota limit (switch
	// credentials rather than retrying the same one).
	UsageLimit bool
}

// Type returns the gateway error type ("rate_limit_error", …).
func (c Classification) Type() string { return c.Class.String() }

// errorPatterns are the message ladder's regular expressions. They are
// compiled on first use, not at package init: every command of the omp
// binary links this package, and compiling them was the largest of its
// initialisers (about 1.5 ms of the ~10 ms they take together).
var errorPatterns = sync.OnceValue(func() *errorRegexps {
	return &errorRegexps{
		embeddedStatus: regexp.MustCompile(`(?i)(?:\bHTTP\b|\bAPI error\b|\bstatus(?:[- _]?code)?\b)\s*[:=]?\s*\(?\s*(\d{3})\b|\((\d{3})\)`),
		aborted:        regexp.MustCompile(`(?i)\baborted\b|\babort signal\b`),
		unauthorized:   regexp.MustCompile(`(?i)\b(?:unauthorized|forbidden)\b`),
		rateLimit:      regexp.MustCompile(`(?i)\brate[- _]?limit(?:s|ed|ing)?\b|\bquota(?:_exceeded| exceeded)?\b|\btoo[- _]many[- _]requests\b`),
		usageLimit:     regexp.MustCompile(`(?i)usage.?limit|usage_limit_reached|usage_not_included|limit_reached|quota.?exceeded|quota.?reached|resource.?exhausted|exhausted your capacity|quota will reset`),
		accountLimit:   regexp.MustCompile(`(?i)\baccount(?:'s)?\b[^\n]{0,80}\brate.?limit\b|\brate.?limit\b[^\n]{0,80}\baccount\b`),
		invalid:        regexp.MustCompile(`(?i)\b(?:unsupported|invalid_request|invalid request|bad request|malformed)\b`),
	}
})

type errorRegexps struct {
	embeddedStatus, aborted, unauthorized, rateLimit, usageLimit, accountLimit, invalid *regexp.Regexp
}

// IsUsageLimitText reports whether msg reads as a provider usage / quota
// limit (the reference's isUsageLimitError).
func IsUsageLimitText(msg string) bool {
	re := errorPatterns()
	return re.usageLimit.MatchString(msg) || re.accountLimit.MatchString(msg)
}

// Classify buckets err in a fixed order: a typed status first, then
// cancellation, then the message ladder.
// A nil error classifies as ClassUpstream with status 502.
func Classify(err error) Classification {
	var ue *UpstreamError
	if errors.As(err, &ue) && ue.Status >= 400 {
		c := bucket(ue.Status)
		c.UsageLimit = c.Class == ClassRateLimit && IsUsageLimitText(ue.Type+" "+ue.Code+" "+ue.Message) ||
			ue.Type == "insufficient_quota" || ue.Code == "insufficient_quota"
		return c
	}
	if errors.Is(err, context.Canceled) {
		return Classification{Class: ClassAborted, Status: 499}
	}
	var ir *InvalidRequestError
	if errors.As(err, &ir) {
		return Classification{Class: ClassInvalidRequest, Status: 400}
	}
	if err == nil {
		return Classification{Class: ClassUpstream, Status: 502}
	}
	msg := err.Error()
	if ue != nil {
		msg = ue.Type + " " + ue.Code + " " + ue.Message
	}
	return ClassifyMessage(msg)
}

// ClassifyMessage applies the text ladder (the message-pattern steps of
// Classify) to a message that carries no typed status.
func ClassifyMessage(msg string) Classification {
	re := errorPatterns()
	if m := re.embeddedStatus.FindStringSubmatch(msg); m != nil {
		s := m[1]
		if s == "" {
			s = m[2]
		}
		if n, _ := strconv.Atoi(s); n >= 100 && n <= 599 {
			c := bucket(n)
			c.UsageLimit = c.Class == ClassRateLimit && IsUsageLimitText(msg)
			return c
		}
	}
	switch {
	case re.aborted.MatchString(msg):
		return Classification{Class: ClassAborted, Status: 499}
	case re.unauthorized.MatchString(msg):
		return Classification{Class: ClassAuth, Status: 401}
	case IsUsageLimitText(msg):
		return Classification{Class: ClassRateLimit, Status: 429, UsageLimit: true}
	case re.rateLimit.MatchString(msg):
		return Classification{Class: ClassRateLimit, Status: 429}
	case re.invalid.MatchString(msg):
		return Classification{Class: ClassInvalidRequest, Status: 400}
	}
	return Classification{Class: ClassUpstream, Status: 502}
}

func bucket(status int) Classification {
	switch {
	case status == 401 || status == 403:
		return Classification{Class: ClassAuth, Status: status}
	case status == 429:
		return Classification{Class: ClassRateLimit, Status: 429}
	case status >= 400 && status < 500:
		return Classification{Class: ClassInvalidRequest, Status: status}
	case status >= 500 && status <= 599:
		return Classification{Class: ClassUpstream, Status: status}
	}
	return Classification{Class: ClassUpstream, Status: 502}
}

// errorText returns the canonical errorMessage for err.
func errorText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return fmt.Sprint(err)
}

// InvalidRequestError is a client request that a codec or adapter rejects
// (HTTP 400 invalid_request_error). Message is safe to show the client.
type InvalidRequestError struct {
	Message string
	Err     error
}

// Error returns the client-safe message.
func (e *InvalidRequestError) Error() string { return e.Message }

// Unwrap returns the underlying cause (a JSON syntax error, …).
func (e *InvalidRequestError) Unwrap() error { return e.Err }

// InvalidRequestf returns an *InvalidRequestError with a formatted message.
func InvalidRequestf(format string, args ...any) error {
	return &InvalidRequestError{Message: fmt.Sprintf(format, args...)}
}
