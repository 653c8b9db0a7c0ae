package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

var _ vault.ClientUsageStore = (*Store)(nil)

// RecordClientUsage stores one normalised observed-usage report in one
// transaction: the client row is upserted (hostname replaced
// only when sent), each entry is added to the newest row of its (install,
// app, provider, model, credential) series when that row is at most 5
// minutes older than the entry, else inserted. The generation does not
// advance. Storage stays bounded per install id, in install ids and in
// rows: vault.MaxObservedDayRows, vault.MaxObservedClients and
// vault.MaxObservedRows.
func (s *Store) RecordClientUsage(ctx context.Context, r vault.ClientUsageReport, nowMs int64) error {
	// The HTTP layer normalises already; counters are bounded here too so
	// that stored sums never overflow whoever calls.
	r.Entries = slices.Clone(r.Entries)
	for i := range r.Entries {
		r.Entries[i].ClampCounts()
		r.Entries[i].CredentialID = max(r.Entries[i].CredentialID, 0)
	}
	merge := vault.ObservedMergeWindow.Milliseconds()
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		return true, s.withRaw(ctx, tx.Conn, func(rc *rawConn) error {
			known := false
			if err := rc.query(sqlClientKnown, func([]driver.Value) error { known = true; return nil }, r.InstallID); err != nil {
				return err
			}
			if !known {
				if err := s.evictClients(rc, r.InstallID); err != nil {
					return err
				}
			}
			if _, err := rc.exec(sqlUpsertClient, r.InstallID, nullable(r.Hostname), nowMs); err != nil {
				return err
			}
			inserted, err := s.addUsage(rc, r, merge)
			if err != nil {
				return err
			}
			return s.capRows(rc, inserted)
		})
	})
	if err != nil {
		s.usageRows.Store(-1) // rolled back: the count may be off
		return blockError("record client usage", err)
	}
	return nil
}

// evictClients makes room for one new install id: at vault.MaxObservedClients
// the least recently seen clients go, with all their usage.
func (s *Store) evictClients(rc *rawConn, newID string) error {
	var n int64
	if err := rc.query(sqlClientCount, func(v []driver.Value) error { n = asInt64(v[0]); return nil }); err != nil {
		return err
	}
	limit := cmp.Or(s.clientCap, vault.MaxObservedClients)
	if n < limit {
		return nil
	}
	var victims []string
	err := rc.query(sqlClientOldest, func(v []driver.Value) error {
		victims = append(victims, asString(v[0]))
		return nil
	}, n-limit+1)
	if err != nil {
		return err
	}
	var rows int64
	for _, id := range victims {
		k, err := rc.exec(sqlUsageDeleteInstall, id)
		if err != nil {
			return err
		}
		if _, err := rc.exec(sqlClientDelete, id); err != nil {
			return err
		}
		rows += k
	}
	s.usageRows.Store(-1)
	s.log.Warn("vault: observed-usage client cap reached; least recently seen clients pruned",
		"cap", limit, "pruned", len(victims), "usageRows", rows, "oldest", victims[0], "newInstallId", newID)
	return nil
}

