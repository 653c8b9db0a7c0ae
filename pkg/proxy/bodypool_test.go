package proxy

import (
	"bytes"
	"strings"
	"testing"
)

func TestBodyPoolRecyclesLargeBuffersOnly(t *testing.T) {
	b := getBody(300 << 10)
	if cap(b) != 1<<20 || len(b) != 0 {
		t.Fatalf("getBody(300 KiB): len %d cap %d, want 0 and the 1 MiB class", len(b), cap(b))
	}
	b = append(b, "x"...)
	putBody(b)
	// sync.Pool may drop any Put (GC; the race detector drops one in four
	// on purpose), so a reuse of any buffer released so far is checked
	// over a few tries, not of b alone.
	released := map[*byte]bool{&b[0]: true}
	reused := false
	for range 10 {
		c := getBody(200 << 10)
		if len(c) != 0 {
			t.Fatalf("recycled buffer has len %d", len(c))
		}
		if cap(c) == cap(b) && released[&c[:1][0]] {
			reused = true
			break
		}
		released[&c[:1][0]] = true
		putBody(c)
	}
	if !reused {
		t.Error("a released 1 MiB buffer was never handed out again")
	}
	if s := getBody(100); cap(s) > minPooled {
		t.Errorf("small body got cap %d: a small request must not pin a pooled buffer", cap(s))
	}
	if huge := getBody(8 << 20); cap(huge) != 8<<20 {
		t.Errorf("8 MiB body: cap %d", cap(huge))
	}
}

func TestReadAllSizedReadsEveryByteWhateverTheDeclaredLength(t *testing.T) {
	body := []byte(strings.Repeat("0123456789", 10_000)) // 100 KB
	for _, declared := range []int64{-1, 0, 10, 50_000, 100_000, 200_000} {
		got, err := readAllSized(bytes.NewReader(body), declared)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("declared %d: %d bytes, err %v", declared, len(got), err)
		}
		putBody(got)
	}
}
