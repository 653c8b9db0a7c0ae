package refresh

import (
	"context"
	"errors"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
)

// refreshOne is the body of a flight: re-read → re-check → refresh →
// classify → persist. skipped reports a sweep flight that found the row no
// longer due (another process refreshed it meanwhile). ctx carries no
// cancellation (see join); the upstream call gets its own Timeout.
func (r *Refresher) refreshOne(ctx context.Context, id int64, force bool) (rec vault.Record, skipped bool, err error) {
	rec, err = r.Store.Get(ctx, id)
	if vault.ErrorCode(err) == vault.ENOTFOUND || (err == nil && !rec.Active()) {
		return vault.Record{}, false, vault.NotFoundID(id)
	}
	if err != nil {
		return vault.Record{}, false, &vault.Error{Code: vault.EINTERNAL, Err: err}
	}
	cred := rec.Credential
	if !cred.IsOAuth() {
		return vault.Record{}, false, notOAuth(id, rec.Provider, cred.Type)
	}
	if !force && cred.Expires > r.now().Add(r.skew()).UnixMilli() {
		return rec, true, nil
	}
	if force && r.refreshedRecently(id, cred) {
		r.log().Debug("auth-broker forced refresh coalesced with the last one", "id", id, "provider", rec.Provider)
		return rec, false, nil
	}

	uctx, cancel := context.WithTimeout(ctx, r.timeout())
	fresh, err := r.OAuth.Refresh(uctx, rec.Provider, cred, r.httpClient())
	timedOut := uctx.Err() == context.DeadlineExceeded
	cancel()
	if err != nil {
		return vault.Record{}, false, r.failed(ctx, rec, err, timedOut)
	}
	if fresh.Refresh == "" {
		fresh.Refresh = cred.Refresh // never persist an empty refresh token
	}

	// Persist before anything else happens with a rotated refresh token.
	// The Keeper never drops it: a failed write leaves it served from
	// memory and retried (see Keeper), and the refresh still succeeds.
	updated, err := r.Store.Put(ctx, rec, fresh)
	if err != nil {
		// ENOTFOUND: disabled or replaced while the request was in flight.
		r.log().Warn("auth-broker refreshed credential vanished before write-back", "id", id, "provider", rec.Provider)
		return vault.Record{}, false, vault.NotFoundID(id)
	}
	r.succeeded(id, updated.Credential)
	r.log().Debug("auth-broker refresh succeeded", "id", id, "provider", rec.Provider, "expires", updated.Credential.Expires)
	r.result(rec.Provider, OutcomeOK)
	r.changed()
	return updated, false, nil
}

// refreshedRecently reports whether id was refreshed successfully less than
// MinForcedInterval ago and the row still holds the credential stored then
// (a login or an upload since is refreshed as asked).
func (r *Refresher) refreshedRecently(id int64, cred vault.Credential) bool {
	if r.MinForcedInterval < 0 {
		return false
	}
	r.mu.Lock()
	last, ok := r.lastOK[id]
	r.mu.Unlock()
	return ok && last.access == cred.Access && r.now().Sub(last.at) < r.minForcedInterval()
}

// succeeded records a successful refresh of id that stored cred, and
// forgets the ones older than MinForcedInterval.
func (r *Refresher) succeeded(id int64, cred vault.Credential) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastOK == nil {
		r.lastOK = map[int64]success{}
	}
	for old, s := range r.lastOK {
		if now.Sub(s.at) >= r.minForcedInterval() {
			delete(r.lastOK, old)
		}
	}
	r.lastOK[id] = success{at: now, access: cred.Access}
}

// notOAuth is the client error of a forced refresh of a row that is not
// OAuth. Its message starts with the broker's compatibility text "Credential
// <id> is not OAuth (provider=<p>, type=<t>)".
func notOAuth(id int64, provider string, typ vault.CredentialType) *vault.Error {
	return vault.Errorf(vault.EINVALID, "Credential %d is not OAuth (provider=%s, type=%s): %s credentials have nothing to refresh", id, provider, typ, typeLabel(typ))
}

// typeLabel names a credential type in messages.
func typeLabel(typ vault.CredentialType) string {
	if typ == vault.TypeAPIKey {
		return "API-key"
	}
	return string(typ)
}

// failed classifies an upstream failure, disables the row when it is
// definitive and returns the client-facing error.
func (r *Refresher) failed(ctx context.Context, rec vault.Record, err error, timedOut bool) error {
	if timedOut || errors.Is(err, context.DeadlineExceeded) {
		msg := "OAuth token refresh timed out for provider: " + rec.Provider
		r.log().Debug("auth-broker refresh failed (transient)", "id", rec.ID, "error", msg)
		r.result(rec.Provider, OutcomeTransient)
		return &vault.Error{Code: vault.EUPSTREAM, Message: msg, Err: err}
	}
	// Provider error texts are redacted where they are built
	// (oauth.RefreshError); redacting again with the row's own secrets also
	// covers a TokenRefresher that does not. A failed DNS lookup's text
	// loses the resolver's address.
	msg := oauth.Redact(vault.PublicErrorText(err), oauth.SecretsOf(rec.Credential)...)
	if oauth.Classify(err) != oauth.Definitive {
		r.log().Debug("auth-broker refresh failed (transient)", "id", rec.ID, "error", msg)
		r.result(rec.Provider, OutcomeTransient)
		return &vault.Error{Code: vault.EUPSTREAM, Message: msg, Err: err}
	}
	r.log().Warn("auth-broker refresh failed definitively", "id", rec.ID, "error", msg)
	r.result(rec.Provider, OutcomeDefinitive)
	// Compare-and-set on the credential we attempted: if a login or another
	// process rotated the row meanwhile, its fresh token is kept.
	disabled, derr := r.Store.DisableIf(ctx, rec.ID, rec.Credential, Cause(errors.New(msg)))
	switch {
	case derr != nil:
		r.log().Error("auth-broker could not disable credential", "id", rec.ID, "error", derr)
	case disabled:
		r.changed()
	default:
		r.log().Info("auth-broker credential changed during refresh; not disabled", "id", rec.ID)
	}
	return &vault.Error{Code: vault.EUPSTREAM, Message: msg, Err: err}
}

// Cause is the disable cause recorded for a definitive refresh failure
// (vault.RefreshFailureCause).
func Cause(err error) string { return vault.RefreshFailureCause(err) }

func (r *Refresher) result(provider, outcome string) {
	if r.OnResult != nil {
		r.OnResult(provider, outcome)
	}
}

func (r *Refresher) changed() {
	if r.OnChange != nil {
		r.OnChange()
	}
}
