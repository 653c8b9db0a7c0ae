package sqlite

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// matches reports whether stored row r is the same credential as incoming c
// for upserts: API keys by vault.APIKeyMatchKey, OAuth by the
// 18.1.21 matcher (equal non-empty identity keys or the one-way org
// upgrade), never across types. ids are vault.Identifiers(c).
func matches(r vault.Record, c vault.Credential, incomingIdentity string, ids []string) bool {
	if r.Credential.Type != c.Type {
		return false
	}
	if c.Type == vault.TypeAPIKey {
		a, b := vault.APIKeyMatchKey(r.Provider, r.Credential.Key), vault.APIKeyMatchKey(r.Provider, c.Key)
		return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
	}
	return vault.ReplacementMatch(r.Credential, rowIdentity(r), incomingIdentity, ids)
}

// Upsert stores cred by identity: the first matching active row is updated
// in place (data fully replaced), further matches are soft-deleted
// CauseReplaced, no match inserts a row; then superseded disabled rows are
// purged. It returns the provider's active records. EINVALID if cred fails
// Validate or provider is empty.
func (s *Store) Upsert(ctx context.Context, provider string, cred vault.Credential) ([]vault.Record, error) {
	es, err := s.upsert(ctx, provider, cred)
	if err != nil {
		return nil, err
	}
	return copyOut(es), nil
}

// UpsertWalk is Upsert showing the provider's active records afterwards to
// fn without copying them (see vault.Store.Walk).
func (s *Store) UpsertWalk(ctx context.Context, provider string, cred vault.Credential, fn func(r *vault.Record)) error {
	es, err := s.upsert(ctx, provider, cred)
	if err != nil {
		return err
	}
	for _, e := range es {
		fn(&e.rec)
	}
	return nil
}

// upsert is Upsert returning the provider's checked entries afterwards.
func (s *Store) upsert(ctx context.Context, provider string, cred vault.Credential) ([]*entry, error) {
	if err := validate(provider, cred); err != nil {
		return nil, err
	}
	var out []*entry
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		if err := s.upsertTx(ctx, tx, provider, cred); err != nil {
			return false, err
		}
		es, err := tx.v.provider(ctx, provider)
		if err == nil {
			out, err = tx.v.checked(ctx, es)
		}
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("upsert %s credential: %w", provider, err)
	}
	return out, nil
}

func validate(provider string, cred vault.Credential) error {
	if strings.TrimSpace(provider) == "" {
		return vault.Errorf(vault.EINVALID, "provider must be a non-empty string")
	}
	return cred.Validate()
}

func (s *Store) upsertTx(ctx context.Context, tx *wtx, provider string, cred vault.Credential) error {
	ident := vault.IdentityKey(provider, cred)
	now := s.nowMs()
	if cred.Type == vault.TypeOAuth {
		// 18.1.21: an OAuth login replaces the provider's API keys.
		if err := s.disableAPIKeysTx(ctx, tx, provider, now); err != nil {
			return err
		}
	}
	found, err := tx.v.matching(ctx, provider, cred, ident)
	if err != nil {
		return err
	}
	for i, e := range found {
		if i == 0 {
			err = s.writeDataTx(ctx, tx, e.rec.ID, cred, ident, now)
		} else {
			_, err = disableTx(ctx, tx, e.rec.ID, vault.CauseReplaced, now)
		}
		if err != nil {
			return err
		}
	}
	if len(found) == 0 {
		if _, err := s.insertTx(ctx, tx, 0, provider, cred, ident, "", now, now); err != nil {
			return err
		}
	}
	s.purgeSupersededTx(ctx, tx, provider, cred, ident)
	return nil
}

// disableAPIKeysTx soft-deletes every active API-key row of provider with
// CauseReplacedByOAuth.
func (s *Store) disableAPIKeysTx(ctx context.Context, tx *wtx, provider string, now int64) error {
	es, err := tx.v.apiKeys(ctx, provider)
	if err != nil {
		return err
	}
	for _, e := range es {
		if _, err := disableTx(ctx, tx, e.rec.ID, vault.CauseReplacedByOAuth, now); err != nil {
			return err
		}
	}
	return nil
}

