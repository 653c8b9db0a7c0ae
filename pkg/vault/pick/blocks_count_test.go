package pick

import (
	"testing"
	"time"
)

func TestBlocksCounts(t *testing.T) {
	now := time.UnixMilli(10_000)
	b := &Blocks{Now: func() time.Time { return now }}
	b.Block("openai:api_key", "", 1, 20_000)
	b.Block("openai:api_key", "gpt-4o", 2, 20_000)
	b.Block("anthropic:oauth", "", 3, 5_000) // already over
	got := b.Counts()
	if len(got) != 1 || got["openai:api_key"] != 2 {
		t.Errorf("Counts %v", got)
	}
}