// The fixed statements of the observed-usage write path, prepared once per
// connection (stmtcache.go) and run once per client, read and row.
var (
	sqlClientKnown  = `SELECT 1 FROM clients WHERE install_id = ?1`
	sqlClientCount  = `SELECT count(*) FROM clients`
	sqlClientOldest = `SELECT install_id FROM clients ORDER BY last_seen, install_id LIMIT ?1`
	sqlClientDelete = `DELETE FROM clients WHERE install_id = ?1`
	sqlUpsertClient = `INSERT INTO clients(install_id, hostname, first_seen, last_seen) VALUES (?1, ?2, ?3, ?3)
		ON CONFLICT(install_id) DO UPDATE SET last_seen = excluded.last_seen, hostname = coalesce(excluded.hostname, hostname)`
	sqlUsageDeleteInstall = `DELETE FROM client_usage WHERE install_id = ?1`
	sqlUsageCount         = `SELECT count(*) FROM client_usage`
	sqlUsageDeleteOldest  = `DELETE FROM client_usage WHERE id IN (SELECT id FROM client_usage ORDER BY recorded_at, id LIMIT ?1)`
	// Only rows within the merge window of the report's earliest entry can
	// take an entry; a series whose newest row is older inserts anyway.
	sqlUsageWindow = `SELECT id, provider, model, credential_id, recorded_at FROM client_usage
		WHERE install_id = ?1 AND recorded_at >= ?3 AND app = ?2 ORDER BY recorded_at, id`
	// The rows of one install id on one UTC day (the per-day cap).
	sqlUsageDayCount = `SELECT count(*) FROM client_usage WHERE install_id = ?1 AND recorded_at >= ?2 AND recorded_at < ?3`
	// The newest row of each (provider, credential) of one app on one day:
	// where entries beyond the per-day cap are added.
	sqlUsageDayNewest = `SELECT id, provider, credential_id, max(recorded_at) FROM client_usage
		WHERE install_id = ?1 AND recorded_at >= ?3 AND recorded_at < ?4 AND app = ?2 GROUP BY provider, credential_id`
	// Counters saturate at vault.MaxObservedCount (both sides are at most
	// that, so the sum itself cannot overflow).
	sqlUsageGrow = `UPDATE client_usage SET recorded_at = max(recorded_at, ?2),
		requests = min(requests + ?3, ` + maxCount + `), input_tokens = min(input_tokens + ?4, ` + maxCount + `),
		output_tokens = min(output_tokens + ?5, ` + maxCount + `), cache_read_tokens = min(cache_read_tokens + ?6, ` + maxCount + `),
		cache_write_tokens = min(cache_write_tokens + ?7, ` + maxCount + `), cost_usd = cost_usd + ?8 WHERE id = ?1`
	sqlUsageInsert = `INSERT INTO client_usage(recorded_at, install_id, app, provider, model, credential_id, requests,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`
)

// usageRow is one client_usage row a report adds to: an existing row (id
// ≠ 0) that gets the sums of its merged entries, or a new one. Updates add
// deltas, so two usageRows of one id (the merge window and the cap's fold
// target) both apply correctly.
type usageRow struct {
	id    int64
	at    int64 // recorded_at after the report
	sum   vault.ObservedUsage
	dirty bool
	drop  bool // a new row beyond the per-day cap, folded or dropped
}

func (u *usageRow) add(e vault.ObservedUsage) {
	// Saturating at vault.MaxObservedCount (entries are already capped).
	u.sum.Requests = min(u.sum.Requests+e.Requests, vault.MaxObservedCount)
	u.sum.InputTokens = min(u.sum.InputTokens+e.InputTokens, vault.MaxObservedCount)
	u.sum.OutputTokens = min(u.sum.OutputTokens+e.OutputTokens, vault.MaxObservedCount)
	u.sum.CacheReadTokens = min(u.sum.CacheReadTokens+e.CacheReadTokens, vault.MaxObservedCount)
	u.sum.CacheWriteTokens = min(u.sum.CacheWriteTokens+e.CacheWriteTokens, vault.MaxObservedCount)
	u.sum.CostUsd += e.CostUsd
	u.at = max(u.at, e.At)
	u.dirty = true
}

// maxCount is vault.MaxObservedCount as SQL text.
var maxCount = strconv.FormatInt(vault.MaxObservedCount, 10)

// seriesKey identifies a usage series within one (install id, app).
type seriesKey struct {
	provider, model string
	cred            int64
}

// dayMs is one UTC day in milliseconds.
const dayMs = 24 * 60 * 60 * 1000

