package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ompgo/omp/pkg/vault"
)

const hourMs = 3_600_000

// RecordUsage appends entries with hourly downsampling: when
// the latest row of a (provider, account key, limit id) series falls in the
// same hour bucket as the entry, that row is updated in place; otherwise a
// row is inserted. A non-positive RecordedAt means now. All entries are
// written in one transaction; the credential generation does not advance.
func (s *Store) RecordUsage(ctx context.Context, entries []vault.UsageHistoryEntry) error {
	if len(entries) == 0 {
		return nil
	}
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		for _, e := range entries {
			if e.RecordedAt <= 0 {
				e.RecordedAt = s.nowMs()
			}
			var id, at int64
			err := tx.QueryRowContext(ctx, `SELECT id, recorded_at FROM usage_history
				WHERE provider = ? AND account_key = ? AND limit_id = ? ORDER BY recorded_at DESC, id DESC LIMIT 1`,
				e.Provider, e.AccountKey, e.LimitID).Scan(&id, &at)
			switch {
			case err == nil && at/hourMs == e.RecordedAt/hourMs:
				_, err = tx.ExecContext(ctx, `UPDATE usage_history SET recorded_at = ?, email = ?, account_id = ?, label = ?,
					window_label = ?, used_fraction = ?, status = ?, resets_at = ? WHERE id = ?`,
					e.RecordedAt, nullable(e.Email), nullable(e.AccountID), e.Label, nullable(e.WindowLabel),
					e.UsedFraction, nullable(e.Status), e.ResetsAt, id)
			case err == nil || errors.Is(err, sql.ErrNoRows):
				_, err = tx.ExecContext(ctx, `INSERT INTO usage_history (recorded_at, provider, account_key, email, account_id,
					limit_id, label, window_label, used_fraction, status, resets_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					e.RecordedAt, e.Provider, e.AccountKey, nullable(e.Email), nullable(e.AccountID), e.LimitID, e.Label,
					nullable(e.WindowLabel), e.UsedFraction, nullable(e.Status), e.ResetsAt)
			}
			if err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("record usage history: %w", err)
	}
	return nil
}

// UsageHistory returns entries recorded at or after sinceMs, for provider
// ("" = all), ascending by time.
func (s *Store) UsageHistory(ctx context.Context, sinceMs int64, provider string) ([]vault.UsageHistoryEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT recorded_at, provider, account_key, email, account_id, limit_id, label,
		window_label, used_fraction, status, resets_at FROM usage_history
		WHERE recorded_at >= ?1 AND (?2 = '' OR provider = ?2) ORDER BY recorded_at, id`, sinceMs, provider)
	if err != nil {
		return nil, fmt.Errorf("read usage history: %w", err)
	}
	defer rows.Close()
	var out []vault.UsageHistoryEntry
	for rows.Next() {
		var e vault.UsageHistoryEntry
		var email, accountID, window, status sql.NullString
		var used sql.NullFloat64
		var resets sql.NullInt64
		if err := rows.Scan(&e.RecordedAt, &e.Provider, &e.AccountKey, &email, &accountID, &e.LimitID, &e.Label,
			&window, &used, &status, &resets); err != nil {
			return nil, fmt.Errorf("read usage history: %w", err)
		}
		e.Email, e.AccountID, e.WindowLabel, e.Status = email.String, accountID.String, window.String, status.String
		if used.Valid {
			e.UsedFraction = &used.Float64
		}
		if resets.Valid {
			e.ResetsAt = &resets.Int64
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read usage history: %w", err)
	}
	return out, nil
}

// PruneUsageHistory deletes history rows recorded before beforeMs and
// returns how many went (the broker keeps 400 days).
// It does not advance the credential generation.
func (s *Store) PruneUsageHistory(ctx context.Context, beforeMs int64) (int64, error) {
	var n int64
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM usage_history WHERE recorded_at < ?`, beforeMs)
		if err != nil {
			return false, err
		}
		n, err = res.RowsAffected()
		return n > 0, err
	})
	if err != nil {
		return 0, fmt.Errorf("prune usage history: %w", err)
	}
	return n, nil
}
