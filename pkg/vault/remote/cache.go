package remote

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	"github.com/ompgo/omp/pkg/vault/seal"
)

// staleTempAge is how old a leftover `<cache>.*.tmp` must be before a
// write removes it: older than any live write.
const staleTempAge = time.Hour

// Cache is the encrypted broker-snapshot cache (docs/protocol.md, Snapshot), shared
// byte for byte with the reference implementation's clients on one host:
// the snapshot JSON as received from the broker, sealed with
// SHA-256(Token) as the AES-256-GCM key and URL as additional data
// (seal.SealSnapshotCache), so another token or URL cannot read it.
// Freshness is measured from the broker-stamped generatedAt, not from the
// file's time.
type Cache struct {
	// Path is the cache file (config.Dirs.SnapshotCachePath). Required.
	Path string
	// Token is the broker bearer token as resolved; its SHA-256 is the key.
	Token string
	// URL is the broker URL exactly as resolved (a trailing slash
	// included); it is the additional data.
	URL string
	// TTL is the freshness window (OMP_AUTH_BROKER_SNAPSHOT_TTL_MS); zero or
	// negative disables reads and writes.
	TTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives misses and write failures at debug (never a token).
	// Default: discard.
	Logger *slog.Logger
}

// Miss reasons reported by Read.
var (
	// ErrCacheDisabled: TTL ≤ 0.
	ErrCacheDisabled = errors.New("snapshot cache disabled")
	// ErrCacheAbsent: no cache file.
	ErrCacheAbsent = errors.New("no snapshot cache")
	// ErrCacheUnreadable: not a cache file of a known version, or sealed
	// for another token or URL, or tampered.
	ErrCacheUnreadable = errors.New("snapshot cache unreadable (another broker URL or token, or damaged)")
	// ErrCacheInvalid: decrypted but not a snapshot.
	ErrCacheInvalid = errors.New("snapshot cache holds no valid snapshot")
	// ErrCacheStale: generatedAt is older than TTL.
	ErrCacheStale = errors.New("snapshot cache is stale")
)

func (c *Cache) log() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func (c *Cache) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// Read returns the cached snapshot when it is readable with Token and URL
// and fresh. Every miss is an error matching one of the ErrCache* values
// (or an I/O error other than "not found"); the caller then fetches live.
func (c *Cache) Read() (vault.Snapshot, error) {
	if c.TTL <= 0 {
		return vault.Snapshot{}, ErrCacheDisabled
	}
	data, err := os.ReadFile(c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return vault.Snapshot{}, ErrCacheAbsent
	}
	if err != nil {
		return vault.Snapshot{}, fmt.Errorf("read snapshot cache: %w", err)
	}
	snap, err := DecodeCache(data, c.Token, c.URL)
	if err != nil {
		c.log().Debug("auth-broker snapshot cache miss", "path", c.Path, "reason", err.Error())
		return vault.Snapshot{}, err
	}
	if c.now().UnixMilli()-snap.GeneratedAt > c.TTL.Milliseconds() {
		return vault.Snapshot{}, ErrCacheStale
	}
	return snap, nil
}

// DecodeCache opens a cache file's bytes with token and url and decodes
// the snapshot in it, leniently: the plaintext must have
// numeric generation, generatedAt and serverNowMs, an object refresher and
// an array of credentials; unknown keys are ignored. Errors are
// ErrCacheUnreadable or ErrCacheInvalid, naming no value.
func DecodeCache(data []byte, token, url string) (vault.Snapshot, error) {
	pt, err := seal.OpenSnapshotCache(data, token, url)
	if err != nil {
		return vault.Snapshot{}, ErrCacheUnreadable
	}
	snap, err := api.DecodeSnapshot(pt)
	if err != nil {
		return vault.Snapshot{}, fmt.Errorf("%w: %s", ErrCacheInvalid, err.Error())
	}
	return snap, nil
}

// Write stores snapshot (a SnapshotResponse's JSON as received; a stream
// frame's "kind" is dropped) atomically: a 0600 temp file beside the cache,
// created exclusively in a 0700 directory, renamed over it. Temp files
// older than an hour left by killed writers are removed. A no-op when TTL
// ≤ 0.
func (c *Cache) Write(snapshot []byte) error {
	if c.TTL <= 0 {
		return nil
	}
	pt, err := cachePlaintext(snapshot)
	if err != nil {
		return err
	}
	data, err := seal.SealSnapshotCache(pt, c.Token, c.URL)
	if err != nil {
		return err
	}
	dir := filepath.Dir(c.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write snapshot cache: %w", err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := c.Path + "." + strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write snapshot cache: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o600) // in case the umask or an ACL widened it
	}
	if err == nil {
		err = os.Rename(tmp, c.Path)
	}
	if err != nil {
		return fmt.Errorf("write snapshot cache: %w", err)
	}
	ok = true
	c.sweep(dir)
	return nil
}

// sweep removes `<cache>.*.tmp` files older than staleTempAge.
func (c *Cache) sweep(dir string) {
	prefix := filepath.Base(c.Path) + "."
	names, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-staleTempAge)
	for _, d := range names {
		n := d.Name()
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, ".tmp") {
			continue
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, n))
		}
	}
}

// cachePlaintext is snapshot as compact JSON without a stream frame's
// "kind" key (the cached plaintext never carries it). Other keys and
// values are kept as received (OAuth extras, `source`, `blocks`).
func cachePlaintext(snapshot []byte) ([]byte, error) {
	if bytes.Contains(snapshot, []byte(`"kind"`)) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(snapshot, &m); err != nil || m == nil {
			return nil, errors.New("snapshot cache: the snapshot is not a JSON object")
		}
		if _, ok := m["kind"]; ok {
			delete(m, "kind")
			// Compact, values byte for byte (no HTML escaping); the key
			// order changes, which no reader depends on.
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(m); err != nil {
				return nil, err
			}
			return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, snapshot); err != nil {
		return nil, fmt.Errorf("snapshot cache: the snapshot is not JSON: %w", err)
	}
	return buf.Bytes(), nil
}
