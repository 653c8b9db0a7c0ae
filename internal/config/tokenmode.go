package config

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
)

// SecureTokenFile makes the token file at path private: a file readable or
// writable by group or others is changed to mode 0600. It returns the mode
// the file has afterwards and, when it changed it, the mode it had before
// (0 when it was already private). On Windows file modes do not protect the
// token, and it only reports the mode.
func SecureTokenFile(path string) (mode, was fs.FileMode, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("token file %s: %w", path, err)
	}
	mode = st.Mode().Perm()
	if runtime.GOOS == "windows" || mode&0o077 == 0 {
		return mode, 0, nil
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return mode, 0, fmt.Errorf("token file %s has mode %04o and could not be made private: %w", path, mode, err)
	}
	st, err = os.Stat(path)
	if err != nil {
		return 0, mode, fmt.Errorf("token file %s: %w", path, err)
	}
	return st.Mode().Perm(), mode, nil
}

// SecureTokenFileLogged is SecureTokenFile for a daemon's start: it warns
// on log when it had to change the mode or could not check it, and returns
// the file's mode as the start-up line shows it ("0600"; "unknown" when it
// cannot be read). service names the daemon in the warnings.
func SecureTokenFileLogged(log *slog.Logger, service, path string) string {
	mode, was, err := SecureTokenFile(path)
	if was != 0 {
		log.Warn(service+" bearer token file was readable by group or others; changed to mode 0600",
			"path", path, "was", fmt.Sprintf("%04o", was))
	}
	if err != nil {
		log.Warn(service+" bearer token file mode not checked", "path", path, "error", err.Error())
		if mode == 0 {
			return "unknown"
		}
	}
	return fmt.Sprintf("%04o", mode)
}
