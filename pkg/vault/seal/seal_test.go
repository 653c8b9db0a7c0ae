package seal_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault/seal"
)

func mustKeyring(t testing.TB, active seal.Key, others ...seal.Key) *seal.Keyring {
	t.Helper()
	kr, err := seal.NewKeyring(active, others...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

var (
	plain = []byte("refresh-token-plaintext-0123456789")
	aad   = []byte("auth_credentials/7/refresh")
)

func TestSealOpenRoundTrip(t *testing.T) {
	kr := mustKeyring(t, seal.NewKey())
	for _, pt := range [][]byte{nil, {}, []byte("x"), plain, bytes.Repeat([]byte("a"), 1<<16)} {
		blob, err := kr.Seal(pt, aad)
		if err != nil {
			t.Fatal(err)
		}
		if len(blob) != len(pt)+seal.Overhead {
			t.Fatalf("len = %d, want %d", len(blob), len(pt)+seal.Overhead)
		}
		// Short plaintexts appear in random bytes by chance (a 1-byte one
		// in ~7% of blobs); only a longer match means it leaked.
		if len(pt) >= 8 && bytes.Contains(blob, pt) {
			t.Fatal("blob contains the plaintext")
		}
		got, err := kr.Open(blob, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pt) {
			t.Fatalf("round trip mismatch")
		}
		id, err := seal.KeyIDOf(blob)
		if err != nil || id != kr.ActiveID() {
			t.Fatalf("KeyIDOf = %08x, %v; want %08x", id, err, kr.ActiveID())
		}
	}
}

func TestSealUsesFreshNonces(t *testing.T) {
	kr := mustKeyring(t, seal.NewKey())
	a, _ := kr.Seal(plain, aad)
	b, _ := kr.Seal(plain, aad)
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same plaintext are identical")
	}
}

func TestOpenFailsOnAnyByteFlip(t *testing.T) {
	kr := mustKeyring(t, seal.NewKey())
	blob, _ := kr.Seal(plain, aad)
	for i := range blob {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(blob)
			bad[i] ^= bit
			_, err := kr.Open(bad, aad)
			if err == nil {
				t.Fatalf("flip of byte %d bit %02x opened", i, bit)
			}
			// Byte 0 is the version, bytes 1..4 the key id: those fail before GCM.
			want := seal.ErrAuth
			switch {
			case i == 0:
				want = seal.ErrMalformed
			case i < 5:
				want = seal.ErrUnknownKey
			}
			if !errors.Is(err, want) {
				t.Fatalf("flip of byte %d: err = %v, want %v", i, err, want)
			}
		}
	}
}

func TestOpenRejects(t *testing.T) {
	k1, k2 := seal.NewKey(), seal.NewKey()
	kr1 := mustKeyring(t, k1)
	blob, _ := kr1.Seal(plain, aad)
	// Same key id, different secret: the header names a key the keyring has,
	// but GCM fails.
	impostor := mustKeyring(t, seal.Key{ID: k1.ID, Secret: k2.Secret})

	tests := []struct {
		name string
		kr   *seal.Keyring
		blob []byte
		aad  []byte
		want error
	}{
		{"wrong key with same id fails auth", impostor, blob, aad, seal.ErrAuth},
		{"keyring without the key reports unknown key", mustKeyring(t, k2), blob, aad, seal.ErrUnknownKey},
		{"swapped column aad fails auth", kr1, blob, []byte("auth_credentials/7/access"), seal.ErrAuth},
		{"swapped row aad fails auth", kr1, blob, []byte("auth_credentials/8/refresh"), seal.ErrAuth},
		{"empty aad fails auth", kr1, blob, nil, seal.ErrAuth},
		{"empty blob is malformed", kr1, nil, aad, seal.ErrMalformed},
		{"unknown version is malformed", kr1, append([]byte{0x02}, blob[1:]...), aad, seal.ErrMalformed},
		{"trailing byte fails auth", kr1, append(bytes.Clone(blob), 0), aad, seal.ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.kr.Open(tt.blob, tt.aad)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if got != nil {
				t.Fatal("plaintext returned with an error")
			}
			if strings.Contains(err.Error(), string(plain)) {
				t.Fatal("error contains the plaintext")
			}
		})
	}
}

