package refresh

import (
	"context"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
)

// The Keeper is the vault.Store its callers use: reads serve a pending
// refreshed credential in place of the stored one, and writes that change
// a row drop pending values they made stale.

// List returns the store's active records with pending credentials served
// in place of the stored ones.
func (k *Keeper) List(ctx context.Context, provider string) ([]vault.Record, error) {
	recs, err := k.Store.List(ctx, provider)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) == 0 {
		return recs, nil
	}
	var out []vault.Record // copy on write: the store may share its slice
	for i, r := range recs {
		if p := k.overlay(r); p != nil {
			if out == nil {
				out = append([]vault.Record(nil), recs...)
			}
			out[i] = served(r, p.fresh, p.at)
		}
	}
	if out == nil {
		return recs, nil
	}
	return out, nil
}

// Walk shows the store's active records to fn as List returns them, with
// pending credentials served in place of the stored ones.
func (k *Keeper) Walk(ctx context.Context, provider string, fn func(r *vault.Record)) error {
	return k.Store.Walk(ctx, provider, func(r *vault.Record) {
		k.mu.Lock()
		p := k.overlay(*r)
		k.mu.Unlock()
		if p == nil {
			fn(r)
			return
		}
		rec := served(*r, p.fresh, p.at)
		fn(&rec)
	})
}

// Get returns the record id, with its pending credential if it has one.
func (k *Keeper) Get(ctx context.Context, id int64) (vault.Record, error) {
	rec, err := k.Store.Get(ctx, id)
	if err != nil {
		return rec, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.overlay(rec); p != nil {
		return served(rec, p.fresh, p.at), nil
	}
	return rec, nil
}

// overlay returns the pending write that applies to the stored rec: the row
// is active and still holds the credential the refresh started from.
// Callers hold mu.
func (k *Keeper) overlay(rec vault.Record) *pendingWrite {
	p := k.pending[rec.ID]
	if p == nil || !rec.Active() || !rec.Credential.Equal(p.from) {
		return nil
	}
	return p
}

// Generation is the store's generation plus the number of changes of the
// pending set: it grows whenever what List serves changes. (Across a restart
// the store starts at least at the current Unix time in ms, far above any
// value served before, so it stays monotonic.)
func (k *Keeper) Generation(ctx context.Context) (int64, error) {
	gen, err := k.Store.Generation(ctx)
	if err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return gen + k.bump, nil
}

// UpdateCredential writes cred to row id; a pending value of the row is
// superseded by it.
func (k *Keeper) UpdateCredential(ctx context.Context, id int64, cred vault.Credential) (vault.Record, error) {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	rec, err := k.Store.UpdateCredential(ctx, id, cred)
	if err == nil {
		k.wrote()
		k.settle(id, nil, "row updated")
	}
	return rec, err
}

// DisableIf disables row id if it still holds expected. expected may be the
// pending credential the Keeper serves for id: the compare then runs against
// the stored credential it stands for, and the pending value is dropped.
// The stored cause never holds a secret of expected in any encoding.
func (k *Keeper) DisableIf(ctx context.Context, id int64, expected vault.Credential, cause string) (bool, error) {
	cause = oauth.Redact(cause, oauth.SecretsOf(expected)...)
	k.wmu.Lock()
	defer k.wmu.Unlock()
	k.mu.Lock()
	p := k.pending[id]
	k.mu.Unlock()
	if p != nil && expected.Equal(p.fresh) {
		expected = p.from
	}
	ok, err := k.Store.DisableIf(ctx, id, expected, cause)
	if ok {
		k.settle(id, nil, "row disabled")
	}
	return ok, err
}

// Disable disables row id and drops its pending value.
func (k *Keeper) Disable(ctx context.Context, id int64, cause string) error {
	err := k.Store.Disable(ctx, id, cause)
	if err == nil {
		k.wrote()
	}
	if err == nil && k.Pending() > 0 {
		k.wmu.Lock()
		k.settle(id, nil, "row disabled")
		k.wmu.Unlock()
	}
	return err
}

// Upsert stores cred through the store and drops pending values it
// superseded.
func (k *Keeper) Upsert(ctx context.Context, provider string, cred vault.Credential) ([]vault.Record, error) {
	recs, err := k.Store.Upsert(ctx, provider, cred)
	if err == nil {
		k.wrote()
		k.prune(ctx)
	}
	return recs, err
}

// UpsertWalk is Upsert showing the provider's records to fn instead of
// returning copies.
func (k *Keeper) UpsertWalk(ctx context.Context, provider string, cred vault.Credential, fn func(r *vault.Record)) error {
	err := k.Store.UpsertWalk(ctx, provider, cred, fn)
	if err == nil {
		k.wrote()
		k.prune(ctx)
	}
	return err
}

// ReplaceAll stores creds through the store and drops pending values it
// superseded.
func (k *Keeper) ReplaceAll(ctx context.Context, provider string, creds []vault.Credential) ([]vault.Record, error) {
	recs, err := k.Store.ReplaceAll(ctx, provider, creds)
	if err == nil {
		k.wrote()
		k.prune(ctx)
	}
	return recs, err
}

// DisableProvider disables provider's rows and drops their pending values.
func (k *Keeper) DisableProvider(ctx context.Context, provider, cause string) (int, error) {
	n, err := k.Store.DisableProvider(ctx, provider, cause)
	if err == nil && n > 0 {
		k.prune(ctx)
	}
	return n, err
}

// Dedupe deduplicates through the store and drops pending values of rows
// it disabled.
func (k *Keeper) Dedupe(ctx context.Context) (int, error) {
	n, err := k.Store.Dedupe(ctx)
	if err == nil && n > 0 {
		k.prune(ctx)
	}
	return n, err
}
