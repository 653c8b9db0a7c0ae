package google

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/retryafter"
	"github.com/ompgo/omp/pkg/llm"
)

// maxErrorBody bounds how much of a failed response is read.
const maxErrorBody = 64 << 10

// upstreamError builds the error of a non-2xx response from its status,
// headers and body ({"error":{code,message,status,details}} or plain text).
// The retry delay comes from Retry-After / retry-after-ms, else from a
// google.rpc.RetryInfo detail.
func upstreamError(provider string, status int, h http.Header, body []byte, now time.Time) *llm.UpstreamError {
	e := &llm.UpstreamError{Provider: provider, Status: status}
	if h != nil {
		e.RetryAfter = retryafter.Parse(h.Get("Retry-After"), h.Get("Retry-After-Ms"), now)
		e.RequestID = h.Get("X-Request-Id")
	}
	var env struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		applyAPIError(e, env.Error)
		return e
	}
	// Some proxies answer with an array of statuses.
	var arr []struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(body, &arr) == nil && len(arr) > 0 && arr[0].Error != nil {
		applyAPIError(e, arr[0].Error)
		return e
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 1000 {
		msg = msg[:1000] + "…"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	e.Message = msg
	return e
}

// streamError builds the error of an in-stream {"error":…} object.
func streamError(provider string, a *apiError) *llm.UpstreamError {
	e := &llm.UpstreamError{Provider: provider, Status: a.Code}
	if a.Code < 400 {
		e.Status = 0
	}
	applyAPIError(e, a)
	if e.Message == "" {
		e.Message = "stream error"
	}
	return e
}

func applyAPIError(e *llm.UpstreamError, a *apiError) {
	e.Type = a.Status
	e.Message = a.Message
	for _, d := range a.Details {
		switch {
		case strings.HasSuffix(d.Type, "google.rpc.ErrorInfo"):
			if e.Code == "" {
				e.Code = d.Reason
			}
		case strings.HasSuffix(d.Type, "google.rpc.RetryInfo"):
			if e.RetryAfter == 0 {
				if dur, err := time.ParseDuration(d.RetryDelay); err == nil && dur > 0 {
					e.RetryAfter = retryafter.Clamp(dur)
				}
			}
		}
	}
}
