// Package toolargs finalizes the tool-call arguments of a decoded request:
// an argument text that is already a JSON object is kept as it is.
package toolargs

import (
	"encoding/json"
	"strings"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
)

// Finalize returns llm.FinalizeArguments(text). When text is a JSON
// object the result is a copy of it.
func Finalize(text string) json.RawMessage {
	t := strings.TrimSpace(text)
	if t != "" && t[0] == '{' && jsonr.ValidString(t) {
		return json.RawMessage(t)
	}
	return llm.FinalizeArguments(text)
}

// Normalize returns llm.NormalizeArguments(raw) for raw, a JSON value a
// jsonr.Reader has validated. For an object the raw result is raw itself
// and the text a copy of it.
func Normalize(raw []byte) (json.RawMessage, string) {
	if len(raw) > 0 && raw[0] == '{' {
		return raw, string(raw)
	}
	return llm.NormalizeArguments(raw)
}
