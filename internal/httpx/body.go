package httpx

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// BrokerBodyLimit is the broker's request body limit (discrepancies.md B30).
const BrokerBodyLimit = 1 << 20

// ReadJSON reads r's body (at most limit bytes) and checks it is JSON. The
// errors are *Error with the exact client texts of broker.md §2.1:
//
//   - body over the limit → 413 "request body too large";
//   - read failure → 400 "Invalid request body: <err>";
//   - empty body → 400 "Request body required", unless allowEmpty, in
//     which case the body is taken as {};
//   - JSON syntax error → 400 "Invalid JSON body: <err>".
//
// Validating the shape is the caller's job.
func ReadJSON(w http.ResponseWriter, r *http.Request, limit int64, allowEmpty bool) (json.RawMessage, error) {
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
		return nil, &Error{Status: http.StatusBadRequest, Message: "Invalid request body: " + err.Error(), Err: err}
	}
	if len(raw) == 0 {
		if !allowEmpty {
			return nil, &Error{Status: http.StatusBadRequest, Message: "Request body required"}
		}
		return json.RawMessage(`{}`), nil
	}
	var probe json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Message: "Invalid JSON body: " + err.Error(), Err: err}
	}
	return raw, nil
}
