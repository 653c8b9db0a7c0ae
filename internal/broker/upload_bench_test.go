package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/config"
)

// BenchmarkUpload measures POST /v1/credential through the real wiring
// (HTTP, sealed SQLite, keeper, hub) with 0 and 1 000 credentials already
// stored: the per-upload cost must not grow with the vault. The reply lists
// every credential of the provider, as the protocol says, so it is read in
// full.
func BenchmarkUpload(b *testing.B) {
	for _, stored := range []int{0, 1000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			dir := b.TempDir()
			m := &broker.Main{Config: broker.Config{
				Bind: "127.0.0.1:0", DBPath: filepath.Join(dir, "vault.db"), TokenPath: filepath.Join(dir, "auth-broker.token"),
				KeyPath: filepath.Join(dir, "vault.key"), Logger: slog.New(slog.DiscardHandler),
			}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := m.Open(ctx); err != nil {
				b.Fatal(err)
			}
			go m.Run(ctx)
			defer m.Close()
			token, _, err := config.EnsureToken(m.Config.TokenPath)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			upload := func() {
				n++
				body := fmt.Sprintf(`{"provider":"anthropic","credential":{"type":"oauth","access":"sk-ant-oat01-%s-%d","refresh":"sk-ant-ort01-%d","expires":%d,"email":"user%d@example.com","accountId":"acct-%d"}}`,
					strings.Repeat("a", 80), n, n, time.Now().Add(time.Hour).UnixMilli(), n, n)
				req, _ := http.NewRequest(http.MethodPost, m.URL()+"/v1/credential", bytes.NewBufferString(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("upload: %d", resp.StatusCode)
				}
			}
			for range stored {
				upload()
			}
			b.ResetTimer()
			for b.Loop() {
				upload()
			}
		})
	}
}
