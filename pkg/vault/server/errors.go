package server

import (
	"errors"
	"net/http"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// classify is the broker's httpx Classify: a *vault.Error with a message is
// shown with its table status and message (503s with api.UnavailableRetryAfter);
// an *httpx.Error (body errors) with its own; anything else, and a
// *vault.Error without a message, is unexpected: 500 (or the code's status)
// "internal error (request id <id>)", logged with the same id.
func classify(err error) httpx.Problem {
	var ve *vault.Error
	if !errors.As(err, &ve) {
		return httpx.DefaultClassify(err)
	}
	p := httpx.Problem{Status: api.Status(ve), Message: ve.Message, Unexpected: ve.Message == ""}
	if p.Status == http.StatusServiceUnavailable {
		p.RetryAfter = api.UnavailableRetryAfter
	}
	return p
}
