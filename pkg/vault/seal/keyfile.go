package seal

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Key file format (<config-dir>/vault.key), one key per line:
//
//	# comment
//	v1 <key id, 8 hex digits> <standard base64 of the 32-byte secret> [active]
//
// Exactly one line carries "active". Blank lines and lines starting with '#'
// are ignored. The id must equal DeriveKeyID(secret), which catches a
// truncated or mistyped copy. The file must not be readable by group or
// others: LoadOrCreateKeyFile refuses such a file rather than warn, because
// the key is the only thing protecting every token in the vault.

const keyFileHeader = "# omp vault keyring: anyone holding this file can read the vault. Keep it 0600.\n"

// ErrKeyFileMode is returned for a key file accessible by group or others.
var ErrKeyFileMode = errors.New("vault key file is accessible by group or others")

// ParseKeyFile parses key-file text into a keyring. Errors name the line
// number, never its content.
func ParseKeyFile(text []byte) (*Keyring, error) {
	var active *Key
	var others []Key
	sc := bufio.NewScanner(bytes.NewReader(text))
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Fields(s)
		if len(f) < 3 || len(f) > 4 || f[0] != "v1" || (len(f) == 4 && f[3] != "active") {
			return nil, fmt.Errorf("vault key file: line %d: want \"v1 <id> <base64 key> [active]\"", line)
		}
		id, err := strconv.ParseUint(f[1], 16, 32)
		if err != nil || len(f[1]) != 8 {
			return nil, fmt.Errorf("vault key file: line %d: key id must be 8 hex digits", line)
		}
		secret, err := decodeSecret(f[2])
		if err != nil {
			return nil, fmt.Errorf("vault key file: line %d: %w", line, err)
		}
		k := Key{ID: uint32(id), Secret: secret}
		if DeriveKeyID(secret) != k.ID {
			return nil, fmt.Errorf("vault key file: line %d: key id %08x does not match its key (corrupted copy?)", line, k.ID)
		}
		if len(f) == 4 {
			if active != nil {
				return nil, fmt.Errorf("vault key file: line %d: more than one active key", line)
			}
			active = &k
			continue
		}
		others = append(others, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vault key file: %w", err)
	}
	if active == nil {
		if len(others) == 0 {
			return nil, errors.New("vault key file: no key")
		}
		return nil, errors.New("vault key file: no key is marked active")
	}
	return NewKeyring(*active, others...)
}

// decodeSecret decodes a base64 (standard or URL alphabet, padded or not)
// 32-byte secret.
func decodeSecret(s string) ([KeySize]byte, error) {
	var out [KeySize]byte
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil && len(b) == KeySize {
			copy(out[:], b)
			return out, nil
		}
	}
	return out, errors.New("key must be base64 of exactly 32 bytes")
}

// MarshalKeyFile renders kr in the key-file format, active key first.
func MarshalKeyFile(kr *Keyring) []byte {
	var b bytes.Buffer
	b.WriteString(keyFileHeader)
	for i, k := range kr.Keys() {
		fmt.Fprintf(&b, "v1 %08x %s", k.ID, base64.StdEncoding.EncodeToString(k.Secret[:]))
		if i == 0 {
			b.WriteString(" active")
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// KeyringFromEnv builds a keyring from the value of OMP_VAULT_KEY, for
// operators who keep the key in a secret manager: either the base64 of one
// 32-byte key, or the full key-file text.
func KeyringFromEnv(value string) (*Keyring, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return nil, errors.New("OMP_VAULT_KEY is empty")
	}
	if strings.HasPrefix(v, "v1 ") || strings.HasPrefix(v, "#") || strings.Contains(v, "\n") {
		kr, err := ParseKeyFile([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("OMP_VAULT_KEY: %w", err)
		}
		return kr, nil
	}
	secret, err := decodeSecret(v)
	if err != nil {
		return nil, fmt.Errorf("OMP_VAULT_KEY: %w (or the key-file text)", err)
	}
	return NewKeyring(KeyFromSecret(secret))
}

// LoadKeyFile reads the key file at path, refusing a file that group or
// others can access.
func LoadKeyFile(path string) (*Keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open vault key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open vault key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("vault key file %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; run: chmod 600 %s", ErrKeyFileMode, path, st.Mode().Perm(), path)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("read vault key file: %w", err)
	}
	kr, err := ParseKeyFile(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kr, nil
}

// LoadOrCreateKeyFile loads the key file at path, or creates it with one new
// active key (file 0600, parent directories 0700) when it does not exist.
// created reports whether a new key was made. Two processes racing to create
// the file end up with the same key: the loser loads the winner's file.
func LoadOrCreateKeyFile(path string) (kr *Keyring, created bool, err error) {
	kr, err = LoadKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return kr, false, err
	}
	kr, err = NewKeyring(NewKey())
	if err != nil {
		return nil, false, err
	}
	switch err := writeKeyFile(path, MarshalKeyFile(kr), true); {
	case errors.Is(err, fs.ErrExist):
		kr, err = LoadKeyFile(path)
		return kr, false, err
	case err != nil:
		return nil, false, err
	}
	return kr, true, nil
}

// AddKey makes a new key active in the key file at path, keeping the old keys
// so existing blobs still open (step one of a rekey; then Store.Reseal, then
// RetireKeys).
func AddKey(path string) (*Keyring, error) {
	old, err := LoadKeyFile(path)
	if err != nil {
		return nil, err
	}
	k := NewKey()
	for old.Has(k.ID) { // a derived-id collision is ~2^-32; just draw again
		k = NewKey()
	}
	kr, err := NewKeyring(k, old.Keys()...)
	if err != nil {
		return nil, err
	}
	if err := writeKeyFile(path, MarshalKeyFile(kr), false); err != nil {
		return nil, err
	}
	return kr, nil
}

// RetireKeys drops every key but keep from the key file at path and makes
// keep active. Call it only after re-sealing finished (Store.Reseal reports
// 0): blobs sealed under a dropped key can no longer be opened.
func RetireKeys(path string, keep uint32) (*Keyring, error) {
	old, err := LoadKeyFile(path)
	if err != nil {
		return nil, err
	}
	for _, k := range old.Keys() {
		if k.ID != keep {
			continue
		}
		kr, err := NewKeyring(k)
		if err != nil {
			return nil, err
		}
		if err := writeKeyFile(path, MarshalKeyFile(kr), false); err != nil {
			return nil, err
		}
		return kr, nil
	}
	return nil, fmt.Errorf("vault key file %s: no key %08x to keep", path, keep)
}

// writeKeyFile writes data atomically: a 0600 temp file in the same 0700
// directory, fsync, then rename (replace) or link (exclusive create, fails
// with fs.ErrExist), then fsync of the directory.
func writeKeyFile(path string, data []byte, exclusive bool) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create vault key directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".vault.key.tmp-*")
	if err != nil {
		return fmt.Errorf("write vault key file: %w", err)
	}
	name := tmp.Name()
	defer func() {
		tmp.Close()
		os.Remove(name)
	}()
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		return fmt.Errorf("write vault key file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write vault key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write vault key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write vault key file: %w", err)
	}
	if exclusive {
		if err := os.Link(name, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return err
			}
			return fmt.Errorf("write vault key file: %w", err)
		}
	} else if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("write vault key file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: make the rename durable
		d.Close()
	}
	return nil
}
