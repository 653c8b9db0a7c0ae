// Package seal is the vault's at-rest encryption: an AES-256-GCM envelope
// with a versioned header (version byte, key id, random nonce), caller
// supplied additional data that binds a ciphertext to its place (row and
// column), and a keyring so keys rotate without downtime.
//
// It is the only package that touches crypto/cipher for vault secrets.
// Errors are typed (ErrMalformed, ErrUnknownKey, ErrAuth) and never contain
// plaintext or key material.
//
// Envelope layout (all integers big endian):
//
//	offset 0   1 byte   version (0xA1)
//	offset 1   4 bytes  key id
//	offset 5  12 bytes  random nonce
//	offset 17  n bytes  ciphertext
//	offset 17+n 16 bytes GCM tag
//
// The GCM additional data is header || aad, so the header (version and key
// id) is authenticated along with the caller's context.
package seal

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
)

// Envelope constants.
const (
	// Version1 is the first byte of every envelope this package writes.
	Version1 byte = 0xA1
	// NonceSize is the size of the random GCM nonce in bytes.
	NonceSize = 12
	// TagSize is the size of the GCM authentication tag in bytes.
	TagSize = 16
	// HeaderSize is version + key id + nonce.
	HeaderSize = 1 + 4 + NonceSize
	// Overhead is how many bytes Seal adds to a plaintext.
	Overhead = HeaderSize + TagSize
)

// Typed errors. Use errors.Is; the wrapped messages add the key id at most.
var (
	// ErrMalformed means the blob is not an envelope this package can read
	// (too short, unknown version).
	ErrMalformed = errors.New("seal: malformed sealed blob")
	// ErrUnknownKey means the blob was sealed under a key id the keyring does not hold.
	ErrUnknownKey = errors.New("seal: unknown key id")
	// ErrAuth means authentication failed: wrong key, wrong additional data
	// (the blob was moved to another row or column) or tampered bytes.
	ErrAuth = errors.New("seal: authentication failed (wrong key, wrong context or tampered data)")
)

// KeyIDOf returns the key id recorded in a blob's header without opening it.
func KeyIDOf(blob []byte) (uint32, error) {
	if err := checkHeader(blob); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(blob[1:5]), nil
}

// checkHeader validates length and version before any slicing.
func checkHeader(blob []byte) error {
	if len(blob) < Overhead {
		return fmt.Errorf("%w: %d bytes, need at least %d", ErrMalformed, len(blob), Overhead)
	}
	if blob[0] != Version1 {
		return fmt.Errorf("%w: unsupported version 0x%02x", ErrMalformed, blob[0])
	}
	return nil
}

// additionalData returns header || aad: the bytes GCM authenticates besides
// the ciphertext. The header has a fixed size, so the concatenation is
// unambiguous.
func additionalData(header, aad []byte) []byte {
	ad := make([]byte, 0, len(header)+len(aad))
	ad = append(ad, header...)
	return append(ad, aad...)
}

// sealWith seals plaintext under aead with the given key id and nonce.
func sealWith(aead cipher.AEAD, id uint32, nonce, plaintext, aad []byte) []byte {
	out := make([]byte, HeaderSize, HeaderSize+len(plaintext)+TagSize)
	out[0] = Version1
	binary.BigEndian.PutUint32(out[1:5], id)
	copy(out[5:HeaderSize], nonce)
	return aead.Seal(out, out[5:HeaderSize], plaintext, additionalData(out[:HeaderSize], aad))
}

// openWith opens a blob whose header was already checked.
func openWith(aead cipher.AEAD, blob, aad []byte) ([]byte, error) {
	header := blob[:HeaderSize]
	pt, err := aead.Open(nil, blob[5:HeaderSize], blob[HeaderSize:], additionalData(header, aad))
	if err != nil {
		return nil, fmt.Errorf("%w (key id %08x)", ErrAuth, binary.BigEndian.Uint32(blob[1:5]))
	}
	return pt, nil
}
