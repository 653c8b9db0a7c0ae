package toolargs

import (
	"bytes"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

func TestFinalizeMatchesFinalizeArguments(t *testing.T) {
	for _, text := range []string{"", "  ", `{"a":1}`, ` {"a":[1,2]} `, `{"a":`, `[1]`, `"x"`, `null`, "{\"a\":\"\xff\"}"} {
		if got, want := Finalize(text), llm.FinalizeArguments(text); !bytes.Equal(got, want) {
			t.Errorf("Finalize(%q) = %s, want %s", text, got, want)
		}
	}
}

func TestNormalizeMatchesNormalizeArguments(t *testing.T) {
	for _, raw := range []string{"", "null", `{"a":1}`, `[1]`, `"x"`, `12`} {
		got, gotText := Normalize([]byte(raw))
		want, wantText := llm.NormalizeArguments([]byte(raw))
		if !bytes.Equal(got, want) || gotText != wantText {
			t.Errorf("Normalize(%q) = %s, %q; want %s, %q", raw, got, gotText, want, wantText)
		}
	}
}
