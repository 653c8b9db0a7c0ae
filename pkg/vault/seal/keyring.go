package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// KeySize is the size of a vault key in bytes (AES-256).
const KeySize = 32

// Key is one vault key. ID is recorded in every envelope sealed under it.
// Keys made by NewKey and KeyFromSecret use DeriveKeyID, so a bare secret
// (e.g. from OMP_VAULT_KEY) always maps to the same id.
type Key struct {
	ID     uint32
	Secret [KeySize]byte
}

// String never prints the secret.
func (k Key) String() string { return fmt.Sprintf("vault key %08x", k.ID) }

// GoString never prints the secret either (%#v).
func (k Key) GoString() string { return k.String() }

// DeriveKeyID returns the id of a secret: the first four bytes of
// SHA-256("omp vault key id\x00" || secret), never 0. Deriving the id from
// the secret lets an operator move a key between the key file and a secret
// manager without re-sealing the vault.
func DeriveKeyID(secret [KeySize]byte) uint32 {
	h := sha256.New()
	h.Write([]byte("omp vault key id\x00"))
	h.Write(secret[:])
	id := binary.BigEndian.Uint32(h.Sum(nil)[:4])
	if id == 0 {
		id = 1
	}
	return id
}

// KeyFromSecret returns the key for secret with its derived id.
func KeyFromSecret(secret [KeySize]byte) Key {
	return Key{ID: DeriveKeyID(secret), Secret: secret}
}

// NewKey returns a fresh random key with its derived id.
func NewKey() Key {
	var s [KeySize]byte
	rand.Read(s[:]) // never fails (crypto/rand crashes the program instead)
	return KeyFromSecret(s)
}

type keyEntry struct {
	key  Key
	aead cipher.AEAD
}

// Keyring holds several keys by id, one of them active for sealing. It is
// immutable after construction and safe for concurrent use.
type Keyring struct {
	active *keyEntry
	byID   map[uint32]*keyEntry
	order  []uint32 // active first, then others in the order given
}

// NewKeyring returns a keyring that seals under active and opens blobs
// sealed under active or any of others. Ids must be non-zero and distinct.
func NewKeyring(active Key, others ...Key) (*Keyring, error) {
	kr := &Keyring{byID: make(map[uint32]*keyEntry, 1+len(others))}
	for _, k := range append([]Key{active}, others...) {
		if k.ID == 0 {
			return nil, errors.New("seal: key id 0 is reserved")
		}
		if _, dup := kr.byID[k.ID]; dup {
			return nil, fmt.Errorf("seal: duplicate key id %08x", k.ID)
		}
		block, err := aes.NewCipher(k.Secret[:])
		if err != nil {
			return nil, fmt.Errorf("seal: key %08x: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("seal: key %08x: %w", k.ID, err)
		}
		kr.byID[k.ID] = &keyEntry{key: k, aead: aead}
		kr.order = append(kr.order, k.ID)
	}
	kr.active = kr.byID[active.ID]
	return kr, nil
}

// ActiveID returns the id of the key new blobs are sealed under.
func (kr *Keyring) ActiveID() uint32 { return kr.active.key.ID }

// IDs returns every key id, the active one first.
func (kr *Keyring) IDs() []uint32 { return slices.Clone(kr.order) }

// Keys returns copies of every key, the active one first. Only the key file
// writer needs the secrets.
func (kr *Keyring) Keys() []Key {
	out := make([]Key, len(kr.order))
	for i, id := range kr.order {
		out[i] = kr.byID[id].key
	}
	return out
}

// Has reports whether the keyring holds key id.
func (kr *Keyring) Has(id uint32) bool { _, ok := kr.byID[id]; return ok }

// Seal encrypts plaintext under the active key, binding it to aad (which is
// not stored in the blob and must be supplied again to Open).
func (kr *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	var nonce [NonceSize]byte
	rand.Read(nonce[:])
	return sealWith(kr.active.aead, kr.active.key.ID, nonce[:], plaintext, aad), nil
}

// Open decrypts a blob made by Seal with the same aad, using the key named
// in its header. Errors wrap ErrMalformed, ErrUnknownKey or ErrAuth.
func (kr *Keyring) Open(blob, aad []byte) ([]byte, error) {
	if err := checkHeader(blob); err != nil {
		return nil, err
	}
	id := binary.BigEndian.Uint32(blob[1:5])
	e, ok := kr.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w %08x", ErrUnknownKey, id)
	}
	return openWith(e.aead, blob, aad)
}

// NeedsReseal reports whether blob is a well-formed envelope sealed under a
// key other than the active one (so a rekey should re-seal it).
func (kr *Keyring) NeedsReseal(blob []byte) bool {
	id, err := KeyIDOf(blob)
	return err == nil && id != kr.active.key.ID
}

// WithActive returns a keyring holding the same keys with key id active, so
// a process can seal under the key its vault records as active while still
// holding a newer one (or the reverse, during a rekey). The receiver is not
// changed. It fails, naming the ids, when the keyring does not hold id.
func (kr *Keyring) WithActive(id uint32) (*Keyring, error) {
	e, ok := kr.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w %08x (keyring holds %s)", ErrUnknownKey, id, FormatIDs(kr.IDs()))
	}
	if id == kr.active.key.ID {
		return kr, nil
	}
	out := &Keyring{active: e, byID: kr.byID, order: make([]uint32, 0, len(kr.order))}
	out.order = append(out.order, id)
	for _, o := range kr.order {
		if o != id {
			out.order = append(out.order, o)
		}
	}
	return out, nil
}

// FormatIDs renders key ids as comma-separated 8-digit hex, the form every
// message about keys uses.
func FormatIDs(ids []uint32) string {
	var b []byte
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%08x", id)
	}
	return string(b)
}
