package llm

import (
	"encoding/base64"
	"strings"
)

// Foreign reasoning travels through clients that cannot carry another
// provider's signature as an opaque gateway token:
//
//	gw1.<issuer>.<base64url(payload)>
//
// The payload is the issuer's own signature (an Anthropic thinking
// signature, a Gemini thoughtSignature, or a whole OpenAI reasoning item).
// A client that replays the token gives the payload back, and an upstream
// adapter restores it only when the request goes to the same issuer.
const SignatureTokenPrefix = "gw1."

// signatureIssuers maps an API to its issuer tag.
var signatureIssuers = map[string]string{
	APIAnthropic:       "an",
	APIOpenAIResponses: "or",
	APICodex:           "cx",
	APIGoogle:          "ge",
	APIGeminiCLI:       "gc",
}

// EncodeSignatureToken wraps sig, a signature produced by api, as a gateway
// token. An API without an issuer tag gets the tag "x", which
// DecodeSignatureToken never restores.
func EncodeSignatureToken(api, sig string) string {
	issuer, ok := signatureIssuers[api]
	if !ok {
		issuer = "x"
	}
	return SignatureTokenPrefix + issuer + "." + base64.RawURLEncoding.EncodeToString([]byte(sig))
}

// DecodeSignatureToken unwraps a gateway token into the original signature
// and the API that issued it. ok is false for anything that is not a
// well-formed token of a known issuer (for example a provider's own
// signature).
func DecodeSignatureToken(tok string) (sig, api string, ok bool) {
	rest, found := strings.CutPrefix(tok, SignatureTokenPrefix)
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
	for a, is := range signatureIssuers {
		if is == issuer {
			return string(b), a, true
		}
	}
	return "", "", false
}

// IsSignatureToken reports whether sig has the gateway token prefix (of
// any issuer, known or not).
func IsSignatureToken(sig string) bool { return strings.HasPrefix(sig, SignatureTokenPrefix) }
