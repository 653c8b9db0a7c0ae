package config

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// tokenBytes is the entropy of a bearer token.
const tokenBytes = 32

// NewToken returns a fresh bearer token: 32 random bytes, base64url
// without padding (43 characters).
func NewToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ReadToken reads a token file: the content trimmed of whitespace. A
// missing or blank file yields "" and no error; any other read failure is
// returned (the caller decides whether to warn).
func ReadToken(path string) (string, error) {
	data, err := readLimited(path, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// EnsureToken returns the token stored at path, creating one when the file
// is missing or blank (created reports that). The file is created
// atomically with mode 0600 (never visible with a wider mode or partial
// content) in a parent created with mode 0700. When two processes race,
// both return the token that ends up on disk.
func EnsureToken(path string) (token string, created bool, err error) {
	existing, err := ReadToken(path)
	if err != nil {
		return "", false, err
	}
	if existing != "" {
		return existing, false, nil
	}
	token, err = NewToken()
	if err != nil {
		return "", false, err
	}
	tmp, err := writeTemp(path, token)
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp) //nolint:errcheck // gone after a successful link or rename
	// Link publishes the file only if nobody created it meanwhile.
	if err := os.Link(tmp, path); err == nil {
		return token, true, nil
	} else if errors.Is(err, fs.ErrExist) {
		if other, rerr := ReadToken(path); rerr != nil {
			return "", false, rerr
		} else if other != "" {
			return other, false, nil
		}
	}
	// Blank existing file, or a filesystem without hard links.
	if err := os.Rename(tmp, path); err != nil {
		return "", false, fmt.Errorf("write token file: %w", err)
	}
	return token, true, nil
}

// RegenerateToken writes a fresh token to path (atomically, mode 0600,
// parent 0700), replacing any existing one, and returns it.
func RegenerateToken(path string) (string, error) {
	token, err := NewToken()
	if err != nil {
		return "", err
	}
	tmp, err := writeTemp(path, token)
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp) //nolint:errcheck
		return "", fmt.Errorf("write token file: %w", err)
	}
	return token, nil
}

// writeTemp creates the parent directory (0700) and writes content, with no
// trailing newline, to an exclusively created 0600 temp file next to path.
func writeTemp(path, content string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create token directory: %w", err)
	}
	suffix := make([]byte, 8)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("generate temp name: %w", err)
	}
	tmp := path + "." + strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(suffix) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write token file: %w", err)
	}
	_, werr := f.WriteString(content)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o600) // umask can only narrow, but be explicit
	}
	if werr != nil {
		os.Remove(tmp) //nolint:errcheck
		return "", fmt.Errorf("write token file: %w", werr)
	}
	return tmp, nil
}

// CheckPerms returns one warning per existing token file or parent
// directory that is group- or world-accessible.
// Missing paths produce no warning; on Windows it always returns nil.
// Warnings name paths and modes only, never content.
func CheckPerms(path string) []string {
	if runtime.GOOS == "windows" {
		return nil
	}
	var out []string
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		out = append(out, fmt.Sprintf("token file %s is accessible by group or others (mode %04o); run: chmod 600 %s",
			path, st.Mode().Perm(), path))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err == nil && st.IsDir() && st.Mode().Perm()&0o077 != 0 {
		out = append(out, fmt.Sprintf("token directory %s is accessible by group or others (mode %04o); run: chmod 700 %s",
			dir, st.Mode().Perm(), dir))
	}
	return out
}
