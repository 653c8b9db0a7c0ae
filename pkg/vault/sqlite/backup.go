package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ompgo/omp/pkg/vault/seal"
)

// Backup and restore of a vault file (`omp auth-broker backup|restore`).
//
// A backup is made with VACUUM INTO from a read-only connection: it reads
// one WAL snapshot, so it is a consistent copy while a broker keeps writing
// (its writers are not blocked), and it is still sealed — the secrets stay
// ciphertext, so the backup is only as useful as the key kept beside it.
// The copy is written to a 0600 temporary file next to the destination,
// synced, verified with the key (integrity check, canary, every sealed
// column opened) and only then renamed over the destination.
//
// Restore verifies the backup the same way, copies it next to the vault,
// keeps the vault it replaces as <vault>.pre-restore-<time> and renames the
// copy into place: the vault path holds either the old or the new vault,
// never a mix. It refuses with ErrVaultInUse (as AdoptLegacy does) while a
// broker holds the vault (HoldVault).

// BackupInfo describes a verified vault file.
type BackupInfo struct {
	Path        string `json:"path"`
	Bytes       int64  `json:"bytes"`
	VaultID     string `json:"vaultId"`
	Generation  int64  `json:"generation"`
	Credentials int    `json:"credentials"` // every row, active and disabled; all opened with the key
	Active      int    `json:"active"`
	CacheRows   int    `json:"cacheRows"`
	KeyID       string `json:"keyId"` // the vault's active key id, hex
}

// Backup writes a consistent, sealed copy of the vault at src to dst
// (created 0600; an existing dst is replaced atomically) and verifies it
// with kr. src is only read.
func Backup(ctx context.Context, src, dst string, kr *seal.Keyring) (BackupInfo, error) {
	if kr == nil {
		return BackupInfo{}, errors.New("backup vault: no keyring")
	}
	if _, err := os.Stat(src); err != nil {
		return BackupInfo{}, fmt.Errorf("backup vault: %w", err)
	}
	info, err := copyVerified(ctx, src, dst, kr, "")
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup vault %s to %s: %w", src, dst, err)
	}
	return info, nil
}

// RestoreInfo describes a restore.
type RestoreInfo struct {
	BackupInfo
	// Previous is where the replaced vault was kept ("" when there was none).
	Previous string `json:"previous,omitempty"`
}

// Restore replaces the vault at dst with the backup at src after verifying
// that kr opens every sealed column of the backup. The vault being replaced
// is kept as dst.pre-restore-<UTC time>. It fails with ErrVaultInUse while
// a broker holds dst (HoldVault); nothing is changed then.
func Restore(ctx context.Context, src, dst string, kr *seal.Keyring) (RestoreInfo, error) {
	if kr == nil {
		return RestoreInfo{}, errors.New("restore vault: no keyring")
	}
	wrap := func(err error) error { return fmt.Errorf("restore vault %s from %s: %w", dst, src, err) }
	abs, err := filepath.Abs(dst)
	if err != nil {
		return RestoreInfo{}, wrap(err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return RestoreInfo{}, wrap(err)
	}
	hold, err := holdVault(abs, roleRestore)
	if err != nil {
		return RestoreInfo{}, wrap(err)
	}
	defer hold.Release()

	// The new vault, verified, beside the old one.
	var res RestoreInfo
	res.BackupInfo, err = copyVerified(ctx, src, abs, kr, "restore")
	if err != nil {
		return RestoreInfo{}, wrap(err)
	}
	staged := res.Path
	defer os.Remove(staged) // after a successful rename there is nothing left to remove

	if _, err := os.Stat(abs); err == nil {
		// Keep the replaced vault (whatever its WAL held) and fold its WAL
		// into the file, so no stale -wal or -shm lies next to the new vault.
		prev := abs + ".pre-restore-" + time.Now().UTC().Format("20060102T150405Z")
		// An empty 0600 file first: VACUUM INTO would create it 0644.
		f, err := os.OpenFile(prev, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return RestoreInfo{}, wrap(err)
		}
		f.Close()
		if err := vacuumInto(ctx, abs, prev); err != nil {
			os.Remove(prev)
			return RestoreInfo{}, wrap(fmt.Errorf("keep the current vault as %s (move a damaged vault aside by hand, then restore): %w", prev, err))
		}
		if err := syncFile(prev); err != nil {
			return RestoreInfo{}, wrap(err)
		}
		res.Previous = prev
		if err := checkpoint(ctx, abs); err != nil {
			return RestoreInfo{}, wrap(err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return RestoreInfo{}, wrap(err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(abs + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return RestoreInfo{}, wrap(err)
		}
	}
	// Run as root on a service's state directory (systemd DynamicUser, a
	// container volume), the new files must stay the service's.
	for _, p := range []string{staged, res.Previous, abs + ".lock"} {
		if err := chownLikeDir(p); err != nil {
			return RestoreInfo{}, wrap(err)
		}
	}
	if err := os.Rename(staged, abs); err != nil {
		return RestoreInfo{}, wrap(err)
	}
	syncDir(filepath.Dir(abs))
	res.Path = abs
	return res, nil
}

// Verify checks the vault file at path without changing it: SQLite's
// integrity check, a schema this build knows, the canary and every sealed
// column (credentials and cache) opened with kr.
func Verify(ctx context.Context, path string, kr *seal.Keyring) (BackupInfo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return BackupInfo{}, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return BackupInfo{}, err
	}
	db, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return BackupInfo{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return BackupInfo{}, err
	}
	defer conn.Close()
	// One read transaction: every count below comes from one snapshot.
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return BackupInfo{}, err
	}
	defer tx.Rollback()

	var check string
	if err := tx.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil {
		return BackupInfo{}, fmt.Errorf("not a vault: %w", err)
	}
	if check != "ok" {
		return BackupInfo{}, fmt.Errorf("integrity check failed: %s", check)
	}
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return BackupInfo{}, err
	}
	if want := schemaVersion(migrations); version == 0 || version > want {
		return BackupInfo{}, fmt.Errorf("not a vault of this version (schema %d, this build knows 1..%d)", version, want)
	}
	canary, err := getMeta[[]byte](ctx, tx, metaCanary)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("read canary: %w", err)
	}
	if err := checkCanary(kr, canary); err != nil {
		return BackupInfo{}, err
	}
	info := BackupInfo{Path: abs, Bytes: fi.Size()}
	if info.VaultID, err = getMeta[string](ctx, tx, metaVaultID); err != nil {
		return BackupInfo{}, fmt.Errorf("read vault id: %w", err)
	}
	if info.Generation, err = getMeta[int64](ctx, tx, metaGeneration); err != nil {
		return BackupInfo{}, fmt.Errorf("read generation: %w", err)
	}
	if id, ok, err := activeKeyID(ctx, tx); err != nil {
		return BackupInfo{}, err
	} else if ok {
		info.KeyID = fmt.Sprintf("%08x", id)
	}

	rows, err := tx.QueryContext(ctx, "SELECT "+credCols+" FROM auth_credentials ORDER BY id")
	if err != nil {
		return BackupInfo{}, fmt.Errorf("read credentials: %w", err)
	}
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			rows.Close()
			return BackupInfo{}, fmt.Errorf("read credentials: %w", err)
		}
		// A row whose plaintext does not parse is skipped by reads, as in
		// the reference; a row the key cannot open fails the check.
		if _, err := decode(kr, r); err != nil && !errors.Is(err, errUnparsable) {
			rows.Close()
			return BackupInfo{}, err
		}
		info.Credentials++
		if !r.cause.Valid {
			info.Active++
		}
	}
	if err := rows.Close(); err != nil {
		return BackupInfo{}, err
	}
	if err := rows.Err(); err != nil {
		return BackupInfo{}, fmt.Errorf("read credentials: %w", err)
	}

	rows, err = tx.QueryContext(ctx, "SELECT key, value FROM cache")
	if err != nil {
		return BackupInfo{}, fmt.Errorf("read cache: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var blob []byte
		if err := rows.Scan(&key, &blob); err != nil {
			return BackupInfo{}, fmt.Errorf("read cache: %w", err)
		}
		if _, err := kr.Open(blob, []byte("cache/"+key)); err != nil {
			return BackupInfo{}, &BlobError{Table: "cache", Row: strconv.Quote(key), Column: "value", Err: err}
		}
		info.CacheRows++
	}
	if err := rows.Err(); err != nil {
		return BackupInfo{}, fmt.Errorf("read cache: %w", err)
	}
	return info, nil
}

