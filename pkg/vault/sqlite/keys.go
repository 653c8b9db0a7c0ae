package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/ompgo/omp/pkg/vault/seal"
)

// Online rekey protocol. The vault records the id of its active key in the
// meta table (active_key_id). Every write transaction reads it under the
// write lock (BEGIN IMMEDIATE) and seals under that key: when it names a key
// this store does not hold yet, the store reloads its keyring
// (Options.ReloadKeyring) or fails with *MissingKeyError. A rekey therefore
// goes:
//
//  1. seal.AddKey: the key file gains a new active key, old keys stay.
//  2. SetKeyring with that keyring: active_key_id = new id, in one write
//     transaction. From its commit on, every writer of every process seals
//     under the new key or fails; none seals under an old one.
//  3. Reseal until it reports 0.
//  4. Retire: under the write lock, verify no blob is left under an old key
//     and only then drop the old keys from the key file (seal.RetireKeys).

// ErrResealPending is returned by Retire while some blob is still sealed
// under a key other than the vault's active key: run Reseal again.
var ErrResealPending = errors.New("vault: some secrets are still sealed under an older key")

// MissingKeyError reports that the keyring lacks the key the vault records
// as active (a key file older than the vault's last rekey, or the wrong
// one). It names key ids only. errors.Is(err, seal.ErrUnknownKey) holds.
type MissingKeyError struct {
	Active uint32   // the vault's active key id
	Have   []uint32 // the ids the keyring holds
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("vault key does not match this vault: its active key %08x is not in the keyring (it holds %s): use the key file or OMP_VAULT_KEY that holds key %08x; after `omp auth-broker rekey`, a broker keyed by OMP_VAULT_KEY must be restarted with the new key",
		e.Active, seal.FormatIDs(e.Have), e.Active)
}

// Unwrap returns seal.ErrUnknownKey.
func (e *MissingKeyError) Unwrap() error { return seal.ErrUnknownKey }

// ActiveKeyID returns the id of the key this store seals under: the vault's
// active key as of this store's last write transaction or Open.
func (s *Store) ActiveKeyID() uint32 { return s.keyring().ActiveID() }

