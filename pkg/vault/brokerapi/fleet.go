package brokerapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
)

// Fleet routes: shared credential blocks, usage
// cache invalidation and observed client usage.

// UsageInvalidator expires the broker's cached usage reports
// (usage.Service implements it).
type UsageInvalidator interface {
	// InvalidateUsage drops the cached reports of provider ("" = every
	// provider) so the next aggregation probes upstream again.
	InvalidateUsage(ctx context.Context, provider string) error
}

// CredentialBlock is the wire form of a block: the body of
// POST /v1/credential/:id/block and an item of a snapshot entry's blocks.
type CredentialBlock struct {
	ProviderKey    string `json:"providerKey"`
	BlockScope     string `json:"blockScope"`
	BlockedUntilMs int64  `json:"blockedUntilMs"`
	UpdatedAtMs    int64  `json:"updatedAtMs,omitempty"`
}

// WireBlock is the wire form of b.
func WireBlock(b vault.CredentialBlock) CredentialBlock {
	return CredentialBlock{ProviderKey: b.ProviderKey, BlockScope: b.Scope, BlockedUntilMs: b.UntilMs, UpdatedAtMs: b.UpdatedAtMs}
}

// Block is the domain form of w.
func (w CredentialBlock) Block() vault.CredentialBlock {
	return vault.CredentialBlock{ProviderKey: w.ProviderKey, Scope: w.BlockScope, UntilMs: w.BlockedUntilMs, UpdatedAtMs: w.UpdatedAtMs}
}