// addUsage applies the 5-minute merge rule to r's entries in order, then
// the per-day row cap, and writes the outcome with cached single-row
// statements: one read of the series' recent rows, one UPDATE per row
// that grew, one INSERT per new row.
func (s *Store) addUsage(rc *rawConn, r vault.ClientUsageReport, merge int64) (inserted int64, err error) {
	if len(r.Entries) == 0 {
		return 0, nil
	}
	lo := r.Entries[0].At
	for _, e := range r.Entries {
		lo = min(lo, e.At)
	}
	newest := map[seriesKey]*usageRow{}
	err = rc.query(sqlUsageWindow, func(v []driver.Value) error {
		// Ascending: the last row seen of a series is its newest.
		newest[seriesKey{asString(v[1]), asString(v[2]), asInt64(v[3])}] = &usageRow{id: asInt64(v[0]), at: asInt64(v[4])}
		return nil
	}, r.InstallID, r.App, lo-merge)
	if err != nil {
		return 0, err
	}
	rows := make([]usageRow, 0, len(r.Entries)) // new rows: one allocation
	var touched []*usageRow
	for _, e := range r.Entries {
		k := seriesKey{e.Provider, e.Model, e.CredentialID}
		u := newest[k]
		if u == nil || u.at < e.At-merge {
			rows = append(rows, usageRow{at: e.At, sum: vault.ObservedUsage{Provider: e.Provider, Model: e.Model, CredentialID: e.CredentialID}})
			u = &rows[len(rows)-1]
			newest[k] = u
		}
		if !u.dirty {
			touched = append(touched, u)
		}
		u.add(e)
	}
	if len(rows) > 0 {
		folds, err := s.capDays(rc, r, rows)
		if err != nil {
			return 0, err
		}
		touched = append(touched, folds...)
	}
	for _, u := range touched {
		var err error
		switch {
		case u.drop, u.id != 0 && !u.dirty: // folded away; a fold target that took nothing
		case u.id != 0:
			_, err = rc.exec(sqlUsageGrow, u.id, u.at, u.sum.Requests, u.sum.InputTokens, u.sum.OutputTokens,
				u.sum.CacheReadTokens, u.sum.CacheWriteTokens, u.sum.CostUsd)
		default:
			inserted++
			_, err = rc.exec(sqlUsageInsert, u.at, r.InstallID, r.App, u.sum.Provider, u.sum.Model, u.sum.CredentialID,
				u.sum.Requests, u.sum.InputTokens, u.sum.OutputTokens, u.sum.CacheReadTokens, u.sum.CacheWriteTokens, u.sum.CostUsd)
		}
		if err != nil {
			return 0, err
		}
	}
	return inserted, nil
}

// capRows applies vault.MaxObservedRows after a report inserted rows: past
// the cap the rows recorded longest ago are deleted down to 95 % of it.
// The count is kept in memory between reports and read again whenever it
// is unknown (first write, after an eviction, a prune or a rollback).
func (s *Store) capRows(rc *rawConn, inserted int64) error {
	if inserted == 0 {
		return nil
	}
	limit := cmp.Or(s.rowCap, vault.MaxObservedRows)
	n := s.usageRows.Load()
	if n <= 0 {
		if err := rc.query(sqlUsageCount, func(v []driver.Value) error { n = asInt64(v[0]); return nil }); err != nil {
			return err
		}
	} else {
		n += inserted
	}
	if n > limit {
		excess := n - limit*19/20
		k, err := rc.exec(sqlUsageDeleteOldest, excess)
		if err != nil {
			return err
		}
		n -= k
		s.log.Warn("vault: observed-usage row cap reached; the rows recorded longest ago pruned",
			"cap", limit, "pruned", k)
	}
	s.usageRows.Store(n)
	return nil
}