// copyVerified copies the vault src into a fresh 0600 file next to dst
// with VACUUM INTO, syncs it and verifies it with kr. With keep == "" the
// copy is renamed over dst; otherwise it stays at its temporary path
// (returned in BackupInfo.Path) for the caller to move. On error nothing
// is left behind.
func copyVerified(ctx context.Context, src, dst string, kr *seal.Keyring, keep string) (BackupInfo, error) {
	absSrc, err := filepath.Abs(src)
	if err != nil {
		return BackupInfo{}, err
	}
	absDst, err := filepath.Abs(dst)
	if err != nil {
		return BackupInfo{}, err
	}
	if absSrc == absDst && keep == "" {
		return BackupInfo{}, errors.New("the backup file is the vault itself")
	}
	dir := filepath.Dir(absDst)
	f, err := os.CreateTemp(dir, "."+filepath.Base(absDst)+".tmp-*")
	if err != nil {
		return BackupInfo{}, err
	}
	tmp := f.Name()
	f.Close()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600; VACUUM INTO fills an empty file and
	// keeps its mode, so the copy is never readable by others.
	if err := vacuumInto(ctx, absSrc, tmp); err != nil {
		return BackupInfo{}, err
	}
	if err := syncFile(tmp); err != nil {
		return BackupInfo{}, err
	}
	info, err := Verify(ctx, tmp, kr)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("verify the copy: %w", err)
	}
	if keep == "" {
		if err := os.Rename(tmp, absDst); err != nil {
			return BackupInfo{}, err
		}
		syncDir(dir)
		info.Path = absDst
	}
	ok = true
	return info, nil
}

// vacuumInto writes a compacted copy of the database src into dst, which
// must be absent or empty, from one read snapshot of src. The copy is a
// self-contained rollback-journal database (no -wal to carry along).
func vacuumInto(ctx context.Context, src, dst string) error {
	db, err := sql.Open("sqlite", dsn(src, true))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := db.Close(); err != nil {
		return err
	}
	return setJournalDelete(ctx, dst)
}

// setJournalDelete makes the database file at path a rollback-journal
// database, so it is complete on its own: a copy of a WAL vault keeps the
// WAL flag in its header, and a reader would then want a -shm beside it.
func setJournalDelete(ctx context.Context, path string) error {
	u := url.URL{Scheme: "file", OmitHost: true, Path: path}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=DELETE").Scan(&mode); err != nil {
		return fmt.Errorf("set journal mode of %s: %w", path, err)
	}
	return db.Close()
}

// checkpoint folds the WAL of the vault at path into the database file, so
// the -wal and -shm files can be removed.
func checkpoint(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return err
	}
	defer db.Close()
	var busy, logFrames, done int
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if busy != 0 {
		return fmt.Errorf("checkpoint %s: %w (another process has it open)", path, ErrVaultInUse)
	}
	return db.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
