package httpx

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/ompgo/omp/pkg/vault"
)

// BrokerBodyLimit is the broker's request body limit (discrepancies.md B30).
const BrokerBodyLimit = 1 << 20

// ReadJSON reads r's body (at most limit bytes) and checks it is JSON. The
// errors carry the exact client texts of broker.md §2.1:
//
//   - body over the limit → ETOOLARGE "request body too large" (413);
//   - read failure → EINVALID "Invalid request body: <err>";
//   - empty body → EINVALID "Request body required", unless allowEmpty, in
//     which case the body is taken as {};
//   - JSON syntax error → EINVALID "Invalid JSON body: <err>".
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
			return nil, &vault.Error{Code: vault.ETOOLARGE, Message: "request body too large", Err: err}
		}
		return nil, &vault.Error{Code: vault.EINVALID, Message: "Invalid request body: " + err.Error(), Err: err}
	}
	if len(raw) == 0 {
		if !allowEmpty {
			return nil, vault.Errorf(vault.EINVALID, "Request body required")
		}
		return json.RawMessage(`{}`), nil
	}
	var probe json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, &vault.Error{Code: vault.EINVALID, Message: "Invalid JSON body: " + err.Error(), Err: err}
	}
	return raw, nil
}