// capDays applies vault.MaxObservedDayRows to the new rows of a report (in
// entry order): on a day that would exceed it, the excess rows are marked
// drop and their sums go to the newest row of the same (provider,
// credential) of that day — stored, or new in this report and within the
// cap — returned as extra rows to write; with no such row they are lost.
// Either way one log line says so.
func (s *Store) capDays(rc *rawConn, r vault.ClientUsageReport, rows []usageRow) ([]*usageRow, error) {
	limit := cmp.Or(s.dayRowCap, vault.MaxObservedDayRows)
	perDay := map[int64]int64{}
	for i := range rows {
		perDay[rows[i].at/dayMs]++
	}
	var folds []*usageRow
	for day, n := range perDay {
		var have int64
		if err := rc.query(sqlUsageDayCount, func(v []driver.Value) error { have = asInt64(v[0]); return nil },
			r.InstallID, day*dayMs, (day+1)*dayMs); err != nil {
			return nil, err
		}
		if have+n <= limit {
			continue
		}
		type target struct {
			provider string
			cred     int64
		}
		into := map[target]*usageRow{}
		err := rc.query(sqlUsageDayNewest, func(v []driver.Value) error {
			u := &usageRow{id: asInt64(v[0]), at: asInt64(v[3])}
			into[target{asString(v[1]), asInt64(v[2])}] = u
			folds = append(folds, u)
			return nil
		}, r.InstallID, r.App, day*dayMs, (day+1)*dayMs)
		if err != nil {
			return nil, err
		}
		room := max(limit-have, 0)
		var folded, lost int
		for i := range rows {
			u := &rows[i]
			if u.at/dayMs != day {
				continue
			}
			t := target{u.sum.Provider, u.sum.CredentialID}
			if room > 0 {
				room--
				into[t] = u // later excess of this series' target goes here
				continue
			}
			u.drop = true
			if dst := into[t]; dst != nil {
				e := u.sum
				e.At = u.at
				dst.add(e)
				folded++
			} else {
				lost++
			}
		}
		s.log.Warn("vault: observed-usage rows of one install id over the daily cap; entries folded into existing rows",
			"installId", r.InstallID, "day", time.UnixMilli(day*dayMs).UTC().Format(time.DateOnly),
			"cap", limit, "folded", folded, "dropped", lost)
	}
	return folds, nil
}

// ClientUsage returns every client, last seen descending, with its usage
// at or after sinceMs summed per (app, provider) — with byAccount per (app,
// provider, credential), labelled — by total tokens descending.
func (s *Store) ClientUsage(ctx context.Context, sinceMs int64, byAccount bool) ([]vault.ClientSummary, error) {
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
	cred, group := "0", ""
	if byAccount {
		cred, group = "credential_id", ", credential_id"
	}
	rows, err = s.db.QueryContext(ctx, `SELECT install_id, app, provider, `+cred+`, sum(requests), sum(input_tokens), sum(output_tokens),
		sum(cache_read_tokens), sum(cache_write_tokens), sum(cost_usd) FROM client_usage WHERE recorded_at >= ?
		GROUP BY install_id, app, provider`+group, sinceMs)
	if err != nil {
		return nil, fmt.Errorf("read client usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var u vault.ClientProviderUsage
		if err := rows.Scan(&id, &u.App, &u.Provider, &u.CredentialID, &u.Requests, &u.InputTokens, &u.OutputTokens,
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
	rows.Close()
	if byAccount {
		s.labelAccounts(ctx, out)
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

// labelAccounts sets Account on the rows that name a credential; a
// credential gone from the vault (purged) is labelled by its id.
func (s *Store) labelAccounts(ctx context.Context, out []vault.ClientSummary) {
	labels := map[int64]string{}
	for i := range out {
		for j := range out[i].Providers {
			u := &out[i].Providers[j]
			if u.CredentialID == 0 {
				continue
			}
			l, ok := labels[u.CredentialID]
			if !ok {
				if rec, err := s.Get(ctx, u.CredentialID); err == nil {
					l = vault.AccountLabel(rec)
				} else {
					l = "#" + strconv.FormatInt(u.CredentialID, 10)
				}
				labels[u.CredentialID] = l
			}
			u.Account = l
		}
	}
}

// PruneClientUsage deletes usage rows recorded before beforeMs, then the
// clients last seen before beforeMs with no usage left.
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
		s.usageRows.Store(-1)
		return n > 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune client usage: %w", err)
	}
	return n, nil
}
