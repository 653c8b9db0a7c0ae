package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/ompgo/omp/pkg/vault"
)

var _ vault.ClientUsageStore = (*Store)(nil)

// RecordClientUsage stores one normalised observed-usage report (fleet.md
// §8.1) in one transaction: the client row is upserted (hostname replaced
// only when sent), each entry is added to the newest row of its (install,
// app, provider, model) series when that row is at most 5 minutes older
// than the entry, else inserted. The generation does not advance.
func (s *Store) RecordClientUsage(ctx context.Context, r vault.ClientUsageReport, nowMs int64) error {
	merge := vault.ObservedMergeWindow.Milliseconds()
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO clients(install_id, hostname, first_seen, last_seen) VALUES (?1, ?2, ?3, ?3)
			ON CONFLICT(install_id) DO UPDATE SET last_seen = excluded.last_seen, hostname = coalesce(excluded.hostname, hostname)`,
			r.InstallID, nullable(r.Hostname), nowMs); err != nil {
			return false, err
		}
		if len(r.Entries) == 0 {
			return true, nil
		}
		// Prepared once per report: a 100-entry report runs 200 statements.
		find, err := tx.PrepareContext(ctx, `SELECT id FROM client_usage WHERE install_id = ? AND app = ? AND provider = ? AND model = ?
			AND recorded_at >= ? ORDER BY recorded_at DESC, id DESC LIMIT 1`)
		if err != nil {
			return false, err
		}
		defer find.Close()
		add, err := tx.PrepareContext(ctx, `UPDATE client_usage SET recorded_at = max(recorded_at, ?), requests = requests + ?,
			input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?,
			cache_write_tokens = cache_write_tokens + ?, cost_usd = cost_usd + ? WHERE id = ?`)
		if err != nil {
			return false, err
		}
		defer add.Close()
		ins, err := tx.PrepareContext(ctx, `INSERT INTO client_usage(recorded_at, install_id, app, provider, model, requests,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return false, err
		}
		defer ins.Close()
		for _, e := range r.Entries {
			var id int64
			err := find.QueryRowContext(ctx, r.InstallID, r.App, e.Provider, e.Model, e.At-merge).Scan(&id)
			switch {
			case err == nil:
				_, err = add.ExecContext(ctx, e.At, e.Requests, e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens, e.CostUsd, id)
			case errors.Is(err, sql.ErrNoRows):
				_, err = ins.ExecContext(ctx, e.At, r.InstallID, r.App, e.Provider, e.Model, e.Requests, e.InputTokens, e.OutputTokens,
					e.CacheReadTokens, e.CacheWriteTokens, e.CostUsd)
			}
			if err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return blockError("record client usage", err)
	}
	return nil
}

// ClientUsage returns every client, last seen descending, with its usage
// at or after sinceMs summed per (app, provider) by total tokens descending
// (fleet.md §8.3).
func (s *Store) ClientUsage(ctx context.Context, sinceMs int64) ([]vault.ClientSummary, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT install_id, hostname, first_seen, last_seen FROM clients ORDER BY last_seen DESC, install_id")
	if err != nil {
		return nil, fmt.Errorf("read clients: %w", err)
	}
	var out []vault.ClientSummary
	index := map[string]int{}
	for rows.Next() {
		var c vault.ClientSummary
		var host sql.NullString
		if err := rows.Scan(&c.InstallID, &host, &c.FirstSeen, &c.LastSeen); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read clients: %w", err)
		}
		c.Hostname, c.Providers = host.String, []vault.ClientProviderUsage{}
		index[c.InstallID] = len(out)
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read clients: %w", err)
	}
	rows, err = s.db.QueryContext(ctx, `SELECT install_id, app, provider, sum(requests), sum(input_tokens), sum(output_tokens),
		sum(cache_read_tokens), sum(cache_write_tokens), sum(cost_usd) FROM client_usage WHERE recorded_at >= ?
		GROUP BY install_id, app, provider`, sinceMs)
	if err != nil {
		return nil, fmt.Errorf("read client usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var u vault.ClientProviderUsage
		if err := rows.Scan(&id, &u.App, &u.Provider, &u.Requests, &u.InputTokens, &u.OutputTokens,
			&u.CacheReadTokens, &u.CacheWriteTokens, &u.CostUsd); err != nil {
			return nil, fmt.Errorf("read client usage: %w", err)
		}
		if i, ok := index[id]; ok {
			out[i].Providers = append(out[i].Providers, u)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read client usage: %w", err)
	}
	for i := range out {
		slices.SortStableFunc(out[i].Providers, func(a, b vault.ClientProviderUsage) int {
			if ta, tb := a.TotalTokens(), b.TotalTokens(); ta != tb {
				if ta > tb {
					return -1
				}
				return 1
			}
			return 0
		})
	}
	return out, nil
}

// PruneClientUsage deletes usage rows recorded before beforeMs, then the
// clients last seen before beforeMs with no usage left (Decision F11).
func (s *Store) PruneClientUsage(ctx context.Context, beforeMs int64) (int64, error) {
	var n int64
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		res, err := tx.ExecContext(ctx, "DELETE FROM client_usage WHERE recorded_at < ?", beforeMs)
		if err != nil {
			return false, err
		}
		a, _ := res.RowsAffected()
		res, err = tx.ExecContext(ctx, `DELETE FROM clients WHERE last_seen < ?
			AND NOT EXISTS (SELECT 1 FROM client_usage u WHERE u.install_id = clients.install_id)`, beforeMs)
		if err != nil {
			return false, err
		}
		b, _ := res.RowsAffected()
		n = a + b
		return n > 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune client usage: %w", err)
	}
	return n, nil
}
