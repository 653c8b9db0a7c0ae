package config

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// InstallIDFile is the per-install UUID under the config root, the
// reference's ~/.omp/install-id.
const InstallIDFile = "install-id"

// EnvAppName names the application label of observed usage.
const EnvAppName = "OMP_APP_NAME"

var uuidRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
})

// InstallIDPath is <config dir>/install-id, shared with the reference.
func (d Dirs) InstallIDPath() string { return filepath.Join(d.ConfigDir, InstallIDFile) }

// InstallID returns the install's UUID from path, creating it (0600, with
// O_EXCL so concurrent first calls agree: the loser re-reads the winner's)
// when it is absent or not a UUID, as the reference does.
func InstallID(path string) (string, error) {
	invalid := false
	if b, err := os.ReadFile(path); err == nil {
		if s := strings.TrimSpace(string(b)); uuidRE().MatchString(s) {
			return s, nil
		}
		invalid = true
	}
	id, err := newUUID()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if invalid {
		_ = os.Remove(path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if b, rerr := os.ReadFile(path); rerr == nil {
			if s := strings.TrimSpace(string(b)); uuidRE().MatchString(s) {
				return s, nil
			}
		}
		return "", fmt.Errorf("install id %s: %w", path, err)
	}
	if err != nil {
		return "", err
	}
	_, werr := f.WriteString(id + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return id, werr
}

// newUUID returns a random (version 4) UUID.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
}

// AppName is OMP_APP_NAME trimmed, else "omp".
func AppName(env *Env) string {
	if v := strings.TrimSpace(env.Get(EnvAppName)); v != "" {
		return v
	}
	return "omp"
}

// Hostname is the host name with characters outside printable ASCII
// replaced by '?', as the reference's clients send it.
func Hostname() string {
	h, _ := os.Hostname()
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, h)
}
