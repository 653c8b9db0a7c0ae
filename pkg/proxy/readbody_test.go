package proxy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/httpx"
)

func TestReadAllSizedReadsEveryByteWhateverTheDeclaredLength(t *testing.T) {
	body := []byte(strings.Repeat("0123456789", 10_000)) // 100 KB
	for _, declared := range []int64{-1, 0, 10, 50_000, 100_000, 200_000} {
		got, err := readAllSized(bytes.NewReader(body), declared, BodyLimit)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("declared %d: %d bytes, err %v", declared, len(got), err)
		}
		httpx.PutBuffer(got)
	}
}
