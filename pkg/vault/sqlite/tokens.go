package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

var _ vault.TokenStore = (*Store)(nil)

// metaTokensVersion is the meta key that moves on every token create and
// revoke; the broker polls it to pick up changes made by `omp auth-broker
// token create|revoke` in another process.
const metaTokensVersion = "tokens_version"

// CreateToken stores t (its digest; the token text never reaches the
// vault). The credential generation does not move: snapshots do not change.
func (s *Store) CreateToken(ctx context.Context, t vault.ClientToken) error {
	if err := t.Validate(); err != nil {
		return err
	}
	created := t.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM client_tokens WHERE name = ? OR digest = ?", t.Name, t.Digest[:]).Scan(&n); err != nil {
			return false, err
		}
		if n > 0 {
			return false, vault.Errorf(vault.ECONFLICT, "a token named %q already exists", t.Name)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO client_tokens (name, scope, digest, created_at) VALUES (?, ?, ?, ?)",
			t.Name, t.Scope, t.Digest[:], created.UnixMilli()); err != nil {
			return false, err
		}
		return true, s.bumpTokensVersion(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	return nil
}

// RevokeToken deletes the token name.
func (s *Store) RevokeToken(ctx context.Context, name string) error {
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		res, err := tx.ExecContext(ctx, "DELETE FROM client_tokens WHERE name = ?", name)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = vault.Errorf(vault.ENOTFOUND, "no token named %q", name)
			}
			return false, err
		}
		return true, s.bumpTokensVersion(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return nil
}

func (s *Store) bumpTokensVersion(ctx context.Context, tx *wtx) error {
	v, err := getMeta[int64](ctx, tx, metaTokensVersion)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	// Like the generation: never reused, even after a restore of an older
	// copy, so a reader never mistakes a new token set for the one it holds.
	return setMeta(ctx, tx, metaTokensVersion, max(v+1, s.nowMs()))
}

// ClientTokens returns every client token, ordered by name.
func (s *Store) ClientTokens(ctx context.Context) ([]vault.ClientToken, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, scope, digest, created_at FROM client_tokens ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	defer rows.Close()
	var out []vault.ClientToken
	for rows.Next() {
		var t vault.ClientToken
		var digest []byte
		var created int64
		if err := rows.Scan(&t.Name, &t.Scope, &digest, &created); err != nil {
			return nil, fmt.Errorf("read tokens: %w", err)
		}
		if len(digest) != len(t.Digest) { // the schema's CHECK makes this impossible
			return nil, fmt.Errorf("read tokens: token %q has a %d-byte digest", t.Name, len(digest))
		}
		copy(t.Digest[:], digest)
		t.CreatedAt = time.UnixMilli(created)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	return out, nil
}

// TokensVersion returns the token-set version (0 before the first token
// was ever created): one primary-key read.
func (s *Store) TokensVersion(ctx context.Context) (int64, error) {
	v, err := getMeta[int64](ctx, s.db, metaTokensVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read tokens version: %w", err)
	}
	return v, nil
}
