package proxy

import (
	"encoding/json"
	"net/http"

	"github.com/ompgo/omp/pkg/vault"
)

// usage answers GET /v1/usage (gateway.md §8): the broker's usage reports
// through the Source (the remote store's 15 s single-flight cache,
// usage.md §4.2), in the broker's shape. A failure is "reports":[] with
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

// credentialsCheck answers GET /v1/credentials/check (gateway.md §7): the
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
