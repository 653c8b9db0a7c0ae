package openai

import "github.com/ompgo/omp/pkg/llm"

// Foreign reasoning signatures travel through Responses clients as gateway
// tokens in encrypted_content; the token format
// lives in pkg/llm (llm.EncodeSignatureToken).

// encodeSignatureToken wraps the signature of a thinking block produced
// by api.
func encodeSignatureToken(api, sig string) string { return llm.EncodeSignatureToken(api, sig) }

// decodeSignatureToken unwraps a gateway token; ok is false for anything
// else (a real OpenAI encrypted_content).
func decodeSignatureToken(tok string) (sig, api string, ok bool) {
	return llm.DecodeSignatureToken(tok)
}
