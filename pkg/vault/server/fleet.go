package server

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
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
	b, err := api.DecodeBlock(raw)
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
	provider, err := api.DecodeStale(raw)
	if err != nil {
		return err
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
	if err := httpx.CheckJSON(raw); err != nil {
		return err
	}
	rep, err := api.DecodeClientUsage(raw)
	if err != nil {
		return err
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
	out := api.UsageClients{GeneratedAt: s.Now().UnixMilli(), Clients: []vault.ClientSummary{}}
	if s.ClientUsage != nil {
		got, err := s.ClientUsage.ClientUsage(r.Context(), since, hasCapability(r, api.ObservedCredentialIDs))
		if err != nil {
			return err
		}
		if got != nil {
			out.Clients = got
		}
	}
	return httpx.WriteJSON(w, http.StatusOK, out)
}
