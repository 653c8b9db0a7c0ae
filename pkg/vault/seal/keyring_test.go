package seal_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault/seal"
)

func TestWithActiveSealsUnderChosenKeyAndKeepsAll(t *testing.T) {
	k1, k2, k3 := seal.NewKey(), seal.NewKey(), seal.NewKey()
	kr := mustKeyring(t, k1, k2, k3)
	blob1, _ := kr.Seal([]byte("one"), []byte("ad"))

	kr2, err := kr.WithActive(k2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if kr2.ActiveID() != k2.ID || kr.ActiveID() != k1.ID {
		t.Fatalf("active: new %08x (want %08x), receiver %08x (want %08x unchanged)", kr2.ActiveID(), k2.ID, kr.ActiveID(), k1.ID)
	}
	if want := []uint32{k2.ID, k1.ID, k3.ID}; !slices.Equal(kr2.IDs(), want) {
		t.Fatalf("IDs = %08x, want %08x", kr2.IDs(), want)
	}
	blob2, _ := kr2.Seal([]byte("two"), []byte("ad"))
	if id, _ := seal.KeyIDOf(blob2); id != k2.ID {
		t.Fatalf("sealed under %08x, want %08x", id, k2.ID)
	}
	for _, b := range [][]byte{blob1, blob2} {
		if _, err := kr2.Open(b, []byte("ad")); err != nil {
			t.Fatal(err)
		}
		if _, err := kr.Open(b, []byte("ad")); err != nil {
			t.Fatal(err)
		}
	}
	if !kr2.NeedsReseal(blob1) || kr2.NeedsReseal(blob2) {
		t.Fatal("NeedsReseal does not follow the new active key")
	}
	if same, err := kr.WithActive(k1.ID); err != nil || same.ActiveID() != k1.ID {
		t.Fatalf("WithActive(current) = %v, %v", same, err)
	}
}

func TestWithActiveRejectsUnknownKeyNamingIDs(t *testing.T) {
	k1, k2 := seal.NewKey(), seal.NewKey()
	_, err := mustKeyring(t, k1).WithActive(k2.ID)
	if !errors.Is(err, seal.ErrUnknownKey) || !strings.Contains(err.Error(), seal.FormatIDs([]uint32{k2.ID})) ||
		!strings.Contains(err.Error(), seal.FormatIDs([]uint32{k1.ID})) {
		t.Fatalf("err = %v", err)
	}
}

func TestFormatIDs(t *testing.T) {
	for name, tc := range map[string]struct {
		ids  []uint32
		want string
	}{
		"none is empty":               {nil, ""},
		"one is 8 hex digits":         {[]uint32{0xab}, "000000ab"},
		"several are comma separated": {[]uint32{1, 0xdeadbeef}, "00000001,deadbeef"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := seal.FormatIDs(tc.ids); got != tc.want {
				t.Fatalf("FormatIDs = %q, want %q", got, tc.want)
			}
		})
	}
}
