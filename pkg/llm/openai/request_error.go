package openai

import (
	"errors"
	"fmt"

	"github.com/ompgo/omp/internal/jsonr"
)

// RequestError is an inbound request the codec cannot accept. Message is
// safe to show the client (it never contains a credential) and already
// carries the gateway's wording: "Invalid JSON body: …", "Missing
// top-level `model` field", or a schema error prefixed "openai-chat: " /
// "openai-responses: ". The status is always 400.
type RequestError struct {
	Message string
	Err     error
}

func (e *RequestError) Error() string { return e.Message }

// Unwrap returns the underlying cause.
func (e *RequestError) Unwrap() error { return e.Err }

// Status returns the HTTP status of a request error (400).
func (e *RequestError) Status() int { return 400 }

// Error prefixes of the two inbound formats.
const (
	chatPrefix      = "openai-chat: "
	responsesPrefix = "openai-responses: "
)

// errMissingModel is the gateway's exact text for a body without a model.
const errMissingModel = "Missing top-level `model` field"

// decodeError turns a lexer or schema failure into a RequestError.
func decodeError(prefix string, err error) error {
	var re *RequestError
	if errors.As(err, &re) {
		return re
	}
	var se *jsonr.SyntaxError
	if errors.As(err, &se) {
		return &RequestError{Message: "Invalid JSON body: " + se.Error(), Err: err}
	}
	return &RequestError{Message: prefix + err.Error(), Err: err}
}

// schemaErr is a schema failure found by a decoder.
func schemaErr(prefix, format string, args ...any) *RequestError {
	return &RequestError{Message: prefix + fmt.Sprintf(format, args...)}
}
