package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

func cacheAAD(key string) []byte { return []byte("cache/" + key) }

// GetCache returns the value stored under key. A row whose keepUntil has
// passed is reported as missing unless stale is true. Values are sealed at
// rest like credentials.
func (s *Store) GetCache(ctx context.Context, key string, stale bool) ([]byte, bool, error) {
	var blob []byte
	var keepUntil int64
	err := s.db.QueryRowContext(ctx, "SELECT value, keep_until FROM cache WHERE key = ?", key).Scan(&blob, &keepUntil)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read cache: %w", err)
	}
	if !stale && keepUntil <= s.nowMs() {
		return nil, false, nil
	}
	v, err := s.keyring().Open(blob, cacheAAD(key))
	if err != nil && s.reloadForRead(ctx, err, blob) {
		v, err = s.keyring().Open(blob, cacheAAD(key))
	}
	if err != nil {
		return nil, false, &BlobError{Table: "cache", Row: strconv.Quote(key), Column: "value", Err: err}
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// SetCache stores value under key until keepUntil (epoch ms). It does not
// advance the credential generation.
func (s *Store) SetCache(ctx context.Context, key string, value []byte, keepUntil int64) error {
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		// Seal inside the transaction: only there is the keyring known to
		// match the vault's active key.
		blob, err := s.keyring().Seal(value, cacheAAD(key))
		if err != nil {
			return false, fmt.Errorf("seal cache value: %w", err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO cache(key, value, keep_until) VALUES(?, ?, ?)
			ON CONFLICT(key) DO UPDATE SET value = excluded.value, keep_until = excluded.keep_until`, key, blob, keepUntil)
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("write cache: %w", err)
	}
	return nil
}

// CacheKeys lists the keys of the cache rows that begin with prefix,
// expired rows included.
func (s *Store) CacheKeys(ctx context.Context, prefix string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT key FROM cache WHERE substr(key, 1, length(?)) = ? ORDER BY key", prefix, prefix)
	if err != nil {
		return nil, fmt.Errorf("list cache: %w", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("list cache: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list cache: %w", err)
	}
	return keys, nil
}