// ReplaceAll stores creds with replace-all semantics (API-key login): each
// credential updates the first not-yet-matched active row it matches or is
// inserted; every unmatched active row is soft-deleted CauseReplaced; then
// superseded disabled rows are purged. It returns the provider's active
// records by id. EINVALID if any credential fails Validate (nothing is
// written).
func (s *Store) ReplaceAll(ctx context.Context, provider string, creds []vault.Credential) ([]vault.Record, error) {
	for _, c := range creds {
		if err := validate(provider, c); err != nil {
			return nil, err
		}
	}
	var out []*entry
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		es, err := tx.v.provider(ctx, provider)
		if err != nil {
			return false, err
		}
		existing, err := s.resolveAll(ctx, es)
		if err != nil {
			return false, err
		}
		if len(existing) == 0 && len(creds) == 0 {
			return false, nil
		}
		now := s.nowMs()
		matched := make(map[int64]bool, len(existing))
		type write struct {
			c     vault.Credential
			ident string
		}
		var written []write // to purge superseded rows of
		for _, c := range creds {
			ident := vault.IdentityKey(provider, c)
			ids := vault.Identifiers(c)
			target := int64(0)
			for _, r := range existing {
				if !matched[r.ID] && matches(r, c, ident, ids) {
					target = r.ID
					break
				}
			}
			if target != 0 {
				matched[target] = true
				err = s.writeDataTx(ctx, tx, target, c, ident, now)
			} else {
				_, err = s.insertTx(ctx, tx, 0, provider, c, ident, "", now, now)
			}
			if err != nil {
				return false, err
			}
			written = append(written, write{c, ident})
		}
		for _, r := range existing {
			if !matched[r.ID] {
				if _, err := disableTx(ctx, tx, r.ID, vault.CauseReplaced, now); err != nil {
					return false, err
				}
			}
		}
		for _, w := range written {
			s.purgeSupersededTx(ctx, tx, provider, w.c, w.ident)
		}
		if es, err = tx.v.provider(ctx, provider); err == nil {
			out, err = tx.v.checked(ctx, es)
		}
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("replace %s credentials: %w", provider, err)
	}
	return copyOut(out), nil
}

// UpdateCredential is the refresh write-back: it replaces the data of active
// row id, recomputes its identity key and purges superseded rows, in one
// durable transaction. ENOTFOUND if the row is missing or disabled; EINVALID
// if cred fails Validate.
func (s *Store) UpdateCredential(ctx context.Context, id int64, cred vault.Credential) (vault.Record, error) {
	if err := cred.Validate(); err != nil {
		return vault.Record{}, err
	}
	var out vault.Record
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		e, err := tx.v.get(ctx, id)
		if err != nil {
			return false, err
		}
		var provider string
		if e != nil {
			provider = e.rec.Provider
		} else {
			// Not in the active set: missing, disabled, or an active row
			// that does not parse (which this write repairs).
			var cause sql.NullString
			err := tx.QueryRowContext(ctx, "SELECT provider, disabled_cause FROM auth_credentials WHERE id = ?", id).Scan(&provider, &cause)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && cause.Valid) {
				return false, vault.NotFoundID(id)
			}
			if err != nil {
				return false, err
			}
		}
		ident := vault.IdentityKey(provider, cred)
		if err := s.writeDataTx(ctx, tx, id, cred, ident, s.nowMs()); err != nil {
			return false, err
		}
		s.purgeSupersededTx(ctx, tx, provider, cred, ident)
		if e, err = tx.v.get(ctx, id); err != nil {
			return false, err
		}
		if e == nil {
			return false, vault.NotFoundID(id)
		}
		out, err = s.resolve(ctx, e)
		return true, err
	})
	if err != nil {
		return vault.Record{}, fmt.Errorf("update credential %d: %w", id, err)
	}
	return out, nil
}

// purgeSupersededTx hard-deletes the disabled rows of provider that the
// credential c just written (active, identity ident) supersedes: OAuth rows
// whose identity key is ident or that c would have claimed by the one-way org
// upgrade; for an API key, every disabled API key of the provider. Each write
// purges what it supersedes, so the vault never needs a scan of all
// identities for it (rows an older program left with a NULL identity key are
// not purged). It is best effort: it runs under a savepoint and a failure
// only undoes the purge.
func (s *Store) purgeSupersededTx(ctx context.Context, tx *wtx, provider string, c vault.Credential, ident string) {
	if c.Type == vault.TypeOAuth && ident == "" {
		return
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT purge"); err != nil {
		s.log.Warn("vault: purge superseded rows skipped", slog.String("provider", provider), slog.Any("err", err))
		return
	}
	n, err := s.purgeTx(ctx, tx, provider, c, ident)
	if err != nil {
		s.log.Warn("vault: purge superseded rows failed", slog.String("provider", provider), slog.Any("err", err))
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO purge"); err != nil {
			s.log.Warn("vault: rollback of purge failed", slog.Any("err", err))
		}
	} else if n > 0 {
		s.log.Debug("vault: purged superseded rows", slog.String("provider", provider), slog.Int64("n", n))
	}
	tx.ExecContext(ctx, "RELEASE purge")
}

