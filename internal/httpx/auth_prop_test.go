package httpx_test

import (
	"crypto/sha256"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/httpx"
)

// digestTwin finds, by brute force over a counter, a token whose SHA-256
// digest shares exactly its first n bytes with want's digest.
func digestTwin(t *testing.T, want string, n int) string {
	t.Helper()
	target := sha256.Sum256([]byte(want))
	buf := []byte("twin-")
	for i := uint64(0); ; i++ {
		tok := strconv.AppendUint(buf[:5], i, 36)
		d := sha256.Sum256(tok)
		if string(d[:n]) == string(target[:n]) && d[n] != target[n] {
			return string(tok)
		}
	}
}

// bearerHeaders are the spellings of the Authorization header the check
// accepts for tok (case-insensitive scheme, any whitespace, trimmed token).
func bearerHeaders(tok string) []string {
	return []string{"Bearer " + tok, "bearer " + tok, "BEARER\t" + tok, "Bearer   " + tok + "  "}
}

// TestBearerRefusesNearMisses pushes many wrong tokens through the check —
// random ones, one-byte edits at every position, truncations and extensions,
// and tokens whose SHA-256 digest shares a 1-, 2- or 3-byte prefix with an
// allowed token's digest — through Allow and
// through Authorized with every accepted header spelling. All must be
// refused and the allowed tokens accepted. A check that compares only a
// prefix of the digests fails here.
func TestBearerRefusesNearMisses(t *testing.T) {
	allowed := []string{"test-token-0123456789", "second-token"}
	b, err := httpx.NewBearer(allowed)
	if err != nil {
		t.Fatal(err)
	}
	check := func(tok string, want bool) {
		t.Helper()
		if got := b.Allow(tok); got != want {
			t.Fatalf("Allow(%q) = %v, want %v", tok, got, want)
		}
		for _, h := range bearerHeaders(tok) {
			r := &http.Request{Header: http.Header{"Authorization": {h}}}
			if got := b.Authorized(r); got != want {
				t.Fatalf("Authorized(Authorization: %q) = %v, want %v", h, got, want)
			}
		}
	}
	for _, ok := range allowed {
		check(ok, true)
	}

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	var wrong []string
	for range 2000 { // random tokens of assorted lengths
		n := 1 + rng.IntN(64)
		tok := make([]byte, n)
		for i := range tok {
			tok[i] = byte('!' + rng.IntN('~'-'!'+1))
		}
		wrong = append(wrong, string(tok))
	}
	for _, ok := range allowed {
		for i := range len(ok) { // one byte different at every position
			for _, x := range []byte{0x01, 0x20, 0x80, 0xff} {
				tok := []byte(ok)
				tok[i] ^= x
				wrong = append(wrong, string(tok))
			}
		}
		for i := 1; i < len(ok); i++ { // truncations
			wrong = append(wrong, ok[:i], ok[i:])
		}
		wrong = append(wrong, ok+"x", "x"+ok, ok+ok)
		for _, n := range []int{1, 2} { // ≈256 and ≈65k hashes
			twin := digestTwin(t, ok, n)
			t.Logf("%q shares a %d-byte digest prefix with %q", twin, n, ok)
			wrong = append(wrong, twin)
		}
	}
	// 3-byte twins take ≈16M hashes (tens of seconds on a shared machine):
	// found once by digestTwin(t, tok, 3), pinned here and re-verified.
	for tok, twin := range map[string]string{allowed[0]: "twin-ewq1k", allowed[1]: "twin-4v5wx"} {
		d, w := sha256.Sum256([]byte(twin)), sha256.Sum256([]byte(tok))
		if string(d[:3]) != string(w[:3]) || d[3] == w[3] {
			t.Fatalf("pinned twin %q does not share exactly 3 digest bytes with %q", twin, tok)
		}
		wrong = append(wrong, twin)
	}
	for _, tok := range wrong {
		if tok == allowed[0] || tok == allowed[1] {
			continue
		}
		check(tok, false)
	}
}

// TestBearerSetMatchIndexes: plain tokens and stored digests are numbered in
// order; near misses of either kind match nothing.
func TestBearerSetMatchIndexes(t *testing.T) {
	plain := []string{"shared-one", "shared-two"}
	hashed := []string{"ompct_first", "ompct_second", "ompct_third"}
	var digests [][sha256.Size]byte
	for _, h := range hashed {
		digests = append(digests, sha256.Sum256([]byte(h)))
	}
	b, err := httpx.NewBearerSet(plain, digests)
	if err != nil {
		t.Fatal(err)
	}
	for i, tok := range append(append([]string{}, plain...), hashed...) {
		if got := b.Match(tok); got != i {
			t.Fatalf("Match(%q) = %d, want %d", tok, got, i)
		}
		for _, miss := range []string{tok + "x", tok[1:], tok[:len(tok)-1], digestTwin(t, tok, 2)} {
			if got := b.Match(miss); got != -1 {
				t.Fatalf("Match(%q) = %d, want -1", miss, got)
			}
		}
	}
	if _, err := httpx.NewBearerSet(nil, nil); err == nil {
		t.Fatal("empty allow-list accepted")
	}
	if b, err := httpx.NewBearerSet(nil, digests); err != nil || b.Match("ompct_third") != 2 {
		t.Fatalf("digest-only set: %v", err)
	}
}

// TestBearerMatchTimeIndependentOfPosition times Match on a 2 000-entry
// allow-list for the first entry, the last entry and a miss. A check that
// stops at the first match answers the first entry ~2 000× faster than a
// miss; a constant-time one takes the same time for all three. Each is the
// minimum over interleaved batches (robust to a busy machine); the bound,
// 3×, is far from both.
func TestBearerMatchTimeIndependentOfPosition(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	var digests [][sha256.Size]byte
	var toks []string
	for i := range 2000 {
		tok := "ompct_token_" + strconv.Itoa(i)
		toks = append(toks, tok)
		digests = append(digests, sha256.Sum256([]byte(tok)))
	}
	b, err := httpx.NewBearerSet(nil, digests)
	if err != nil {
		t.Fatal(err)
	}
	cases := []string{toks[0], toks[len(toks)-1], "ompct_token_miss"}
	best := make([]time.Duration, len(cases))
	for range 30 {
		for i, tok := range cases {
			start := time.Now()
			for range 20 {
				b.Match(tok)
			}
			if d := time.Since(start); best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	lo, hi := slices.Min(best), slices.Max(best)
	t.Logf("first %v, last %v, miss %v (20 checks each, best of 30)", best[0], best[1], best[2])
	if hi > 3*lo {
		t.Fatalf("Match time depends on the matching position: first %v, last %v, miss %v", best[0], best[1], best[2])
	}
}

// BenchmarkBearerMatch is the per-request cost of the bearer check for an
// allow-list of n entries (the shared token plus n-1 client tokens).
func BenchmarkBearerMatch(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		digests := make([][sha256.Size]byte, n-1)
		for i := range digests {
			digests[i] = sha256.Sum256([]byte("ompct_" + strconv.Itoa(i)))
		}
		bearer, err := httpx.NewBearerSet([]string{"shared-token"}, digests)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				bearer.Match("ompct_0")
			}
		})
	}
}
