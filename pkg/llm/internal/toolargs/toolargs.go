// Package toolargs finalizes the tool-call arguments of a decoded request
// without copying them. llm.FinalizeArguments must copy (its text may be
// any string); a request decoder's argument text is a view of the
// request body or of the reader's arena, both immutable, so the canonical
// arguments can view the same bytes.
package toolargs

import (
	"encoding/json"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/internal/jsonr"
)

// Finalize returns llm.FinalizeArguments(text). When text is a JSON
// object the result aliases text's bytes (no copy), so text must come from
// memory nobody modifies, and the result must never be written to.
func Finalize(text string) json.RawMessage {
	t := strings.TrimSpace(text)
	if t != "" && t[0] == '{' && jsonr.ValidString(t) {
		return jsonr.BytesView(t)
	}
	return llm.FinalizeArguments(text)
}

// Normalize returns llm.NormalizeArguments(raw) for raw, a JSON value a
// jsonr.Reader has validated. For an object both results alias raw (no
// copy), under Finalize's rules.
func Normalize(raw []byte) (json.RawMessage, string) {
	if len(raw) > 0 && raw[0] == '{' {
		return raw, jsonr.StringView(raw)
	}
	return llm.NormalizeArguments(raw)
}