func TestOpenRejectsEveryTruncation(t *testing.T) {
	kr := mustKeyring(t, seal.NewKey())
	blob, _ := kr.Seal(plain, aad)
	for n := 0; n < len(blob); n++ {
		_, err := kr.Open(blob[:n], aad)
		want := seal.ErrAuth
		if n < seal.Overhead {
			want = seal.ErrMalformed
		}
		if !errors.Is(err, want) {
			t.Fatalf("truncated to %d: err = %v, want %v", n, err, want)
		}
		if n < seal.Overhead {
			if _, err := seal.KeyIDOf(blob[:n]); !errors.Is(err, seal.ErrMalformed) {
				t.Fatalf("KeyIDOf truncated to %d: err = %v", n, err)
			}
		}
	}
}

func TestRotationKeepsOldBlobsReadable(t *testing.T) {
	old := seal.NewKey()
	kr1 := mustKeyring(t, old)
	oldBlob, _ := kr1.Seal(plain, aad)
	if kr1.NeedsReseal(oldBlob) {
		t.Fatal("blob under the active key needs reseal")
	}

	kr2 := mustKeyring(t, seal.NewKey(), old)
	if kr2.ActiveID() == old.ID {
		t.Fatal("new keyring still seals under the old key")
	}
	got, err := kr2.Open(oldBlob, aad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("old blob after rotation: %v", err)
	}
	if !kr2.NeedsReseal(oldBlob) {
		t.Fatal("old blob does not need reseal under the new keyring")
	}
	newBlob, _ := kr2.Seal(got, aad)
	if kr2.NeedsReseal(newBlob) {
		t.Fatal("freshly sealed blob needs reseal")
	}
	if kr2.NeedsReseal([]byte("garbage")) {
		t.Fatal("malformed blob reported as needing reseal")
	}
	if _, err := kr1.Open(newBlob, aad); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("old keyring opening a new blob: %v", err)
	}
}

func TestNewKeyringRejects(t *testing.T) {
	k := seal.NewKey()
	if _, err := seal.NewKeyring(k, k); err == nil {
		t.Fatal("duplicate key id accepted")
	}
	if _, err := seal.NewKeyring(seal.Key{ID: 0}); err == nil {
		t.Fatal("key id 0 accepted")
	}
}

func TestKeyStringHidesSecret(t *testing.T) {
	var s [32]byte
	copy(s[:], "0123456789abcdef0123456789abcdef")
	k := seal.KeyFromSecret(s)
	for _, out := range []string{k.String(), k.GoString()} {
		if strings.Contains(out, "0123456789") {
			t.Fatalf("%q leaks the secret", out)
		}
	}
	if k.ID != seal.DeriveKeyID(s) || k.ID == 0 {
		t.Fatal("KeyFromSecret id is not the derived id")
	}
}

func FuzzOpen(f *testing.F) {
	kr, _ := seal.NewKeyring(seal.KeyFromSecret([32]byte{1}))
	blob, _ := kr.Seal(plain, aad)
	f.Add(blob, aad)
	f.Add([]byte{}, []byte{})
	f.Add(blob[:seal.Overhead], aad)
	f.Fuzz(func(t *testing.T, b, a []byte) {
		pt, err := kr.Open(b, a)
		if err != nil {
			if pt != nil {
				t.Fatal("plaintext with error")
			}
			if !errors.Is(err, seal.ErrMalformed) && !errors.Is(err, seal.ErrUnknownKey) && !errors.Is(err, seal.ErrAuth) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Forging a blob is infeasible: anything that opens is a seed sealed
		// (in this or the coordinating process, same key) over plain and aad.
		if !bytes.Equal(pt, plain) || !bytes.Equal(a, aad) {
			t.Fatal("forged blob opened")
		}
		_, _ = seal.KeyIDOf(b)
		_ = kr.NeedsReseal(b)
	})
}

func BenchmarkSeal2KiB(b *testing.B) {
	kr, _ := seal.NewKeyring(seal.NewKey())
	tok := bytes.Repeat([]byte("t"), 2048)
	b.SetBytes(int64(len(tok)))
	for b.Loop() {
		if _, err := kr.Seal(tok, aad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen2KiB(b *testing.B) {
	kr, _ := seal.NewKeyring(seal.NewKey())
	tok := bytes.Repeat([]byte("t"), 2048)
	blob, _ := kr.Seal(tok, aad)
	b.SetBytes(int64(len(tok)))
	for b.Loop() {
		if _, err := kr.Open(blob, aad); err != nil {
			b.Fatal(err)
		}
	}
}
