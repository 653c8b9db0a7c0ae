package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// identityRule is the identity-key rule the vault's stored keys follow:
// 2 = the 18.1.21 rule with org qualifiers.
// Vaults written before it hold 15.x keys: anthropic/openai-codex rows
// without an email have none, and rows carrying an orgId lack the qualifier.
const identityRule = 2

// metaIdentityRule records the rule of the stored keys (absent = 1).
const metaIdentityRule = "identity_rule"

// backfillIdentityKeys runs on open, like the reference's backfill: every
// OAuth row (active or disabled) with a NULL identity key gets the key the
// 18.1.21 rule derives, when it derives one. Once per vault it also re-keys
// anthropic/openai-codex rows whose stored key lacks the org qualifier
// their orgId calls for. Rows that do not open are left alone. It runs in
// Open's transaction, which advances the generation, so every process
// reloads its active set.
func (s *Store) backfillIdentityKeysTx(ctx context.Context, tx *wtx) error {
	err := func() error {
		rule, err := getMeta[int64](ctx, tx, metaIdentityRule)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		query := "SELECT id FROM auth_credentials WHERE credential_type = 'oauth' AND identity_key IS NULL"
		if rule < identityRule {
			query += " OR (credential_type = 'oauth' AND provider IN ('anthropic', 'openai-codex') AND identity_key NOT LIKE '%org:%')"
		}
		rows, err := tx.QueryContext(ctx, query+" ORDER BY id")
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		changed := 0
		for _, id := range ids {
			rec, err := s.get(ctx, tx, id)
			if err != nil {
				s.log.Warn("vault: identity backfill skipped a row", slog.Int64("id", id), slog.Any("err", err))
				continue
			}
			key := vault.IdentityKey(rec.Provider, rec.Credential)
			if key == "" || key == strings.TrimSpace(rec.IdentityKey) {
				continue
			}
			if _, err := tx.ExecContext(ctx, "UPDATE auth_credentials SET identity_key = ? WHERE id = ?", key, id); err != nil {
				return fmt.Errorf("backfill identity key of row %d: %w", id, err)
			}
			changed++
		}
		if rule < identityRule {
			if err := setMeta(ctx, tx, metaIdentityRule, int64(identityRule)); err != nil {
				return err
			}
		}
		if changed > 0 {
			tx.v.reload = true
			s.log.Info("vault: identity keys backfilled", slog.Int("rows", changed))
		}
		return nil
	}()
	return err
}
