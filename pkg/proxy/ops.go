package proxy

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ompgo/omp/pkg/vault"
)

// usage answers GET /v1/usage: the broker's usage reports
// through the Source (the remote store's 15 s single-flight cache), in
// the broker's shape. A failure is "reports":[] with
// status 200, never an error status.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) error {
	reports, err := s.source.Usage(r.Context())
	if err != nil {
		s.log.Warn("auth-gateway usage fetch failed", "error", err)
		reports = nil
	}
	if reports == nil {
		reports = []vault.UsageReport{}
	}
	return writeGenericJSON(w, struct {
		GeneratedAt int64               `json:"generatedAt"`
		Reports     []vault.UsageReport `json:"reports"`
	}{s.now().UnixMilli(), reports})
}

// usageHistory answers GET /v1/usage/history by relaying the caller's query
// to the broker (the gateway keeps no history of its own), so the usage
// page served by the gateway can draw its chart. The broker's 400 (bad
// days) and 404 (a broker without history) keep their status; any other
// failure is a 502.
func (s *Server) usageHistory(w http.ResponseWriter, r *http.Request) error {
	if s.history == nil {
		writeGeneric(w, http.StatusNotFound, []byte(`{"error":"usage history is not available on this gateway"}`))
		return nil
	}
	page, err := s.history(r.Context(), r.URL.Query())
	if err != nil {
		status, msg := http.StatusBadGateway, "auth-broker usage history fetch failed"
		var ve *vault.Error
		if errors.As(err, &ve) && (ve.Code == vault.EINVALID || ve.Code == vault.ENOTFOUND) {
			status, msg = http.StatusBadRequest, ve.Message
			if ve.Code == vault.ENOTFOUND {
				status, msg = http.StatusNotFound, "the broker keeps no usage history"
			}
		}
		s.log.Warn("auth-gateway usage history fetch failed", "error", err)
		body, _ := json.Marshal(map[string]string{"error": msg})
		writeGeneric(w, status, body)
		return nil
	}
	if page.Entries == nil {
		page.Entries = []vault.UsageHistoryEntry{}
	}
	return writeGenericJSON(w, struct {
		GeneratedAt int64                     `json:"generatedAt"`
		Entries     []vault.UsageHistoryEntry `json:"entries"`
		Truncated   bool                      `json:"truncated,omitempty"`
	}{page.GeneratedAt, page.Entries, page.Truncated})
}

// credentialsCheck answers GET /v1/credentials/check: the
// usage-probe health of every active credential, never the completion
// probe.
func (s *Server) credentialsCheck(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.CheckCredentials(r.Context(), false)
	if err != nil {
		return err
	}
	return writeGenericJSON(w, struct {
		GeneratedAt int64              `json:"generatedAt"`
		Credentials []CredentialHealth `json:"credentials"`
	}{s.now().UnixMilli(), rows})
}

func writeGenericJSON(w http.ResponseWriter, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	writeGeneric(w, http.StatusOK, body)
	return nil
}
