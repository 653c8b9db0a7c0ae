package sqlite

import (
	"errors"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ompgo/omp/pkg/vault"
)

// Storage failures are classified by SQLite result code (never by message)
// into *vault.Error with code EUNAVAILABLE: the vault works again once the
// disk has room or is writable, so callers answer "try later", not
// "internal error". Message is safe for clients; Err keeps the cause.
const (
	msgStorageFull = "vault storage is full"
	msgReadOnly    = "vault is read-only"
	msgStorageIO   = "vault storage failed (I/O error)"
)

// storageError returns err classified as a storage failure, or err itself.
// An error that already carries a *vault.Error is returned unchanged.
func storageError(err error) error {
	if err == nil {
		return nil
	}
	var ve *vault.Error
	if errors.As(err, &ve) {
		return err
	}
	if msg := storageMessage(err); msg != "" {
		return &vault.Error{Code: vault.EUNAVAILABLE, Message: msg, Err: err}
	}
	return err
}

// storageMessage names the storage failure err is, or "" if none.
func storageMessage(err error) string {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // primary code of an extended result code
		case sqlite3.SQLITE_FULL:
			return msgStorageFull
		case sqlite3.SQLITE_READONLY:
			return msgReadOnly
		case sqlite3.SQLITE_IOERR:
			return msgStorageIO
		}
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return msgStorageFull
	case errors.Is(err, syscall.EROFS):
		return msgReadOnly
	}
	return ""
}

// isBusy reports whether err is SQLITE_BUSY (another connection holds the
// lock past busy_timeout).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}
