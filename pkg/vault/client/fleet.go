package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// PostBlock publishes block b of credential id (POST
// /v1/credential/:id/block) with the reference body {"providerKey",
// "blockScope","blockedUntilMs"}; b.UpdatedAtMs is not sent.
func (c *Client) PostBlock(ctx context.Context, id int64, b vault.CredentialBlock) error {
	w := api.WireBlock(b)
	w.UpdatedAtMs = 0
	return c.postOK(ctx, http.MethodPost, api.CredentialPath(id, api.ActionBlock), w)
}

// ClearBlocks lifts every block of credential id (DELETE
// /v1/credential/:id/blocks).
func (c *Client) ClearBlocks(ctx context.Context, id int64) error {
	return c.postOK(ctx, http.MethodDelete, api.CredentialPath(id, api.ActionBlocks), nil)
}

// MarkUsageStale expires the broker's cached usage reports (POST
// /v1/usage/stale): all of them for provider "", else, on a Go broker, that
// provider's only (reference brokers ignore the body and expire all).
func (c *Client) MarkUsageStale(ctx context.Context, provider string) error {
	var body any
	if provider != "" {
		body = map[string]string{"provider": provider}
	}
	return c.postOK(ctx, http.MethodPost, api.PathUsageStale, body)
}

// PostObserved sends one client's batched token burn (POST
// /v1/usage/observed). An *Error with Status 400, 404 or 501 says the
// broker does not take it (remote.Reporter decides what to do then).
func (c *Client) PostObserved(ctx context.Context, r api.ClientUsageReport) error {
	if r.Entries == nil {
		r.Entries = []api.ObservedUsageEntry{}
	}
	if !c.observedCreds.Load() && slices.ContainsFunc(r.Entries, func(e api.ObservedUsageEntry) bool { return e.CredentialID != 0 }) {
		// Not announced by this broker: the reference entry shape.
		r.Entries = slices.Clone(r.Entries)
		for i := range r.Entries {
			r.Entries[i].CredentialID = 0
		}
	}
	return c.postOK(ctx, http.MethodPost, api.PathUsageObserved, r)
}

// UsageClients fetches GET /v1/usage/clients?sinceMs=<sinceMs>, asking for
// per-account rows (ObservedCredentialIDs; a reference broker ignores the
// header and answers per (app, provider)). A broker older than 17.1.2
// answers 404: an *Error with Status 404.
func (c *Client) UsageClients(ctx context.Context, sinceMs int64) (api.UsageClients, error) {
	r, err := c.do(ctx, http.MethodGet, api.PathUsageClients+"?sinceMs="+strconv.FormatInt(sinceMs, 10),
		reqOpts{auth: true, header: map[string]string{api.CapabilitiesHeader: api.ObservedCredentialIDs}})
	if err != nil {
		return api.UsageClients{}, err
	}
	return decodeBody(r, func(raw json.RawMessage) (api.UsageClients, error) {
		var u api.UsageClients
		if err := json.Unmarshal(raw, &u); err != nil || u.Clients == nil {
			return api.UsageClients{}, errors.New("clients must be an array of client summaries")
		}
		for i := range u.Clients {
			if u.Clients[i].Providers == nil {
				u.Clients[i].Providers = []vault.ClientProviderUsage{}
			}
		}
		return u, nil
	})
}

// postOK sends body (nil: none) and expects {"ok":true}.
func (c *Client) postOK(ctx context.Context, method, path string, body any) error {
	r, err := c.do(ctx, method, path, reqOpts{auth: true, body: body})
	if err != nil {
		return err
	}
	_, err = decodeBody(r, api.DecodeOK)
	return err
}

// DisabledCredentials fetches GET /v1/credentials/disabled[?provider=]. A
// broker older than 17.1.4 answers 404: that is an empty list, not an error.
func (c *Client) DisabledCredentials(ctx context.Context, provider string) ([]api.DisabledCredential, error) {
	path := api.PathDisabled
	if provider != "" {
		path += "?provider=" + url.QueryEscape(provider)
	}
	r, err := c.do(ctx, http.MethodGet, path, reqOpts{auth: true})
	if err != nil {
		var he *Error
		if errors.As(err, &he) && he.Status == http.StatusNotFound {
			return []api.DisabledCredential{}, nil
		}
		return nil, err
	}
	return decodeBody(r, func(raw json.RawMessage) ([]api.DisabledCredential, error) {
		var b struct {
			Disabled []api.DisabledCredential `json:"disabled"`
		}
		if err := json.Unmarshal(raw, &b); err != nil || b.Disabled == nil {
			return nil, errors.New("disabled must be an array of disabled credentials")
		}
		return b.Disabled, nil
	})
}
