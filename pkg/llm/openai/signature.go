package openai

import (
	"encoding/base64"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// Foreign reasoning signatures travel through Responses clients as
// gateway tokens in encrypted_content (wire-formats.md §9.3):
// "gw1.<issuer>.<base64url(signature)>", so a client replaying the
// reasoning item gives the original signature back to its issuer.
const signatureTokenPrefix = "gw1."

var issuers = map[string]string{
	llm.APIAnthropic: "an",
	llm.APIGoogle:    "ge",
	llm.APIGeminiCLI: "gc",
}

// encodeSignatureToken wraps the signature of a thinking block produced
// by api.
func encodeSignatureToken(api, sig string) string {
	issuer, ok := issuers[api]
	if !ok {
		issuer = "x"
	}
	return signatureTokenPrefix + issuer + "." + base64.RawURLEncoding.EncodeToString([]byte(sig))
}

// decodeSignatureToken unwraps a gateway token; ok is false for anything
// else (a real OpenAI encrypted_content).
func decodeSignatureToken(tok string) (sig, api string, ok bool) {
	rest, found := strings.CutPrefix(tok, signatureTokenPrefix)
	if !found {
		return "", "", false
	}
	issuer, payload, found := strings.Cut(rest, ".")
	if !found {
		return "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", "", false
	}
	for a, is := range issuers {
		if is == issuer {
			return string(b), a, true
		}
	}
	return "", "", false
}
