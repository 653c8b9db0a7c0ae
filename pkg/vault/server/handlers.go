package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// healthz answers the reference body {"ok":true,"version":…}; while refresh
// write-backs are pending or the vault refuses writes it adds pendingWrites
// and vault {writable:false, error} (reference clients ignore extra fields).
// The broker still serves, so ok stays true.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	body := healthzBody{OK: true, Version: s.Version}
	if s.WriteBack != nil {
		body.PendingWrites = s.WriteBack.Pending()
		if err := s.WriteBack.WriteError(); err != nil {
			// Unauthenticated: only the client-safe message.
			body.Vault = &vaultHealth{Writable: false, Error: vault.ErrorMessage(err)}
		}
	}
	return httpx.WriteJSON(w, http.StatusOK, body)
}

// snapshot serves GET /v1/snapshot: at once when the client's If-None-Match
// generation is missing or stale or wait is 0, else it waits (at most 30 s)
// for a newer generation and answers 200, or 304 when the wait runs out.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	announceCapabilities(w, r)
	sh, err := s.hub.sync(ctx)
	if err != nil {
		return err
	}
	peer := httpx.Peer(r)
	clientGen, tagged := api.ParseGenerationTag(r.Header.Get("If-None-Match"))
	wait := parseWait(r.URL.Query())
	if !tagged || sh.gen != clientGen || wait == 0 {
		s.log.Info("auth-broker snapshot served", peer, "credentials", len(sh.entries), "generation", sh.gen)
		return s.writeSnapshot(w, r, sh)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// Any publication after sh closes sh.done, so from here on a change
	// wakes this request (tests wait for this line before writing).
	s.log.Debug("auth-broker snapshot long-poll waiting", peer, "generation", sh.gen, "waitMs", wait.Milliseconds())
	select {
	case <-sh.done:
	case <-timer.C:
	case <-ctx.Done():
		setSnapshotHeaders(w.Header(), sh.gen)
		w.WriteHeader(499)
		return nil
	}
	if sh, err = s.hub.sync(ctx); err != nil {
		return err
	}
	if sh.gen != clientGen {
		s.log.Info("auth-broker snapshot long-poll changed", peer, "credentials", len(sh.entries), "generation", sh.gen)
		return s.writeSnapshot(w, r, sh)
	}
	s.log.Info("auth-broker snapshot long-poll unchanged", peer, "generation", sh.gen)
	setSnapshotHeaders(w.Header(), sh.gen)
	w.WriteHeader(http.StatusNotModified)
	return nil
}

func setSnapshotHeaders(h http.Header, gen int64) {
	h.Set("ETag", `"`+strconv.FormatInt(gen, 10)+`"`)
	h.Set("Cache-Control", "no-store")
	h["Vary"] = varyCapabilities
}

// Pre-built header key and value: reading and setting them costs no
// allocation per request.
var (
	capabilitiesKey  = http.CanonicalHeaderKey(api.CapabilitiesHeader)
	varyCapabilities = []string{api.CapabilitiesHeader}
)

// shapeOf is the snapshot shape r asks for: no capabilities
// header → shape15; a header whose comma-separated values include
// codex-meter-block-scopes → shapeFull; any other header → shapeShared.
func shapeOf(r *http.Request) shape {
	if len(r.Header[capabilitiesKey]) == 0 {
		return shape15
	}
	if hasCapability(r, api.CodexMeterBlockScopes) {
		return shapeFull
	}
	return shapeShared
}

// hasCapability reports whether r's capabilities header lists tok (split
// on commas, trimmed, as the reference reads it).
func hasCapability(r *http.Request, tok string) bool {
	for _, v := range r.Header[capabilitiesKey] {
		for t := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(t) == tok {
				return true
			}
		}
	}
	return false
}

// announceCapabilities answers a snapshot or stream request that lists
// capabilities this broker has beyond the reference.
func announceCapabilities(w http.ResponseWriter, r *http.Request) {
	if hasCapability(r, api.ObservedCredentialIDs) {
		w.Header()[capabilitiesKey] = announced
	}
}

var announced = []string{api.ObservedCredentialIDs}

// writeSnapshot renders sh at the current time with the current schedule:
// only rotatesInMs, serverNowMs and nextSweepInMs are computed per request,
// everything else comes pre-encoded from the shared snapshot.
func (s *Server) writeSnapshot(w http.ResponseWriter, r *http.Request, sh *shared) error {
	buf := getBuf()
	defer putBuf(buf)
	*buf = appendSnapshot(*buf, sh, s.schedule(), s.Now().UnixMilli(), false, shapeOf(r))
	setSnapshotHeaders(w.Header(), sh.gen)
	return httpx.WriteJSONBytes(w, http.StatusOK, *buf)
}

// parseWait reads ?wait=<ms>: non-numeric or absent → 0, truncated, clamped
// to [0, MaxWait].
func parseWait(q map[string][]string) time.Duration {
	vals := q["wait"]
	if len(vals) == 0 {
		return 0
	}
	v := strings.TrimSpace(vals[0])
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f != f || strings.ContainsAny(v, "xXnNiI") { // NaN, Inf, hex
		return 0
	}
	ms := min(max(f, 0), float64(MaxWait/time.Millisecond))
	return time.Duration(int64(ms)) * time.Millisecond
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request) error {
	peer := httpx.Peer(r)
	var reports []vault.UsageReport
	if s.Usage != nil {
		var err error
		if reports, err = s.Usage.Reports(r.Context()); err != nil {
			s.log.Warn("auth-broker usage fetch failed", peer, "error", vault.PublicErrorText(err))
			return &vault.Error{Code: vault.EUPSTREAM, Message: vault.ErrorMessage(err), Err: err}
		}
	}
	if reports == nil {
		reports = []vault.UsageReport{}
	}
	s.log.Info("auth-broker usage served", peer, "reports", len(reports))
	return httpx.WriteJSON(w, http.StatusOK, usageBody{GeneratedAt: s.Now().UnixMilli(), Reports: reports})
}

