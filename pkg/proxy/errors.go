package proxy

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/anthropic"
	"github.com/ompgo/omp/pkg/llm/openai"
	"github.com/ompgo/omp/pkg/llm/pinative"
	"github.com/ompgo/omp/pkg/vault/pick"
)

// Fixed client texts.
const (
	msgBodyTooLarge = "Request body too large"
	msgAborted      = "Request was aborted"
	msgUpstream     = "Upstream request failed"
)

// apiError is an error the gateway itself decides (unknown model, no
// credential, body too large, client gone): a status and a client-safe
// message, rendered in the route's envelope.
type apiError struct {
	Status  int
	Message string
	Err     error // cause, only logged
	// RetryAfter, when positive, is sent as Retry-After.
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return e.Message }
func (e *apiError) Unwrap() error { return e.Err }

func errorf(status int, msg string) error { return &apiError{Status: status, Message: msg} }

// problem classifies err: the
// gateway's own errors keep their status; codec rejections are 400; a
// missing credential is 401; everything else goes through llm.Classify,
// which reads the upstream's typed status first. The message
// is the upstream's own. A 429/503/529 forwards the
// provider's retry hint as Retry-After.
func problem(err error) httpx.Problem {
	var ae *apiError
	var oe *openai.RequestError
	var pe *pinative.RequestError
	var ir *llm.InvalidRequestError
	var he *httpx.Error
	switch {
	case errors.As(err, &ae):
		return httpx.Problem{Status: ae.Status, Message: ae.Message, RetryAfter: ae.RetryAfter}
	case errors.As(err, &he):
		if he.Status == http.StatusRequestEntityTooLarge {
			return httpx.Problem{Status: he.Status, Message: msgBodyTooLarge}
		}
		return httpx.Problem{Status: he.Status, Message: he.Message}
	case errors.As(err, &oe):
		return httpx.Problem{Status: http.StatusBadRequest, Message: oe.Message}
	case errors.As(err, &pe):
		return httpx.Problem{Status: http.StatusBadRequest, Message: pe.Message}
	case errors.As(err, &ir):
		return httpx.Problem{Status: http.StatusBadRequest, Message: ir.Message}
	case errors.Is(err, pick.ErrNoCredential):
		// pick.NoCredential carries the reference's exact text.
		return httpx.Problem{Status: http.StatusUnauthorized, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return httpx.Problem{Status: 499, Message: msgAborted}
	}
	c := llm.Classify(err)
	p := httpx.Problem{Status: c.Status, Message: upstreamMessage(err)}
	var ue *llm.UpstreamError
	if errors.As(err, &ue) && ue.RetryAfter > 0 && (p.Status == 429 || p.Status == 503 || p.Status == 529) {
		p.RetryAfter = ue.RetryAfter
	}
	return p
}

// upstreamMessage is the client-facing text of an upstream failure: the
// provider's own message.
func upstreamMessage(err error) string {
	var ue *llm.UpstreamError
	switch {
	case errors.As(err, &ue) && ue.Message != "":
		return ue.Message
	case err != nil:
		return err.Error()
	}
	return msgUpstream
}

// renderOpenAI writes the Chat Completions / Responses envelope
// {"error":{"message","type","param","code"}}.
func renderOpenAI(w http.ResponseWriter, _ *http.Request, p httpx.Problem) {
	status := openai.ErrorStatus(p.Status)
	if p.Status == 499 {
		status = 499
	}
	usage := status == http.StatusTooManyRequests && llm.IsUsageLimitText(p.Message)
	writeError(w, status, "application/json", openai.AppendErrorBody(nil, status, p.Message, usage))
}

// renderAnthropic writes {"type":"error","error":{"type","message"}}; an
// upstream 503 is Anthropic's 529 overloaded_error.
func renderAnthropic(w http.ResponseWriter, _ *http.Request, p httpx.Problem) {
	status := p.Status
	if status == 503 {
		status = 529
	}
	typ := anthropic.ErrorType(status)
	if status == 499 {
		typ = "request_aborted"
	}
	writeError(w, status, "application/json", anthropic.AppendErrorBody(nil, typ, p.Message))
}

// renderPi writes the pi-native envelope {"error":{"type","message"}}
// with its own headers.
func renderPi(w http.ResponseWriter, _ *http.Request, p httpx.Problem) {
	w.Header().Set("Cache-Control", pinative.ErrorCacheControl)
	writeError(w, p.Status, pinative.ContentTypeJSON, pinative.AppendError(nil, pinative.ErrorType(p.Status), p.Message))
}

func writeError(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
