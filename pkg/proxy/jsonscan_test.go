package proxy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The lenient scan fills sessionBody exactly as json.Unmarshal does.
func TestScanSessionBodyMatchesUnmarshal(t *testing.T) {
	for _, body := range []string{
		`{}`,
		` { "model" : "m" , "messages" : [ {"role":"system","content":"s"} , {"role":"user","content":"a \"quoted\" ]} text\\"} ] } `,
		`{"prompt_cache_key":"pck","metadata":{"session_id":"ms","n":1},"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"input":"just text","temperature":0.5,"stream":true,"x":null,"y":false}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"max_output_tokens":-1e3}`,
		`{"Messages":[{"role":"user","content":"case-insensitive key"}],"messages":[{"role":"user","content":"last wins"}]}`,
		`{"prompt\u005fcache_key":"escaped key","metadata":null}`,
		`{"messages":[],"tools":[]}`,
		`{"messages":[{"role":"user","content":"\\\\"}],"prompt_cache_key":7}`,
	} {
		var want, got sessionBody
		_ = json.Unmarshal([]byte(body), &want)
		if !scanSessionBody([]byte(body), &got) {
			t.Errorf("scan refused %s", body)
			continue
		}
		if !reflect.DeepEqual(norm(want), norm(got)) {
			t.Errorf("%s\nscan      %+v\nunmarshal %+v", body, norm(got), norm(want))
		}
	}
	for _, bad := range []string{``, `[]`, `{"a":}`, `{"a":"unterminated}`, `{"a":1`, `{"a" 1}`} {
		var sb sessionBody
		if scanSessionBody([]byte(bad), &sb) {
			t.Errorf("scan accepted %q", bad)
		}
	}
	first, ok := firstMessage(json.RawMessage(`[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"x"}]`))
	if !ok || string(first) != `{"role":"user","content":"u"}` {
		t.Errorf("firstMessage = %s, %v", first, ok)
	}
	if _, ok := firstMessage(json.RawMessage(`"text"`)); ok {
		t.Errorf("a string is not an array")
	}
}

// norm compacts the raw members so whitespace does not matter.
func norm(sb sessionBody) sessionBody {
	c := func(r json.RawMessage) json.RawMessage {
		if len(r) == 0 {
			return nil
		}
		var b strings.Builder
		var out json.RawMessage
		if err := json.Unmarshal(r, &out); err != nil {
			return r
		}
		writeCompact(&b, out)
		return json.RawMessage(b.String())
	}
	sb.Tools, sb.Messages, sb.Input = c(sb.Tools), c(sb.Messages), c(sb.Input)
	return sb
}

// TestNextQuoteFindsTheFirstQuote checks the one-word fast path against
// bytes.IndexByte with the quote in every lane, after bytes >= 0x80 and
// bytes one off '"'.
func TestNextQuoteFindsTheFirstQuote(t *testing.T) {
	for _, fill := range []string{"abcdefghijklmnopqrst", "\xff\xa2\x80#!\x21\x23é\\\\xxxxxxxxxx"} {
		for q := range len(fill) + 1 {
			b := []byte(fill[:q] + `"` + fill[q:] + `"`)
			for i := range q + 1 {
				if got, want := nextQuote(b, i), i+bytes.IndexByte(b[i:], '"'); got != want {
					t.Fatalf("nextQuote(%q, %d) = %d, want %d", b, i, got, want)
				}
			}
		}
	}
	if got := nextQuote([]byte("abcdefghij"), 0); got != -1 {
		t.Fatalf("no quote: got %d", got)
	}
}
