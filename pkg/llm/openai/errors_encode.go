package openai

import (
	"errors"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// ErrorStatus maps a gateway status onto the status a Chat or Responses
// client receives: 529 (Anthropic overloaded) becomes 503;
// everything else is kept.
func ErrorStatus(status int) int {
	if status == 529 {
		return 503
	}
	if status < 400 || status > 599 {
		return 502
	}
	return status
}

// errorTypeCode returns the C/R error type and code for a status (table
// 10.2); code "" is emitted as null.
func errorTypeCode(status int, usageLimit bool) (typ, code string) {
	switch {
	case status == 401:
		return "invalid_request_error", "invalid_api_key"
	case status == 404:
		return "invalid_request_error", "model_not_found"
	case status == 429 && usageLimit:
		return "insufficient_quota", "insufficient_quota"
	case status == 429:
		return "requests", "rate_limit_exceeded"
	case status == 499:
		return "request_aborted", ""
	case status >= 400 && status < 500:
		return "invalid_request_error", ""
	}
	return "server_error", ""
}

// AppendErrorBody appends the Chat / Responses error envelope
// {"error":{"message","type","param":null,"code"}} for status.
// usageLimit selects the insufficient_quota form
// of a 429. Send it with ErrorStatus(status) and Content-Type
// application/json.
func AppendErrorBody(dst []byte, status int, message string, usageLimit bool) []byte {
	typ, code := errorTypeCode(status, usageLimit)
	dst = append(dst, `{"error":`...)
	dst = appendErrorObject(dst, message, typ, code)
	return append(dst, '}')
}

func appendErrorObject(dst []byte, message, typ, code string) []byte {
	dst = append(dst, `{"message":`...)
	dst = jsonw.Plain(dst, message)
	dst = append(dst, `,"type":`...)
	dst = jsonw.Plain(dst, typ)
	dst = append(dst, `,"param":null,"code":`...)
	if code == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonw.Plain(dst, code)
	}
	return append(dst, '}')
}

// failure describes a canonical error event for an encoder.
type failure struct {
	message    string
	status     int
	usageLimit bool
	code       string // the upstream's own code, when it had one
}

func describeFailure(ev *llm.Event) failure {
	f := failure{message: "Upstream request failed"}
	if ev.Partial != nil && ev.Partial.ErrorMessage != "" {
		f.message = ev.Partial.ErrorMessage
	}
	c := llm.Classify(ev.Err)
	if ev.Err == nil && ev.Partial != nil {
		c = llm.ClassifyMessage(ev.Partial.ErrorMessage)
	}
	f.status, f.usageLimit = ErrorStatus(c.Status), c.UsageLimit
	var ue *llm.UpstreamError
	if errors.As(ev.Err, &ue) {
		f.code = ue.Code
	}
	return f
}