// ObservedUsageEntry is one entry of a ClientUsageReport.
type ObservedUsageEntry struct {
	At               int64   `json:"at"`
	Provider         string  `json:"provider"`
	Model            string  `json:"model"`
	Requests         int64   `json:"requests"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	CostUsd          float64 `json:"costUsd"`
	// CredentialID names the credential that served the usage (0 = not
	// named, omitted). PostObserved sends it only to a broker that
	// announced ObservedCredentialIDs.
	CredentialID int64 `json:"credentialId,omitempty"`
}

// ClientUsageReport is the body of POST /v1/usage/observed. Empty Hostname
// and App are omitted (brokers 17.1.2–18.0.6 reject the app key).
type ClientUsageReport struct {
	InstallID string               `json:"installId"`
	Hostname  string               `json:"hostname,omitempty"`
	App       string               `json:"app,omitempty"`
	Entries   []ObservedUsageEntry `json:"entries"`
}

// UsageClients is the GET /v1/usage/clients answer.
type UsageClients struct {
	GeneratedAt int64                 `json:"generatedAt"`
	Clients     []vault.ClientSummary `json:"clients"`
}

// errNoClientUsage is the 501 of a store that keeps no client usage.
var errNoClientUsage = &httpx.Error{Status: http.StatusNotImplemented, Message: "broker store does not persist client usage"}

// noRouteError is the 404 of a route whose backing store is missing.
func noRouteError(r *http.Request) error {
	return &httpx.Error{Status: http.StatusNotFound, Message: "No route: " + r.Method + " " + r.URL.EscapedPath()}
}

// blockMiss is the 404 of a block route for id, logged with msg.
func (s *Server) blockMiss(r *http.Request, id int64, msg string, cause error) error {
	s.log.Info(msg, "id", chi.URLParam(r, "id"), httpx.Peer(r))
	if id < 0 {
		return notFound(r, id)
	}
	return &vault.Error{Code: vault.ENOTFOUND, Message: vault.NotFoundID(id).Message, Err: cause}
}

// postBlock serves POST /v1/credential/:id/block: body parse
// → schema → credential lookup (the reference's order), then our bounds:
// the deadline is truncated, a past one is a no-op and a far one is
// clamped to 31 days, providerKey must be the credential's, and the
// generation advances only on a visible change.
func (s *Server) postBlock(w http.ResponseWriter, r *http.Request) error {
	id, peer := pathID(r), httpx.Peer(r)
	raw, err := httpx.ReadJSON(w, r, httpx.BrokerBodyLimit, false)
	if err != nil {
		return err
	}
	b, err := decodeBlock(raw)
	if err != nil {
		return err
	}
	if s.Blocks == nil {
		return noRouteError(r)
	}
	if id < 0 {
		return s.blockMiss(r, id, "auth-broker credential block miss", nil)
	}
	rec, err := s.Store.Get(r.Context(), id)
	if vault.ErrorCode(err) == vault.ENOTFOUND || (err == nil && !rec.Active()) {
		return s.blockMiss(r, id, "auth-broker credential block miss", err)
	}
	if err != nil {
		return err
	}
	if want := vault.ProviderKey(rec.Provider, rec.Credential.Type); b.ProviderKey != want {
		return vault.Errorf(vault.EINVALID, "providerKey %s does not match credential %d", b.ProviderKey, id)
	}
	now := s.Now().UnixMilli()
	if b.UntilMs <= now {
		s.log.Info("auth-broker credential block expired on arrival", "id", id, peer, "providerKey", b.ProviderKey,
			"blockScope", b.Scope, "blockedUntilMs", b.UntilMs)
		return httpx.WriteJSON(w, http.StatusOK, okBody{OK: true})
	}
	b.UntilMs = min(b.UntilMs, now+vault.MaxBlockWindow.Milliseconds())
	changed, err := s.Blocks.PutBlock(r.Context(), id, b)
	if err != nil {
		if vault.ErrorCode(err) == vault.ENOTFOUND {
			return s.blockMiss(r, id, "auth-broker credential block miss", err)
		}
		s.log.Warn("auth-broker credential block upsert failed", "id", id, peer, "error", vault.ErrorMessage(err))
		return err
	}
	if changed {
		s.Notify()
		if rec.Credential.IsOAuth() {
			// Only a block that changed something expires the provider's
			// cached reports: a fleet re-posting one 429 must not re-probe
			// rate-limited usage endpoints again and again.
			s.invalidateUsage(r, rec.Provider)
		}
	}
	s.log.Info("auth-broker credential block upserted", "id", id, peer, "providerKey", b.ProviderKey,
		"blockScope", b.Scope, "blockedUntilMs", b.UntilMs, "changed", changed)
	return httpx.WriteJSON(w, http.StatusOK, okBody{OK: true})
}

// invalidateUsage expires provider's cached usage reports, logging a failure.
func (s *Server) invalidateUsage(r *http.Request, provider string) {
	if s.Invalidator == nil {
		return
	}
	if err := s.Invalidator.InvalidateUsage(r.Context(), provider); err != nil {
		s.log.Warn("auth-broker usage cache invalidation failed", "provider", provider, httpx.Peer(r), "error", vault.ErrorMessage(err))
	}
}

// deleteBlocks serves DELETE /v1/credential/:id/blocks: every
// block of the credential goes; a body is ignored.
func (s *Server) deleteBlocks(w http.ResponseWriter, r *http.Request) error {
	id, peer := pathID(r), httpx.Peer(r)
	if s.Blocks == nil {
		return noRouteError(r)
	}
	if id < 0 {
		return s.blockMiss(r, id, "auth-broker credential blocks delete miss", nil)
	}
	changed, err := s.Blocks.ClearBlocks(r.Context(), id)
	if err != nil {
		if vault.ErrorCode(err) == vault.ENOTFOUND {
			return s.blockMiss(r, id, "auth-broker credential blocks delete miss", err)
		}
		return err
	}
	if changed {
		s.Notify()
	}
	s.log.Info("auth-broker credential blocks deleted", "id", id, peer, "changed", changed)
	return httpx.WriteJSON(w, http.StatusOK, okBody{OK: true})
}

// usageStale serves POST /v1/usage/stale: an
// optional strict body {"provider"} limits the invalidation to one
// provider; no generation bump.
func (s *Server) usageStale(w http.ResponseWriter, r *http.Request) error {
	raw, err := httpx.ReadJSON(w, r, httpx.BrokerBodyLimit, true)
	if err != nil {
		return err
	}
	m, err := decodeObject(raw, "provider")
	if err != nil {
		return err
	}
	var provider string
	if p, ok := m["provider"]; ok && (string(p) == "null" || json.Unmarshal(p, &provider) != nil) {
		return vault.Errorf(vault.EINVALID, "provider must be a string (was %s)", jsonKind(p))
	}
	if s.Invalidator != nil {
		if err := s.Invalidator.InvalidateUsage(r.Context(), provider); err != nil {
			return &vault.Error{Code: vault.EINTERNAL, Message: vault.ErrorMessage(err), Err: err}
		}
	}
	s.log.Info("auth-broker usage cache invalidated", httpx.Peer(r), "provider", provider)
	return httpx.WriteJSON(w, http.StatusOK, okBody{OK: true})
}

// usageObserved serves POST /v1/usage/observed: schema 400s as the
// reference, then the Go bounds (empty installId
// or more than 1000 entries → 400; everything else normalised).
func (s *Server) usageObserved(w http.ResponseWriter, r *http.Request) error {
	raw, err := httpx.ReadBody(w, r, httpx.BrokerBodyLimit, false)
	if err != nil {
		return err
	}
	rep, ok := fastClientUsage(raw)
	if !ok { // anything uncommon: the schema path words the 400s
		if err := httpx.CheckJSON(raw); err != nil {
			return err
		}
		if rep, err = decodeClientUsage(raw); err != nil {
			return err
		}
	}
	if s.ClientUsage == nil {
		return errNoClientUsage
	}
	now := s.Now().UnixMilli()
	rep = vault.NormalizeClientUsage(rep, now)
	// A client token reports as itself, whatever the body claims.
	rep.InstallID = observedInstallID(r.Context(), rep.InstallID)
	if rep.InstallID == "" {
		return vault.Errorf(vault.EINVALID, "installId must not be empty")
	}
	s.checkCredentialIDs(r.Context(), rep.Entries)
	if err := s.ClientUsage.RecordClientUsage(r.Context(), rep, now); err != nil {
		return err
	}
	s.log.Debug("auth-broker client usage recorded", httpx.Peer(r), "installId", rep.InstallID,
		"hostname", rep.Hostname, "entries", len(rep.Entries))
	return httpx.WriteJSON(w, http.StatusOK, okBody{OK: true})
}

// checkCredentialIDs keeps an entry's credential id only when it names a
// credential of the entry's provider (active or not: it may have been
// disabled since it served); any other id is dropped — never an error for
// the batch, whatever the look-up says (the burn is recorded unnamed).
func (s *Server) checkCredentialIDs(ctx context.Context, es []vault.ObservedUsage) {
	var provider map[int64]string // id → provider; "" = not a credential
	for i := range es {
		id := es[i].CredentialID
		if id == 0 {
			continue
		}
		if provider == nil {
			provider = map[int64]string{}
		}
		p, ok := provider[id]
		if !ok {
			if rec, err := s.Store.Get(ctx, id); err == nil {
				p = rec.Provider
			}
			provider[id] = p
		}
		if p == "" || p != es[i].Provider {
			es[i].CredentialID = 0
		}
	}
}

// usageClients serves GET /v1/usage/clients[?sinceMs=].
// A request listing ObservedCredentialIDs in the capabilities header gets
// one row per (app, provider, credential) with credentialId and account;
// any other gets the reference shape.
func (s *Server) usageClients(w http.ResponseWriter, r *http.Request) error {
	since, _ := parseIntPrefix(r.URL.Query().Get("sinceMs"))
	out := UsageClients{GeneratedAt: s.Now().UnixMilli(), Clients: []vault.ClientSummary{}}
	if s.ClientUsage != nil {
		got, err := s.ClientUsage.ClientUsage(r.Context(), since, hasCapability(r, ObservedCredentialIDs))
		if err != nil {
			return err
		}
		if got != nil {
			out.Clients = got
		}
	}
	return httpx.WriteJSON(w, http.StatusOK, out)
}

// PostBlock publishes block b of credential id (POST
// /v1/credential/:id/block) with the reference body {"providerKey",
// "blockScope","blockedUntilMs"}; b.UpdatedAtMs is not sent.
func (c *Client) PostBlock(ctx context.Context, id int64, b vault.CredentialBlock) error {
	w := WireBlock(b)
	w.UpdatedAtMs = 0
	return c.postOK(ctx, http.MethodPost, "/v1/credential/"+strconv.FormatInt(id, 10)+"/block", w)
}

// ClearBlocks lifts every block of credential id (DELETE
// /v1/credential/:id/blocks).
func (c *Client) ClearBlocks(ctx context.Context, id int64) error {
	return c.postOK(ctx, http.MethodDelete, "/v1/credential/"+strconv.FormatInt(id, 10)+"/blocks", nil)
}

// MarkUsageStale expires the broker's cached usage reports (POST
// /v1/usage/stale): all of them for provider "", else, on a Go broker, that
// provider's only (reference brokers ignore the body and expire all).
func (c *Client) MarkUsageStale(ctx context.Context, provider string) error {
	var body any
	if provider != "" {
		body = map[string]string{"provider": provider}
	}
	return c.postOK(ctx, http.MethodPost, "/v1/usage/stale", body)
}

// PostObserved sends one client's batched token burn (POST
// /v1/usage/observed). An *Error with Status 400, 404 or 501 says the
// broker does not take it (remote.Reporter decides what to do then).
func (c *Client) PostObserved(ctx context.Context, r ClientUsageReport) error {
	if r.Entries == nil {
		r.Entries = []ObservedUsageEntry{}
	}
	if !c.observedCreds.Load() && slices.ContainsFunc(r.Entries, func(e ObservedUsageEntry) bool { return e.CredentialID != 0 }) {
		// Not announced by this broker: the reference entry shape.
		r.Entries = slices.Clone(r.Entries)
		for i := range r.Entries {
			r.Entries[i].CredentialID = 0
		}
	}
	return c.postOK(ctx, http.MethodPost, "/v1/usage/observed", r)
}

// UsageClients fetches GET /v1/usage/clients?sinceMs=<sinceMs>, asking for
// per-account rows (ObservedCredentialIDs; a reference broker ignores the
// header and answers per (app, provider)). A broker older than 17.1.2
// answers 404: an *Error with Status 404.
func (c *Client) UsageClients(ctx context.Context, sinceMs int64) (UsageClients, error) {
	r, err := c.do(ctx, http.MethodGet, "/v1/usage/clients?sinceMs="+strconv.FormatInt(sinceMs, 10),
		reqOpts{auth: true, header: map[string]string{CapabilitiesHeader: ObservedCredentialIDs}})
	if err != nil {
		return UsageClients{}, err
	}
	return decodeBody(r, func(raw json.RawMessage) (UsageClients, error) {
		var u UsageClients
		if err := json.Unmarshal(raw, &u); err != nil || u.Clients == nil {
			return UsageClients{}, errors.New("clients must be an array of client summaries")
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
	_, err = decodeBody(r, decodeOK)
	return err
}
