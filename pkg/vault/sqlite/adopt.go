package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
)

// ErrVaultInUse is AdoptLegacy's error when another process holds the
// legacy vault open (an older broker still running), so it cannot be moved.
var ErrVaultInUse = errors.New("the vault is in use by another process (stop the running broker and retry)")

// adoptHook, when set by a test, runs at each stage of AdoptLegacy; a
// non-nil error stops the move there, as a crash would.
var adoptHook func(stage string) error

// AdoptLegacy moves an omp-go vault left at legacy — the reference's
// agent.db path, where earlier omp-go versions kept the sealed vault — to
// path (vault.db beside it), once. It reports whether
// it moved one.
//
// Nothing happens when path already exists, when legacy does not, or when
// legacy is not an omp-go vault: a reference agent.db (or anything else
// without the Go vault's schema and meta canary) is at most read, and
// never modified, moved or migrated.
//
// What the WAL holds is carried over by folding it into the database file
// first (a TRUNCATE checkpoint and a switch to the rollback journal, which
// SQLite only allows while no other connection has the database open —
// ErrVaultInUse otherwise); the -wal and -shm files are then gone and the
// next Open turns WAL back on at the new path. The move itself is atomic
// for the new name (link(2), which never replaces a file created
// meanwhile, then unlink of the old name; a plain rename where hard links
// are unsupported), so an interrupted move leaves the vault at one of the
// two paths, or both names on the one file, and the next call finishes it.
func AdoptLegacy(ctx context.Context, legacy, path string) (moved bool, err error) {
	if st, err := os.Lstat(path); err == nil {
		// A move interrupted between its link and its unlink left both
		// names on one file: finish it. Any other file at legacy is not
		// ours to touch.
		if lst, err := os.Lstat(legacy); err == nil && os.SameFile(st, lst) {
			if err := os.Remove(legacy); err != nil {
				return false, fmt.Errorf("move vault %s to %s: remove the old name: %w", legacy, path, err)
			}
			syncDir(filepath.Dir(legacy))
			return true, nil
		}
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, nil // unreadable: Open reports it
	}
	if _, err := os.Lstat(legacy); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	ours, err := isGoVault(ctx, legacy)
	if err != nil {
		return false, fmt.Errorf("inspect %s: %w", legacy, err)
	}
	if !ours {
		return false, nil
	}
	if err := stage("inspected"); err != nil {
		return false, err
	}
	if err := foldWAL(ctx, legacy); err != nil {
		return false, fmt.Errorf("move vault %s to %s: %w", legacy, path, err)
	}
	if err := stage("folded"); err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("move vault %s to %s: %w", legacy, path, err)
	}
	// rename(2) would replace a vault.db created since the check above;
	// link(2) refuses to, portably, and is as atomic for the new name.
	switch err := os.Link(legacy, path); {
	case errors.Is(err, fs.ErrExist):
		return false, nil // created meanwhile: never clobbered
	case err != nil:
		// No hard links here (some network file systems): a plain rename,
		// atomic too, after the existence check above.
		if err := os.Rename(legacy, path); err != nil {
			return false, fmt.Errorf("move vault %s to %s: %w", legacy, path, err)
		}
	default:
		if err := stage("linked"); err != nil {
			return false, err
		}
		if err := os.Remove(legacy); err != nil {
			return false, fmt.Errorf("move vault %s to %s: remove the old name: %w", legacy, path, err)
		}
	}
	syncDir(filepath.Dir(path))
	if filepath.Dir(legacy) != filepath.Dir(path) {
		syncDir(filepath.Dir(legacy))
	}
	return true, nil
}

func stage(name string) error {
	if adoptHook != nil {
		return adoptHook(name)
	}
	return nil
}

// isGoVault reports whether the database at path carries the Go vault's
// schema (a user_version and the meta canary), opening it read only.
//
// Without a -wal beside it the file alone is the database, and its header
// already tells: a reference agent.db has no user_version, ours always
// has one. Such a file is then not opened by SQLite at all — a read-only
// connection to a WAL database would leave -wal and -shm files beside it.
func isGoVault(ctx context.Context, path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	if _, err := os.Lstat(abs + "-wal"); errors.Is(err, fs.ErrNotExist) {
		f, err := os.Open(abs)
		if err != nil {
			return false, err
		}
		var hdr [100]byte
		n, _ := io.ReadFull(f, hdr[:])
		f.Close()
		if n < len(hdr) || string(hdr[:16]) != "SQLite format 3\x00" || binary.BigEndian.Uint32(hdr[60:64]) == 0 {
			return false, nil
		}
	}
	db, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return false, err
	}
	defer db.Close()
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return false, err
	}
	if v == 0 {
		return false, nil
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'").Scan(&n); err != nil || n == 0 {
		return false, err
	}
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM meta WHERE key = ?", metaCanary).Scan(&n); err != nil {
		return false, err
	}
	return n == 1, nil
}

// foldWAL checkpoints the WAL of the (Go) vault at path into the database
// file and switches it to the rollback journal, so the file alone holds
// every committed write. It fails with ErrVaultInUse while another
// connection has the database open.
func foldWAL(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: abs}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyTimeoutMs)+")")
	u.RawQuery = q.Encode()
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var busy, logFrames, done int
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
		if isBusy(err) {
			return ErrVaultInUse
		}
		return fmt.Errorf("checkpoint: %w", err)
	}
	if busy != 0 {
		return ErrVaultInUse
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=DELETE").Scan(&mode); err != nil {
		if isBusy(err) {
			return ErrVaultInUse
		}
		return fmt.Errorf("leave WAL mode: %w", err)
	}
	if mode != "delete" {
		return ErrVaultInUse
	}
	if err := db.Close(); err != nil {
		return err
	}
	for _, side := range []string{abs + "-wal", abs + "-shm"} {
		if err := os.Remove(side); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// syncDir makes a rename in dir durable; best effort (not every platform
// can fsync a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
