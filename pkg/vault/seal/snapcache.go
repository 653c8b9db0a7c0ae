package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
)

// The broker-snapshot cache file format, shared with the
// reference implementation on one host, so fixed by it rather than by this
// package's envelope:
//
//	offset  0  "OMPS"
//	offset  4  version byte (0x02; 0x01 from 15.x clients, read only)
//	offset  5  12-byte random nonce
//	offset 17  AES-256-GCM ciphertext, 16-byte tag appended
//
// key = SHA-256(bearer token); additional data = "OMPS" || 0x02 || broker
// URL for version 2, the URL alone for version 1.
const (
	SnapshotCacheMagic     = "OMPS"
	SnapshotCacheVersion   = 0x02 // the only version written
	SnapshotCacheVersionV1 = 0x01 // read only
	snapCacheHeader        = len(SnapshotCacheMagic) + 1 + NonceSize
)

// SealSnapshotCache returns the version 2 cache file for plaintext (the
// snapshot's JSON), readable only with token and url exactly as given.
func SealSnapshotCache(plaintext []byte, token, url string) ([]byte, error) {
	aead, err := snapCacheAEAD(token)
	if err != nil {
		return nil, err
	}
	out := make([]byte, snapCacheHeader, snapCacheHeader+len(plaintext)+TagSize)
	copy(out, SnapshotCacheMagic)
	out[4] = SnapshotCacheVersion
	nonce := out[5:snapCacheHeader]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	return aead.Seal(out, nonce, plaintext, snapCacheAAD(SnapshotCacheVersion, url)), nil
}

// OpenSnapshotCache returns the plaintext of a cache file of version 1 or
// 2. ErrMalformed: too short, wrong magic or unknown version; ErrAuth: the
// token or the URL differ, or the bytes were changed.
func OpenSnapshotCache(data []byte, token, url string) ([]byte, error) {
	if len(data) <= snapCacheHeader || string(data[:4]) != SnapshotCacheMagic {
		return nil, ErrMalformed
	}
	v := data[4]
	if v != SnapshotCacheVersion && v != SnapshotCacheVersionV1 {
		return nil, fmt.Errorf("%w: snapshot cache version %d", ErrMalformed, v)
	}
	if len(data) < snapCacheHeader+TagSize {
		return nil, ErrMalformed
	}
	aead, err := snapCacheAEAD(token)
	if err != nil {
		return nil, err
	}
	pt, err := aead.Open(nil, data[5:snapCacheHeader], data[snapCacheHeader:], snapCacheAAD(v, url))
	if err != nil {
		return nil, ErrAuth
	}
	return pt, nil
}

func snapCacheAEAD(token string) (cipher.AEAD, error) {
	key := sha256.Sum256([]byte(token))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return cipher.NewGCM(block)
}

func snapCacheAAD(version byte, url string) []byte {
	if version == SnapshotCacheVersionV1 {
		return []byte(url)
	}
	aad := make([]byte, 0, 5+len(url))
	aad = append(aad, SnapshotCacheMagic...)
	aad = append(aad, version)
	return append(aad, url...)
}
