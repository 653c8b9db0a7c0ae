package api

import (
	"net/http"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// UnavailableRetryAfter is the Retry-After sent with every 503: a vault
// error with code EUNAVAILABLE, such as a write refused because the storage
// is full ("vault storage is full") or the vault is read-only ("vault is
// read-only"). Such conditions need an operator; 30 s keeps well-behaved
// clients from hammering the broker meanwhile.
const UnavailableRetryAfter = 30 * time.Second

// ErrorBody is the body of every error answer: {"error": "<text>"}.
type ErrorBody struct {
	Error string `json:"error"`
}

// statusByCode is THE table mapping vault error codes to HTTP statuses.
var statusByCode = map[string]int{
	vault.EINVALID:      http.StatusBadRequest,
	vault.EUNAUTHORIZED: http.StatusUnauthorized,
	vault.EFORBIDDEN:    http.StatusForbidden,
	vault.ENOTFOUND:     http.StatusNotFound,
	vault.ECONFLICT:     http.StatusConflict,
	vault.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	vault.EUPSTREAM:     http.StatusBadGateway,
	vault.EUNAVAILABLE:  http.StatusServiceUnavailable,
	vault.EINTERNAL:     http.StatusInternalServerError,
}

// Status returns the HTTP status for err's vault error code (500 for an
// unknown code or an error that is not a *vault.Error, 200 for nil).
func Status(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if s, ok := statusByCode[vault.ErrorCode(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeForStatus is the inverse of the table: the vault error code the client
// attaches to an HTTP error status (EINTERNAL for statuses not in it).
func CodeForStatus(status int) string {
	for code, s := range statusByCode {
		if s == status && code != vault.EINTERNAL {
			return code
		}
	}
	return vault.EINTERNAL
}
