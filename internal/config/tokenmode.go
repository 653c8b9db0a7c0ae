package config

import (
	"fmt"
	"io/fs"
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
