package vault

import (
	"errors"
	"fmt"
)

// Error codes. They map to HTTP statuses in exactly one table (pkg/vault/api).
const (
	EINVALID      = "invalid"      // the request is malformed or fails validation (400)
	EUNAUTHORIZED = "unauthorized" // bearer missing or wrong (401)
	EFORBIDDEN    = "forbidden"    // the bearer is known but its scope does not allow the action (403)
	ENOTFOUND     = "not_found"    // no such (active) credential or route (404)
	ETOOLARGE     = "too_large"    // request body over the limit (413)
	ECONFLICT     = "conflict"     // the operation conflicts with current state (409)
	EUPSTREAM     = "upstream"     // a provider call failed (502)
	EUNAVAILABLE  = "unavailable"  // a dependency is down (503)
	EINTERNAL     = "internal"     // anything else (500, generic message)
)

// Error is the application error. Message is safe to show to a client and
// never contains a secret; Err is the underlying cause and is only logged.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted client-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err: the Message of the
// first *Error in its chain, or "internal error" for anything else.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return "internal error"
}

// NotFoundID is the exact error the broker returns for an unknown or inactive id.
func NotFoundID(id int64) *Error {
	return Errorf(ENOTFOUND, "No credential with id=%d", id)
}
