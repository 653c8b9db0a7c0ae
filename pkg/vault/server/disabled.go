package server

import (
	"context"
	"net/http"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// DisabledSource lists soft-deleted credentials for GET
// /v1/credentials/disabled (sqlite.Store implements it).
type DisabledSource interface {
	// ListDisabled returns the disabled records of provider ("" = all), by id.
	ListDisabled(ctx context.Context, provider string) ([]vault.Record, error)
}

// disabled serves GET /v1/credentials/disabled[?provider=]:
// every soft-deleted row, id ascending; an empty provider means all.
func (s *Server) disabled(w http.ResponseWriter, r *http.Request) error {
	out := []api.DisabledCredential{}
	if s.Disabled != nil {
		recs, err := s.Disabled.ListDisabled(r.Context(), r.URL.Query().Get("provider"))
		if err != nil {
			return err
		}
		for _, rec := range recs {
			out = append(out, api.NewDisabledCredential(rec))
		}
	}
	s.log.Debug("auth-broker disabled credentials served", httpx.Peer(r), "disabled", len(out))
	return httpx.WriteJSON(w, http.StatusOK, api.DisabledList{GeneratedAt: s.Now().UnixMilli(), Disabled: out})
}
