package llm

import "testing"

func TestSignatureTokenRoundTripsPerIssuer(t *testing.T) {
	for _, api := range []string{APIAnthropic, APIOpenAIResponses, APICodex, APIGoogle, APIGeminiCLI} {
		sig := `{"id":"rs_1","encrypted_content":"gAAA+/="}` + api
		tok := EncodeSignatureToken(api, sig)
		if !IsSignatureToken(tok) {
			t.Fatalf("%s: %q is not a token", api, tok)
		}
		got, gotAPI, ok := DecodeSignatureToken(tok)
		if !ok || got != sig || gotAPI != api {
			t.Errorf("%s: decoded (%q, %q, %v)", api, got, gotAPI, ok)
		}
	}
}

func TestDecodeSignatureTokenRejectsOthers(t *testing.T) {
	for _, tok := range []string{
		"", "EqQBCgIYAhIM", "gw1.", "gw1.an", "gw1.zz.YWJj", "gw1.an.***",
		EncodeSignatureToken(APIOpenAIChat, "sig"), // no issuer: never restored
	} {
		if sig, api, ok := DecodeSignatureToken(tok); ok {
			t.Errorf("%q decoded to (%q, %q)", tok, sig, api)
		}
	}
}

func FuzzDecodeSignatureToken(f *testing.F) {
	f.Add(EncodeSignatureToken(APIGoogle, "c2ln"))
	f.Add("gw1.or.e30")
	f.Add("gw1..")
	f.Fuzz(func(t *testing.T, tok string) {
		sig, api, ok := DecodeSignatureToken(tok)
		if !ok {
			return
		}
		if again := EncodeSignatureToken(api, sig); again != tok {
			// Only the canonical (unpadded base64url) form round-trips;
			// decoding must still be stable.
			if s2, a2, ok2 := DecodeSignatureToken(again); !ok2 || s2 != sig || a2 != api {
				t.Fatalf("re-encoding %q is not stable", tok)
			}
		}
	})
}
