package sqlite_test

import (
	"context"
	"fmt"
	"testing"

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
