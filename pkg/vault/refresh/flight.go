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
		return vault.Record{}, false, vault.Errorf(vault.EINVALID, "Credential %d is not OAuth (provider=%s, type=%s)", id, rec.Provider, cred.Type)
	}
	if !force && cred.Expires > r.now().Add(r.skew()).UnixMilli() {
		return rec, true, nil
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
	r.log().Debug("auth-broker refresh succeeded", "id", id, "provider", rec.Provider, "expires", updated.Credential.Expires)
	r.result(rec.Provider, OutcomeOK)
	r.changed()
	return updated, false, nil
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
	// Provider error texts never contain tokens (oauth.RefreshError); a
	// failed DNS lookup's text loses the resolver's address.
	msg := vault.PublicErrorText(err)
	if oauth.Classify(err) != oauth.Definitive {
		r.log().Debug("auth-broker refresh failed (transient)", "id", rec.ID, "error", msg)
		r.result(rec.Provider, OutcomeTransient)
		return &vault.Error{Code: vault.EUPSTREAM, Message: msg, Err: err}
	}
	r.log().Warn("auth-broker refresh failed definitively", "id", rec.ID, "error", msg)
	r.result(rec.Provider, OutcomeDefinitive)
	// Compare-and-set on the credential we attempted: if a login or another
	// process rotated the row meanwhile, its fresh token is kept.
	disabled, derr := r.Store.DisableIf(ctx, rec.ID, rec.Credential, Cause(err))
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
