package httpx

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// BrokerBodyLimit is the broker's request body limit; the reference has
// none.
const BrokerBodyLimit = 1 << 20

// ReadJSON reads r's body (at most limit bytes) and checks it is JSON. The
// errors are *Error with the reference broker's exact client texts:
//
//   - body over the limit → 413 "request body too large";
//   - body stalled or too slow (Serve's body bounds) → 408 MsgBodyTimeout;
//   - read failure → 400 "Invalid request body: <err>";
//   - empty body → 400 "Request body required", unless allowEmpty, in
//     which case the body is taken as {};
//   - JSON syntax error → 400 "Invalid JSON body: <err>".
//
// Validating the shape is the caller's job.
func ReadJSON(w http.ResponseWriter, r *http.Request, limit int64, allowEmpty bool) (json.RawMessage, error) {
	raw, err := ReadBody(w, r, limit, allowEmpty)
	if err != nil {
		return nil, err
	}
	if err := CheckJSON(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// ReadBody is ReadJSON without the JSON syntax check, for a handler whose
// own strict parser accepts only valid JSON and calls CheckJSON before it
// reports anything else (the check is a full extra pass over the body).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64, allowEmpty bool) ([]byte, error) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	raw, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &Error{Status: http.StatusRequestEntityTooLarge, Message: "request body too large", Err: err}
		}
		var he *Error // the body's own verdict, such as a read timeout (408)
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, &Error{Status: http.StatusBadRequest, Message: "Invalid request body: " + err.Error(), Err: err}
	}
	if len(raw) == 0 {
		if !allowEmpty {
			return nil, &Error{Status: http.StatusBadRequest, Message: "Request body required"}
		}
		return []byte(`{}`), nil
	}
	return raw, nil
}

// CheckJSON is ReadJSON's syntax check: 400 "Invalid JSON body: <err>".
func CheckJSON(raw []byte) error {
	if !json.Valid(raw) {
		var probe json.RawMessage
		err := json.Unmarshal(raw, &probe)
		return &Error{Status: http.StatusBadRequest, Message: "Invalid JSON body: " + err.Error(), Err: err}
	}
	return nil
}
