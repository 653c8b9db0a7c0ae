package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// normalizeCause trims cause; an empty cause is stored as CauseDisabled.
func normalizeCause(cause string) string {
	if c := strings.TrimSpace(cause); c != "" {
		return c
	}
	return vault.CauseDisabled
}

// disableTx soft-deletes active row id and returns its provider.
func disableTx(ctx context.Context, tx *wtx, id int64, cause string, now int64) (provider string, err error) {
	err = tx.QueryRowContext(ctx, "UPDATE auth_credentials SET disabled_cause = ?, updated_at = ? WHERE id = ? AND disabled_cause IS NULL RETURNING provider",
		normalizeCause(cause), now, id).Scan(&provider)
	if errors.Is(err, sql.ErrNoRows) {
		return "", vault.NotFoundID(id)
	}
	if err != nil {
		return "", fmt.Errorf("disable credential %d: %w", id, err)
	}
	tx.v.set(id, nil)
	return provider, nil
}

// disabled reports a row of provider disabled with cause to OnDisable.
func (s *Store) disabled(provider, cause string) {
	if s.onDisable != nil {
		s.onDisable(provider, normalizeCause(cause))
	}
}

// Disable soft-deletes the active row id with cause ("" → CauseDisabled).
// ENOTFOUND if the row is missing or already disabled.
func (s *Store) Disable(ctx context.Context, id int64, cause string) error {
	var provider string
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		var err error
		provider, err = disableTx(ctx, tx, id, cause, s.nowMs())
		return true, err
	})
	if err == nil {
		s.disabled(provider, cause)
	}
	return err
}

// DisableIf disables row id only if it is active and its credential still
// equals expected (compare-and-set); it reports whether it disabled. A row
// that cannot be unsealed is an error.
func (s *Store) DisableIf(ctx context.Context, id int64, expected vault.Credential, cause string) (bool, error) {
	var provider string
	changed, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		// Only active rows can be disabled; a row that is not in the
		// active set is missing, disabled or does not parse.
		e, err := tx.v.get(ctx, id)
		if err != nil || e == nil {
			return false, err
		}
		rec, err := s.resolve(ctx, e)
		switch {
		case errors.Is(err, errUnparsable):
			return false, nil
		case err != nil:
			return false, err
		case !rec.Credential.Equal(expected):
			return false, nil
		}
		provider, err = disableTx(ctx, tx, id, cause, s.nowMs())
		return true, err
	})
	if err != nil {
		return false, fmt.Errorf("disable credential %d: %w", id, err)
	}
	if changed {
		s.disabled(provider, cause)
	}
	return changed, nil
}

// DisableProvider soft-deletes every active row of provider (logout) and
// returns how many it disabled.
func (s *Store) DisableProvider(ctx context.Context, provider, cause string) (int, error) {
	var n int64
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		n = 0
		rows, err := tx.QueryContext(ctx, "UPDATE auth_credentials SET disabled_cause = ?, updated_at = ? WHERE provider = ? AND disabled_cause IS NULL RETURNING id",
			normalizeCause(cause), s.nowMs(), provider)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return false, err
			}
			tx.v.set(id, nil)
			n++
		}
		return n > 0, rows.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("disable %s credentials: %w", provider, err)
	}
	return int(n), nil
}
