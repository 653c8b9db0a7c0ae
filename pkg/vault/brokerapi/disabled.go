package brokerapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
)

// DisabledSource lists soft-deleted credentials for GET
// /v1/credentials/disabled (sqlite.Store implements it).
type DisabledSource interface {
	// ListDisabled returns the disabled records of provider ("" = all), by id.
	ListDisabled(ctx context.Context, provider string) ([]vault.Record, error)
}

// DisabledCredential is one tombstone: identity fields
// only for OAuth rows that have them, never token material.
type DisabledCredential struct {
	ID           int64  `json:"id"`
	Provider     string `json:"provider"`
	Type         string `json:"type"`
	Cause        string `json:"cause"`
	Email        string `json:"email,omitempty"`
	AccountID    string `json:"accountId,omitempty"`
	OrgID        string `json:"orgId,omitempty"`
	OrgName      string `json:"orgName,omitempty"`
	DisabledAtMs int64  `json:"disabledAtMs,omitempty"`
}

// NewDisabledCredential is the tombstone of a disabled record.
func NewDisabledCredential(r vault.Record) DisabledCredential {
	d := DisabledCredential{ID: r.ID, Provider: r.Provider, Type: string(r.Credential.Type), Cause: r.DisabledCause}
	if !r.UpdatedAt.IsZero() {
		d.DisabledAtMs = r.UpdatedAt.Unix() * 1000
	}
	if r.Credential.IsOAuth() {
		c := r.Credential
		d.Email, d.AccountID = c.Email, c.AccountID
		_ = json.Unmarshal(c.Extra["orgId"], &d.OrgID)
		_ = json.Unmarshal(c.Extra["orgName"], &d.OrgName)
	}
	return d
}

type disabledBody struct {
	GeneratedAt int64                `json:"generatedAt"`
	Disabled    []DisabledCredential `json:"disabled"`
}

// disabled serves GET /v1/credentials/disabled[?provider=]:
// every soft-deleted row, id ascending; an empty provider means all.
func (s *Server) disabled(w http.ResponseWriter, r *http.Request) error {
	out := []DisabledCredential{}
	if s.Disabled != nil {
		recs, err := s.Disabled.ListDisabled(r.Context(), r.URL.Query().Get("provider"))
		if err != nil {
			return err
		}
		for _, rec := range recs {
			out = append(out, NewDisabledCredential(rec))
		}
	}
	s.log.Debug("auth-broker disabled credentials served", httpx.Peer(r), "disabled", len(out))
	return httpx.WriteJSON(w, http.StatusOK, disabledBody{GeneratedAt: s.Now().UnixMilli(), Disabled: out})
}

// DisabledCredentials fetches GET /v1/credentials/disabled[?provider=]. A
// broker older than 17.1.4 answers 404: that is an empty list, not an error.
func (c *Client) DisabledCredentials(ctx context.Context, provider string) ([]DisabledCredential, error) {
	path := "/v1/credentials/disabled"
	if provider != "" {
		path += "?provider=" + url.QueryEscape(provider)
	}
	r, err := c.do(ctx, http.MethodGet, path, reqOpts{auth: true})
	if err != nil {
		var he *Error
		if errors.As(err, &he) && he.Status == http.StatusNotFound {
			return []DisabledCredential{}, nil
		}
		return nil, err
	}
	return decodeBody(r, func(raw json.RawMessage) ([]DisabledCredential, error) {
		var b struct {
			Disabled []DisabledCredential `json:"disabled"`
		}
		if err := json.Unmarshal(raw, &b); err != nil || b.Disabled == nil {
			return nil, errors.New("disabled must be an array of disabled credentials")
		}
		return b.Disabled, nil
	})
}
