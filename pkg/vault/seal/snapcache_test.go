package seal_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/ompgo/omp/pkg/vault/seal"
)

const (
	cacheToken = "broker-token-for-cache"
	cacheURL   = "http://127.0.0.1:8765/"
)

var cachePlain = []byte(`{"generation":1,"generatedAt":2,"serverNowMs":3,"refresher":{},"credentials":[]}`)

// TestSnapshotCacheLayout checks the bytes of the reference's cache layout
// with the standard library alone: magic, version 2, nonce, then GCM under
// SHA-256(token) with "OMPS"||0x02||url as additional data.
func TestSnapshotCacheLayout(t *testing.T) {
	data, err := seal.SealSnapshotCache(cachePlain, cacheToken, cacheURL)
	if err != nil {
		t.Fatal(err)
	}
	if string(data[:4]) != "OMPS" || data[4] != 0x02 || len(data) != 17+len(cachePlain)+16 {
		t.Fatalf("header % x, length %d", data[:5], len(data))
	}
	key := sha256.Sum256([]byte(cacheToken))
	block, _ := aes.NewCipher(key[:])
	gcm, _ := cipher.NewGCM(block)
	pt, err := gcm.Open(nil, data[5:17], data[17:], append([]byte("OMPS\x02"), cacheURL...))
	if err != nil || !bytes.Equal(pt, cachePlain) {
		t.Fatalf("independent open: %q, %v", pt, err)
	}
	again, _ := seal.SealSnapshotCache(cachePlain, cacheToken, cacheURL)
	if bytes.Equal(data[5:17], again[5:17]) {
		t.Fatal("two writes used the same nonce")
	}
}

func TestSnapshotCacheOpen(t *testing.T) {
	data, err := seal.SealSnapshotCache(cachePlain, cacheToken, cacheURL)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := seal.OpenSnapshotCache(data, cacheToken, cacheURL); err != nil || !bytes.Equal(pt, cachePlain) {
		t.Fatalf("round trip: %q, %v", pt, err)
	}
	flip := func(i int) []byte { d := bytes.Clone(data); d[i] ^= 1; return d }
	tests := []struct {
		name       string
		data       []byte
		token, url string
		want       error
	}{
		{"another token", data, cacheToken + "x", cacheURL, seal.ErrAuth},
		{"the URL without its trailing slash", data, cacheToken, "http://127.0.0.1:8765", seal.ErrAuth},
		{"another URL", data, cacheToken, "http://broker.tailnet:8765/", seal.ErrAuth},
		{"a flipped nonce bit", flip(6), cacheToken, cacheURL, seal.ErrAuth},
		{"a flipped ciphertext bit", flip(20), cacheToken, cacheURL, seal.ErrAuth},
		{"a flipped tag bit", flip(len(data) - 1), cacheToken, cacheURL, seal.ErrAuth},
		{"version 3", func() []byte { d := bytes.Clone(data); d[4] = 3; return d }(), cacheToken, cacheURL, seal.ErrMalformed},
		{"version 1 header on a version 2 body", func() []byte { d := bytes.Clone(data); d[4] = 1; return d }(), cacheToken, cacheURL, seal.ErrAuth},
		{"wrong magic", flip(0), cacheToken, cacheURL, seal.ErrMalformed},
		{"header only", data[:17], cacheToken, cacheURL, seal.ErrMalformed},
		{"shorter than a tag", data[:17+15], cacheToken, cacheURL, seal.ErrMalformed},
		{"truncated", data[:len(data)-1], cacheToken, cacheURL, seal.ErrAuth},
		{"empty", nil, cacheToken, cacheURL, seal.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := seal.OpenSnapshotCache(tt.data, tt.token, tt.url); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestSnapshotCacheReadsVersion1: the 15.x layout (version 1, the URL
// alone as additional data) still opens; it is never written.
func TestSnapshotCacheReadsVersion1(t *testing.T) {
	key := sha256.Sum256([]byte(cacheToken))
	block, _ := aes.NewCipher(key[:])
	gcm, _ := cipher.NewGCM(block)
	nonce := bytes.Repeat([]byte{7}, 12)
	v1 := append([]byte("OMPS\x01"), nonce...)
	v1 = gcm.Seal(v1, nonce, cachePlain, []byte(cacheURL))
	if pt, err := seal.OpenSnapshotCache(v1, cacheToken, cacheURL); err != nil || !bytes.Equal(pt, cachePlain) {
		t.Fatalf("v1: %q, %v", pt, err)
	}
	if _, err := seal.OpenSnapshotCache(v1, cacheToken, cacheURL+"x"); !errors.Is(err, seal.ErrAuth) {
		t.Fatalf("v1 with another URL: %v", err)
	}
}
