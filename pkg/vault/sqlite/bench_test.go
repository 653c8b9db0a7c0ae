package sqlite_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

func BenchmarkGet(b *testing.B) {
	st, _ := newStore(b)
	ctx := context.Background()
	c := oauth("a@x.io", string(make([]byte, 512)))
	c.Access = string(make([]byte, 2048))
	must[[]vault.Record](b)(st.Upsert(ctx, "anthropic", c))
	for b.Loop() {
		if _, err := st.Get(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkList1000(b *testing.B) {
	st, _ := newStore(b)
	ctx := context.Background()
	creds := make([]vault.Credential, 1000)
	for i := range creds {
		creds[i] = oauth(fmt.Sprintf("u%d@x.io", i), fmt.Sprintf("refresh-%d", i))
	}
	must[[]vault.Record](b)(st.ReplaceAll(ctx, "anthropic", creds))
	for b.Loop() {
		recs, err := st.List(ctx, "")
		if err != nil || len(recs) != 1000 {
			b.Fatal(len(recs), err)
		}
	}
}

func BenchmarkGeneration(b *testing.B) {
	st, _ := newStore(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := st.Generation(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdateCredential(b *testing.B) {
	st, _ := newStore(b)
	ctx := context.Background()
	must[[]vault.Record](b)(st.Upsert(ctx, "anthropic", oauth("a@x.io", "r0")))
	i := 0
	for b.Loop() {
		i++
		if _, err := st.UpdateCredential(ctx, 1, oauth("a@x.io", fmt.Sprintf("r%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// seedOAuth stores n OAuth credentials of provider anthropic, one upsert
// each (the way n uploads arrive).
func seedOAuth(b *testing.B, st interface {
	Upsert(context.Context, string, vault.Credential) ([]vault.Record, error)
}, n int) {
	b.Helper()
	for i := range n {
		if _, err := st.Upsert(context.Background(), "anthropic", oauth(fmt.Sprintf("seed%d@x.io", i), fmt.Sprintf("seed-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpsert is one upload (a rotated token for an existing identity)
// into a vault holding 0 or 1 000 other credentials of the same provider.
// The per-op cost must not grow with the vault.
func BenchmarkUpsert(b *testing.B) {
	for _, stored := range []int{0, 1000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			st, _ := newStore(b)
			seedOAuth(b, st, stored)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				if _, err := st.Upsert(ctx, "anthropic", oauth("bench@x.io", fmt.Sprintf("r%d", i))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpsertNew inserts a new identity per op: the sequential upload of
// many accounts (the vault grows by b.N rows).
func BenchmarkUpsertNew(b *testing.B) {
	st, _ := newStore(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		if _, err := st.Upsert(ctx, "anthropic", oauth(fmt.Sprintf("new%d@x.io", i), fmt.Sprintf("r%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpsertConcurrent16 is 16 concurrent uploaders, each rotating its
// own identity; ns/op is wall time per upload across all of them.
func BenchmarkUpsertConcurrent16(b *testing.B) {
	const writers = 16
	st, _ := newStore(b)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := next.Add(1)
		i := 0
		for pb.Next() {
			i++
			if _, err := st.Upsert(ctx, "anthropic", oauth(fmt.Sprintf("w%d@x.io", w), fmt.Sprintf("r%d-%d", w, i))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkUploads16x63 is the HTTP target's shape: 16 uploaders × 63
// uploads each, concurrently (writers=16) or one after another
// (writers=1); one op is all 1 008 uploads.
func BenchmarkUploads16x63(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			st, _ := newStore(b)
			ctx := context.Background()
			round := 0
			for b.Loop() {
				round++
				var wg sync.WaitGroup
				upload := func(w int) {
					for i := range 63 {
						if _, err := st.Upsert(ctx, "anthropic", oauth(fmt.Sprintf("w%d-%d@x.io", w, i), fmt.Sprintf("r%d", round))); err != nil {
							b.Error(err)
							return
						}
					}
				}
				for w := range 16 {
					if writers == 1 {
						upload(w)
						continue
					}
					wg.Go(func() { upload(w) })
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16*63), "ns/upload")
		})
	}
}

// BenchmarkUploadAt is one broker upload — a new identity upserted, then the
// whole active set listed for the published snapshot — into a vault already
// holding 0, 100 or 1 000 credentials. It reports the median op latency
// (p50-ns) and the process CPU time per op (cpu-ns/op), which unlike the
// wall time does not include waiting for the fsync. Neither may grow with
// the vault beyond copying out the listed records.
func BenchmarkUploadAt(b *testing.B) {
	for _, stored := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			st, _ := newStore(b)
			seedOAuth(b, st, stored)
			ctx := context.Background()
			var lat []time.Duration
			cpu0 := cpuTime()
			i := 0
			for b.Loop() {
				i++
				t0 := time.Now()
				if _, err := st.Upsert(ctx, "anthropic", oauth(fmt.Sprintf("up%d@x.io", i), fmt.Sprintf("r%d", i))); err != nil {
					b.Fatal(err)
				}
				if _, err := st.List(ctx, ""); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			cpu := cpuTime() - cpu0
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(lat)), "cpu-ns/op")
		})
	}
}