// pathID parses the {id} route parameter (digits only, by the route).
func pathID(r *http.Request) int64 {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return -1 // more digits than an int64: no such credential
	}
	return id
}

func notFound(r *http.Request, id int64) error {
	if id < 0 {
		return vault.Errorf(vault.ENOTFOUND, "No credential with id=%s", chi.URLParam(r, "id"))
	}
	return vault.NotFoundID(id)
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request) error {
	id, peer := pathID(r), httpx.Peer(r)
	if id < 0 {
		return notFound(r, id)
	}
	if s.Refresher == nil {
		return vault.Errorf(vault.EINTERNAL, "auth-broker refresher is disabled")
	}
	rec, err := s.Refresher.RefreshNow(r.Context(), id)
	s.Notify() // a refresh writes the vault whatever its outcome
	if err != nil {
		s.log.Warn("auth-broker refresh failed", "id", id, peer, "error", vault.ErrorMessage(err))
		if vault.ErrorCode(err) == vault.ENOTFOUND {
			return &vault.Error{Code: vault.ENOTFOUND, Message: vault.NotFoundID(id).Message, Err: err}
		}
		var ve *vault.Error
		if !errors.As(err, &ve) || ve.Message == "" || ve.Code == vault.EUNAVAILABLE || ve.Code == vault.EINVALID {
			// Unexpected (500 with a request id, logged as a crash), the
			// vault refusing the write (503 with Retry-After), or a row that
			// cannot be refreshed, an API key (400 with its message: the
			// client asked for something that does not exist).
			return err
		}
		// Every other refresh failure is a 500 carrying its message.
		return &vault.Error{Code: vault.EINTERNAL, Message: ve.Message, Err: err}
	}
	e, err := encodeEntry(vault.NewEntry(rec))
	if err != nil {
		return err
	}
	attrs := []any{"id", id, "provider", rec.Provider, peer}
	if rec.Credential.IsOAuth() {
		attrs = append(attrs, "expires", rec.Credential.Expires)
	}
	s.log.Info("auth-broker credential refreshed", attrs...)
	buf := append([]byte(`{"entry":`), e.pfx(true)...)
	return httpx.WriteJSONBytes(w, http.StatusOK, append(buf, "}}"...))
}

func (s *Server) disable(w http.ResponseWriter, r *http.Request) error {
	id, peer := pathID(r), httpx.Peer(r)
	raw, err := httpx.ReadJSON(w, r, httpx.BrokerBodyLimit, true)
	if err != nil {
		return err
	}
	cause, err := api.DecodeDisable(raw)
	if err != nil {
		return err
	}
	if cause == "" {
		cause = vault.CauseDisabledViaAPI
	}
	if id < 0 {
		s.log.Info("auth-broker disable miss", "id", chi.URLParam(r, "id"), peer, "cause", cause)
		return notFound(r, id)
	}
	if err := s.Store.Disable(r.Context(), id, cause); err != nil {
		if vault.ErrorCode(err) == vault.ENOTFOUND {
			s.log.Info("auth-broker disable miss", "id", id, peer, "cause", cause)
			return &vault.Error{Code: vault.ENOTFOUND, Message: vault.NotFoundID(id).Message, Err: err}
		}
		return err
	}
	s.Notify()
	s.log.Info("auth-broker credential disabled", "id", id, peer, "cause", cause)
	return httpx.WriteJSON(w, http.StatusOK, okBody{OK: true})
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) error {
	peer := httpx.Peer(r)
	raw, err := httpx.ReadJSON(w, r, httpx.BrokerBodyLimit, false)
	if err != nil {
		return err
	}
	provider, cred, err := api.DecodeUpload(raw)
	if err != nil {
		return err
	}
	// The reply reuses the published snapshot's encoding of every credential
	// that did not change since, so it costs one encoding, not one per
	// stored credential; the records are walked, not copied.
	sh := s.hub.current()
	buf := getBuf()
	defer putBuf(buf)
	b := append(*buf, `{"entries":[`...)
	n, hint := 0, 0
	var encErr error
	err = s.Store.UpsertWalk(r.Context(), provider, cred, func(rec *vault.Record) {
		n++
		if encErr != nil {
			return
		}
		var old *encodedEntry
		if sh != nil {
			if j, ok := sh.find(rec.ID, hint); ok {
				old, hint = &sh.entries[j], j+1
			}
		}
		e, err := encodeRecord(rec, old)
		if err != nil {
			encErr = err
			return
		}
		if n > 1 {
			b = append(b, ',')
		}
		b = appendPlainEntry(b, &e)
	})
	if err != nil {
		s.log.Warn("auth-broker upload failed", "provider", provider, peer, "error", vault.ErrorMessage(err))
		return err
	}
	s.Notify()
	s.log.Info("auth-broker credential upserted", "provider", provider, "type", string(cred.Type),
		"identity", cred.Identity(), peer, "providerTotal", n)
	if encErr != nil {
		return encErr
	}
	*buf = append(b, "]}"...)
	return httpx.WriteJSONBytes(w, http.StatusOK, *buf)
}
