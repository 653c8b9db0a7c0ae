package sqlite

import (
	"context"
	"fmt"
	"strconv"
)

// resealBatch is how many rows one re-seal transaction touches, so the write
// lock is held only briefly and the broker keeps serving.
const resealBatch = 64

// Reseal re-seals every blob (credential columns, cache values, the canary)
// that is not sealed under the keyring's active key and returns how many it
// re-sealed. It runs online in small transactions and does not advance the
// generation (the credentials do not change). A second call returning 0
// means the retired keys are no longer needed (seal.RetireKeys).
func (s *Store) Reseal(ctx context.Context) (int, error) {
	total := 0
	var after int64
	for {
		n, last, err := s.resealCredentials(ctx, after)
		total += n
		if err != nil {
			return total, err
		}
		if last == 0 {
			break
		}
		after = last
	}
	afterKey := ""
	for {
		n, last, more, err := s.resealCache(ctx, afterKey)
		total += n
		if err != nil {
			return total, err
		}
		if !more {
			break
		}
		afterKey = last
	}
	_, err := s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		blob, err := getMeta[[]byte](ctx, tx, metaCanary)
		if err != nil {
			return false, err
		}
		kr := s.keyring()
		if !kr.NeedsReseal(blob) {
			return false, nil
		}
		pt, err := kr.Open(blob, []byte(canaryAAD))
		if err != nil {
			return false, fmt.Errorf("canary: %w", err)
		}
		if blob, err = kr.Seal(pt, []byte(canaryAAD)); err != nil {
			return false, err
		}
		total++
		return true, setMeta(ctx, tx, metaCanary, blob)
	})
	if err != nil {
		return total, fmt.Errorf("reseal vault: %w", err)
	}
	return total, nil
}

// resealCredentials re-seals one batch of rows with id > after; last is the
// highest id examined (0 when there are no more rows).
func (s *Store) resealCredentials(ctx context.Context, after int64) (n int, last int64, err error) {
	_, err = s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		n, last = 0, 0
		rows, err := tx.QueryContext(ctx, "SELECT id, access, refresh, api_key, extra FROM auth_credentials WHERE id > ? ORDER BY id LIMIT ?", after, resealBatch)
		if err != nil {
			return false, err
		}
		type row struct {
			id    int64
			blobs [len(sealedCols)][]byte
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.blobs[0], &r.blobs[1], &r.blobs[2], &r.blobs[3]); err != nil {
				rows.Close()
				return false, err
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		kr := s.keyring()
		for _, r := range batch {
			last = r.id
			for i, col := range sealedCols {
				if !kr.NeedsReseal(r.blobs[i]) {
					continue
				}
				aad := credAAD(r.id, col)
				pt, err := kr.Open(r.blobs[i], aad)
				if err != nil {
					return false, &BlobError{Table: "auth_credentials", Row: strconv.FormatInt(r.id, 10), Column: col, Err: err}
				}
				blob, err := kr.Seal(pt, aad)
				if err != nil {
					return false, err
				}
				// col comes from the fixed sealedCols list, never from input.
				if _, err := tx.ExecContext(ctx, "UPDATE auth_credentials SET "+col+" = ? WHERE id = ?", blob, r.id); err != nil {
					return false, err
				}
				n++
			}
		}
		return n > 0, nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("reseal credentials: %w", err)
	}
	return n, last, nil
}

// resealCache re-seals one batch of cache rows with key > after.
func (s *Store) resealCache(ctx context.Context, after string) (n int, last string, more bool, err error) {
	_, err = s.update(ctx, false, func(ctx context.Context, tx *wtx) (bool, error) {
		n, last, more = 0, "", false
		rows, err := tx.QueryContext(ctx, "SELECT key, value FROM cache WHERE key > ? ORDER BY key LIMIT ?", after, resealBatch)
		if err != nil {
			return false, err
		}
		type row struct {
			key  string
			blob []byte
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.key, &r.blob); err != nil {
				rows.Close()
				return false, err
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		more = len(batch) == resealBatch
		kr := s.keyring()
		for _, r := range batch {
			last = r.key
			if !kr.NeedsReseal(r.blob) {
				continue
			}
			pt, err := kr.Open(r.blob, cacheAAD(r.key))
			if err != nil {
				return false, &BlobError{Table: "cache", Row: strconv.Quote(r.key), Column: "value", Err: err}
			}
			blob, err := kr.Seal(pt, cacheAAD(r.key))
			if err != nil {
				return false, err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE cache SET value = ? WHERE key = ?", blob, r.key); err != nil {
				return false, err
			}
			n++
		}
		return n > 0, nil
	})
	if err != nil {
		return 0, "", false, fmt.Errorf("reseal cache: %w", err)
	}
	return n, last, more, nil
}
