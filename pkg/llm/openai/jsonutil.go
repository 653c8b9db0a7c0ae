package openai

import (
	"github.com/ompgo/omp/pkg/llm/openai/internal/jsonx"
)

func appendJSONString(dst []byte, s string) []byte { return jsonx.AppendString(dst, s) }

// appendEscapedBody appends s escaped for a JSON string, without quotes.
func appendEscapedBody(dst []byte, s string) []byte { return jsonx.AppendStringBody(dst, s) }