// SetKeyring switches the store to kr and records kr's active key as the
// vault's active key, in one write transaction (step 2 of a rekey, after
// seal.AddKey). kr must open the vault's canary and hold the key the vault
// recorded as active so far. Other stores on the same vault switch at their
// next write.
func (s *Store) SetKeyring(ctx context.Context, kr *seal.Keyring) error {
	if kr == nil {
		return errors.New("set keyring: no keyring")
	}
	_, err := s.write(ctx, false, false, true, func(ctx context.Context, tx *wtx) (bool, error) {
		canary, err := getMeta[[]byte](ctx, tx, metaCanary)
		if err != nil {
			return false, fmt.Errorf("read canary: %w", err)
		}
		if err := checkCanary(kr, canary); err != nil {
			return false, err
		}
		if id, ok, err := activeKeyID(ctx, tx); err != nil {
			return false, err
		} else if ok && !kr.Has(id) {
			return false, &MissingKeyError{Active: id, Have: kr.IDs()}
		}
		if err := setMeta(ctx, tx, metaActiveKey, int64(kr.ActiveID())); err != nil {
			return false, err
		}
		s.kmu.Lock()
		s.base = kr
		s.kr.Store(kr)
		s.kmu.Unlock()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("set keyring: %w", err)
	}
	return nil
}

// Retire calls retire with the vault's active key id while holding the
// vault's write lock, after verifying that every sealed blob (credential
// columns, cache values, the canary) is under that key; otherwise it returns
// an error wrapping ErrResealPending and does not call retire. Because every
// writer seals under the active key inside the same lock, no blob under an
// older key can appear between the check and retire (step 4 of a rekey:
// retire is seal.RetireKeys on the key file).
func (s *Store) Retire(ctx context.Context, retire func(keep uint32) error) error {
	_, err := s.write(ctx, false, true, true, func(ctx context.Context, tx *wtx) (bool, error) {
		kr := s.keyring()
		n, err := countStale(ctx, tx, kr)
		if err != nil {
			return false, err
		}
		if n > 0 {
			return false, fmt.Errorf("%w: %d left", ErrResealPending, n)
		}
		return false, retire(kr.ActiveID())
	})
	if err != nil {
		return fmt.Errorf("retire old vault keys: %w", err)
	}
	return nil
}

// countStale counts the blobs not sealed under kr's active key.
func countStale(ctx context.Context, tx *wtx, kr *seal.Keyring) (int, error) {
	n := 0
	canary, err := getMeta[[]byte](ctx, tx, metaCanary)
	if err != nil {
		return 0, fmt.Errorf("read canary: %w", err)
	}
	if kr.NeedsReseal(canary) {
		n++
	}
	for _, q := range []string{"SELECT access, refresh, api_key, extra FROM auth_credentials", "SELECT value, x'', x'', x'' FROM cache"} {
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			var b [len(sealedCols)][]byte
			if err := rows.Scan(&b[0], &b[1], &b[2], &b[3]); err != nil {
				rows.Close()
				return 0, err
			}
			for _, blob := range b {
				if kr.NeedsReseal(blob) {
					n++
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// activeKeyID reads the vault's active key id; ok is false when none is
// recorded yet (a vault Open has not stamped).
func activeKeyID(ctx context.Context, q querier) (id uint32, ok bool, err error) {
	v, err := getMeta[int64](ctx, q, metaActiveKey)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read active key id: %w", err)
	case v <= 0 || v > math.MaxUint32:
		return 0, false, fmt.Errorf("vault meta %s is not a key id (%d)", metaActiveKey, v)
	}
	return uint32(v), true, nil
}

// syncKeyring makes the store seal under the vault's active key, inside a
// write transaction. The fast path is one primary-key read.
func (s *Store) syncKeyring(ctx context.Context, tx querier) error {
	id, ok, err := activeKeyID(ctx, tx)
	if err != nil || !ok || id == s.keyring().ActiveID() {
		return err
	}
	s.kmu.Lock()
	defer s.kmu.Unlock()
	base := s.base
	if !base.Has(id) {
		if s.reload == nil {
			return &MissingKeyError{Active: id, Have: base.IDs()}
		}
		if base, err = s.reloadKeyring(ctx, tx); err != nil {
			return err
		}
		if !base.Has(id) {
			return &MissingKeyError{Active: id, Have: base.IDs()}
		}
	}
	kr, err := base.WithActive(id)
	if err != nil {
		return err
	}
	s.base = base
	s.kr.Store(kr)
	s.log.Info("vault: now sealing under the vault's active key", slog.String("key_id", fmt.Sprintf("%08x", id)))
	return nil
}

// reloadKeyring calls Options.ReloadKeyring and checks that the result
// opens the vault's canary. The caller holds kmu.
func (s *Store) reloadKeyring(ctx context.Context, q querier) (*seal.Keyring, error) {
	kr, err := s.reload()
	if err != nil {
		return nil, fmt.Errorf("reload vault keyring: %w", err)
	}
	if kr == nil {
		return nil, errors.New("reload vault keyring: no keyring")
	}
	canary, err := getMeta[[]byte](ctx, q, metaCanary)
	if err != nil {
		return nil, fmt.Errorf("reload vault keyring: read canary: %w", err)
	}
	if err := checkCanary(kr, canary); err != nil {
		return nil, fmt.Errorf("reload vault keyring: %w", err)
	}
	return kr, nil
}

// reloadForRead handles a read that failed with err on blobs: when a blob
// names a key this store does not hold (another process rekeyed the vault)
// and a reload hook is set, it reloads the keyring once and reports true so
// the caller retries. Reads that succeed never get here.
func (s *Store) reloadForRead(ctx context.Context, err error, blobs ...[]byte) bool {
	if s.reload == nil || !errors.Is(err, seal.ErrUnknownKey) {
		return false
	}
	s.kmu.Lock()
	defer s.kmu.Unlock()
	cur := s.keyring()
	missing := false
	for _, b := range blobs {
		if id, err := seal.KeyIDOf(b); err == nil && !cur.Has(id) {
			missing = true
		}
	}
	if !missing {
		return true // a concurrent reload already brought the key
	}
	base, err := s.reloadKeyring(ctx, s.db)
	if err != nil {
		s.log.Warn("vault: cannot reload the keyring for a blob under an unknown key", slog.Any("err", err))
		return false
	}
	// Keep sealing under the current key when the file still holds it
	// (writers re-check the vault's active key anyway); else adopt the
	// vault's recorded one.
	id := cur.ActiveID()
	if !base.Has(id) {
		if v, ok, err := activeKeyID(ctx, s.db); err == nil && ok {
			id = v
		}
	}
	kr, err := base.WithActive(id)
	if err != nil {
		s.log.Warn("vault: reloaded keyring lacks the active key", slog.Any("err", err))
		return false
	}
	s.base = base
	s.kr.Store(kr)
	return true
}

// checkCanary verifies that kr opens the vault's canary.
func checkCanary(kr *seal.Keyring, blob []byte) error {
	pt, err := kr.Open(blob, []byte(canaryAAD))
	if err == nil && string(pt) == canaryText {
		return nil
	}
	id, idErr := seal.KeyIDOf(blob)
	if idErr != nil {
		return fmt.Errorf("vault canary is damaged: %w", idErr)
	}
	if err == nil {
		err = seal.ErrAuth
	}
	return fmt.Errorf("vault key does not match this vault (canary sealed under key %08x; keyring holds %s): %w", id, seal.FormatIDs(kr.IDs()), err)
}
