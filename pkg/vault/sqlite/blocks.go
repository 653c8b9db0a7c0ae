package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

var _ vault.BlockStore = (*Store)(nil)

// Blocks returns the live blocks of every active credential,
// keyed by id, each list in wire order. Expired rows are left to
// PruneBlocks: deleting them changes nothing visible.
func (s *Store) Blocks(ctx context.Context, nowMs int64) (map[int64][]vault.CredentialBlock, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT b.credential_id, b.provider_key, b.block_scope, b.blocked_until_ms, b.updated_at
		FROM auth_credential_blocks b JOIN auth_credentials c ON c.id = b.credential_id
		WHERE b.blocked_until_ms > ? AND c.disabled_cause IS NULL
		ORDER BY b.credential_id, b.provider_key, b.block_scope, b.blocked_until_ms`, nowMs)
	if err != nil {
		return nil, fmt.Errorf("read credential blocks: %w", err)
	}
	defer rows.Close()
	out := map[int64][]vault.CredentialBlock{}
	for rows.Next() {
		var id, updated int64
		var b vault.CredentialBlock
		if err := rows.Scan(&id, &b.ProviderKey, &b.Scope, &b.UntilMs, &updated); err != nil {
			return nil, fmt.Errorf("read credential blocks: %w", err)
		}
		b.UpdatedAtMs = updated * 1000
		out[id] = append(out[id], b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read credential blocks: %w", err)
	}
	return out, nil
}

// activeTx fails with NotFoundID unless credential id is active.
func activeTx(ctx context.Context, tx *wtx, id int64) error {
	var one int
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM auth_credentials WHERE id = ? AND disabled_cause IS NULL", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return vault.NotFoundID(id)
	}
	return err
}

// PutBlock upserts b for the active credential id with max semantics:
// a Codex "shared" block becomes a "chat" and a "spark" row.
// Every post refreshes updated_at; only an inserted row or a raised
// deadline advances the generation. Expired rows of the
// credential are dropped first, so the MaxBlocksPerCredential cap counts
// live rows only.
func (s *Store) PutBlock(ctx context.Context, id int64, b vault.CredentialBlock) (bool, error) {
	scopes := []string{b.Scope}
	if b.ProviderKey == vault.CodexProviderKey && b.Scope == vault.ScopeShared {
		scopes = []string{vault.ScopeChat, vault.ScopeSpark}
	}
	var raised bool
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		raised = false
		if err := activeTx(ctx, tx, id); err != nil {
			return false, err
		}
		now := s.nowMs()
		if _, err := tx.ExecContext(ctx, "DELETE FROM auth_credential_blocks WHERE credential_id = ? AND blocked_until_ms <= ?", id, now); err != nil {
			return false, err
		}
		for _, scope := range scopes {
			var until int64
			err := tx.QueryRowContext(ctx, `SELECT blocked_until_ms FROM auth_credential_blocks
				WHERE credential_id = ? AND provider_key = ? AND block_scope = ?`, id, b.ProviderKey, scope).Scan(&until)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				var n int
				if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM auth_credential_blocks WHERE credential_id = ?", id).Scan(&n); err != nil {
					return false, err
				}
				if n >= vault.MaxBlocksPerCredential {
					return false, vault.Errorf(vault.EINVALID, "credential %d already has %d blocks (the limit)", id, n)
				}
				raised = true
			case err != nil:
				return false, err
			case b.UntilMs > until:
				raised = true
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO auth_credential_blocks(credential_id, provider_key, block_scope, blocked_until_ms, updated_at)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT(credential_id, provider_key, block_scope) DO UPDATE SET
				blocked_until_ms = max(blocked_until_ms, excluded.blocked_until_ms), updated_at = excluded.updated_at`,
				id, b.ProviderKey, scope, b.UntilMs, now/1000); err != nil {
				return false, err
			}
		}
		tx.noBump = !raised
		return true, nil
	})
	if err != nil {
		return false, blockError("store credential block", err)
	}
	return raised, nil
}

// blockError wraps err with what, keeping vault errors (not found, over
// the cap, storage refusals) as they are.
func blockError(what string, err error) error {
	var ve *vault.Error
	if errors.As(err, &ve) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ClearBlocks deletes every block row of the active credential id;
// the generation advances when a live one went.
func (s *Store) ClearBlocks(ctx context.Context, id int64) (bool, error) {
	var live bool
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		if err := activeTx(ctx, tx, id); err != nil {
			return false, err
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM auth_credential_blocks WHERE credential_id = ? AND blocked_until_ms > ?",
			id, s.nowMs()).Scan(&n); err != nil {
			return false, err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM auth_credential_blocks WHERE credential_id = ?", id)
		if err != nil {
			return false, err
		}
		gone, _ := res.RowsAffected()
		live = n > 0
		tx.noBump = !live
		return gone > 0, nil
	})
	if err != nil {
		return false, blockError("delete credential blocks", err)
	}
	return live, nil
}

// HealBlocks deletes the live blocks of credential id with providerKey and
// a scope in scopes last updated at or before updatedBeforeMs (healing);
// the generation advances when any went.
func (s *Store) HealBlocks(ctx context.Context, id int64, providerKey string, scopes []string, updatedBeforeMs int64) (int, error) {
	if len(scopes) == 0 {
		return 0, nil
	}
	var n int64
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		args := []any{id, providerKey, s.nowMs(), updatedBeforeMs / 1000}
		for _, sc := range scopes {
			args = append(args, sc)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM auth_credential_blocks WHERE credential_id = ? AND provider_key = ?
			AND blocked_until_ms > ? AND updated_at <= ? AND block_scope IN (?`+strings.Repeat(",?", len(scopes)-1)+`)`, args...)
		if err != nil {
			return false, err
		}
		n, err = res.RowsAffected()
		return n > 0, err
	})
	if err != nil {
		return 0, blockError("heal credential blocks", err)
	}
	return int(n), nil
}

// PruneBlocks deletes expired block rows; nothing visible changes, so the
// generation does not advance.
func (s *Store) PruneBlocks(ctx context.Context, nowMs int64) (int64, error) {
	var n int64
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		res, err := tx.ExecContext(ctx, "DELETE FROM auth_credential_blocks WHERE blocked_until_ms <= ?", nowMs)
		if err != nil {
			return false, err
		}
		n, err = res.RowsAffected()
		return n > 0, err
	})
	if err != nil {
		return 0, fmt.Errorf("prune credential blocks: %w", err)
	}
	return n, nil
}
