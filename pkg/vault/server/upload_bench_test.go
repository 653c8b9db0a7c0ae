package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// BenchmarkUploadAt is POST /v1/credential of a new anthropic identity over
// a real listener into a real SQLite vault already holding 0 or 1 000
// anthropic credentials, with the hub loop running: the write path
// `make bench-vault` measures, in process. The reply lists every anthropic
// row, so its size grows with the vault; the rest of the path should not.
func BenchmarkUploadAt(b *testing.B) {
	for _, stored := range []int{0, 1000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			e := newEnv(b, quiet)
			ctx := context.Background()
			now := e.clk.Now().UnixMilli()
			for i := range stored {
				c := vault.Credential{Type: vault.TypeOAuth, Access: fmt.Sprintf("access-%06d", i), Refresh: fmt.Sprintf("refresh-%06d", i),
					Expires: now + 3_600_000, Email: fmt.Sprintf("seed%d@example.com", i), AccountID: fmt.Sprintf("acct-seed-%d", i)}
				if _, err := e.store.Upsert(ctx, "anthropic", c); err != nil {
					b.Fatal(err)
				}
			}
			hc := e.ts.Client()
			i := 0
			lat := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				i++
				body := fmt.Sprintf(`{"provider":"anthropic","credential":{"type":"oauth","access":"access-up-%d","refresh":"refresh-up-%d","expires":%d,"email":"up%d@example.com","accountId":"acct-up-%d"}}`,
					i, i, now+3_600_000, i, i)
				req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/v1/credential", bytes.NewReader([]byte(body)))
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
		})
	}
}