func (s *Store) purgeTx(ctx context.Context, tx *wtx, provider string, c vault.Credential, ident string) (int64, error) {
	if c.Type == vault.TypeAPIKey {
		res, err := tx.ExecContext(ctx, `DELETE FROM auth_credentials WHERE provider = ? AND credential_type = 'api_key'
			AND disabled_cause IS NOT NULL`, provider)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM auth_credentials WHERE provider = ? AND identity_key = ?
		AND credential_type = 'oauth' AND disabled_cause IS NOT NULL`, provider, ident)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	ids := vault.Identifiers(c)
	keys, org := vault.OrgUpgradeCandidates(ident, ids)
	if org == "" {
		return n, nil
	}
	// Tombstones the org upgrade would have claimed: keyed by a candidate,
	// or by another base of the same org (decoded to compare identifiers).
	rows, err := tx.QueryContext(ctx, `SELECT id, identity_key FROM auth_credentials WHERE provider = ?
		AND credential_type = 'oauth' AND disabled_cause IS NOT NULL AND identity_key IS NOT NULL`, provider)
	if err != nil {
		return n, err
	}
	var victims, check []int64
	for rows.Next() {
		var id int64
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return n, err
		}
		key = strings.TrimSpace(key)
		switch {
		case slices.Contains(keys, key):
			victims = append(victims, id)
		case strings.HasSuffix(key, "|"+org):
			check = append(check, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return n, err
	}
	for _, id := range check {
		rec, err := s.get(ctx, tx, id)
		if err != nil {
			continue // a tombstone that does not open is left alone
		}
		if vault.ReplacementMatch(rec.Credential, rowIdentity(rec), ident, ids) {
			victims = append(victims, id)
		}
	}
	for _, id := range victims {
		if _, err := tx.ExecContext(ctx, "DELETE FROM auth_credentials WHERE id = ?", id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

type identRow struct {
	id       int64
	provider string
	ident    string
}

// identities returns the non-empty row identities of provider's OAuth rows
// ("" = every provider), active or disabled. Only rows without a stored
// identity key are unsealed to recompute it.
func (s *Store) identities(ctx context.Context, q querier, provider string, active bool) ([]identRow, error) {
	cond := "disabled_cause IS NOT NULL"
	if active {
		cond = "disabled_cause IS NULL"
	}
	rows, err := q.QueryContext(ctx, "SELECT id, provider, identity_key FROM auth_credentials WHERE credential_type = 'oauth' AND "+cond+
		" AND (?1 = '' OR provider = ?1) ORDER BY id", provider)
	if err != nil {
		return nil, err
	}
	var out, missing []identRow
	for rows.Next() {
		var r identRow
		var ident sql.NullString
		if err := rows.Scan(&r.id, &r.provider, &ident); err != nil {
			rows.Close()
			return nil, err
		}
		r.ident = strings.TrimSpace(ident.String)
		if r.ident == "" {
			missing = append(missing, r)
			continue
		}
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, m := range missing {
		rec, err := s.get(ctx, q, m.id)
		if err != nil {
			return nil, err
		}
		if m.ident = vault.IdentityKey(rec.Provider, rec.Credential); m.ident != "" {
			out = append(out, m)
		}
	}
	return out, nil
}

// Dedupe soft-deletes older active OAuth rows sharing a non-empty identity
// key within a provider (CauseDeduplicated), keeping the highest id, and
// returns how many it disabled. API keys and identity-less rows are kept.
func (s *Store) Dedupe(ctx context.Context) (int, error) {
	n := 0
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		n = 0
		rows, err := s.identities(ctx, tx, "", true)
		if err != nil {
			return false, err
		}
		type group struct{ provider, ident string }
		newest := make(map[group]int64, len(rows))
		for _, r := range rows {
			g := group{r.provider, r.ident}
			newest[g] = max(newest[g], r.id)
		}
		now := s.nowMs()
		for _, r := range rows {
			if newest[group{r.provider, r.ident}] == r.id {
				continue
			}
			if _, err := disableTx(ctx, tx, r.id, vault.CauseDeduplicated, now); err != nil {
				return false, err
			}
			n++
		}
		return n > 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("dedupe credentials: %w", err)
	}
	return n, nil
}
