package proxy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// sessionBodySeeds are bodies the scan must read as json.Unmarshal does.
var sessionBodySeeds = []string{
	`{}`,
	` { "model" : "m" , "messages" : [ {"role":"system","content":"s"} , {"role":"user","content":"a \"quoted\" ]} text\\"} ] } `,
	`{"prompt_cache_key":"pck","metadata":{"session_id":"ms","n":1},"tools":[{"type":"function","function":{"name":"f"}}]}`,
	`{"input":"just text","temperature":0.5,"stream":true,"x":null,"y":false}`,
	`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"max_output_tokens":-1e3}`,
	`{"Messages":[{"role":"user","content":"case-insensitive key"}],"messages":[{"role":"user","content":"last wins"}]}`,
	`{"prompt\u005fcache_key":"escaped key","metadata":null}`,
	`{"messages":[],"tools":[]}`,
	`{"messages":[{"role":"user","content":"\\\\"}],"prompt_cache_key":7}`,
	`{"messages":[{"ROLE":"system","role":null},{"role":1,"role":"system"},{"r\u006fle":"system"},{"role":"user"}]}`,
}

// The scan fills sessionBody exactly as json.Unmarshal does.
func TestScanSessionBodyMatchesUnmarshal(t *testing.T) {
	for _, body := range sessionBodySeeds {
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

// unmarshalFirst is firstMessage by encoding/json: the first element of
// the array raw whose role is not "system".
func unmarshalFirst(raw json.RawMessage) (json.RawMessage, bool) {
	var msgs []json.RawMessage
	if json.Unmarshal(raw, &msgs) != nil {
		return nil, false
	}
	for _, m := range msgs {
		var r struct {
			Role string `json:"role"`
		}
		if !(json.Unmarshal(m, &r) == nil && r.Role == "system") {
			return m, true
		}
	}
	return nil, true
}

// The reader-based scan and firstMessage agree with encoding/json on every
// valid body, and refuse every invalid one.
func FuzzScanSessionBodyMatchesUnmarshal(f *testing.F) {
	for _, s := range sessionBodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want, got sessionBody
		ok := scanSessionBody(body, &got)
		if !json.Valid(body) {
			if ok {
				t.Fatalf("scan accepted invalid %q", body)
			}
			return
		}
		if err := json.Unmarshal(body, &want); err != nil {
			return // a member of the wrong kind: sessionID reads what it can
		}
		if !ok {
			// Only a body that is not an object (sessionID then asks
			// json.Unmarshal, which reads nothing from it either).
			var m map[string]json.RawMessage
			if json.Unmarshal(body, &m) == nil && m != nil {
				t.Fatalf("scan refused %q", body)
			}
			return
		}
		if !reflect.DeepEqual(norm(want), norm(got)) {
			t.Fatalf("%q\nscan      %+v\nunmarshal %+v", body, norm(got), norm(want))
		}
		for _, raw := range []json.RawMessage{got.Messages, got.Input} {
			first, isArray := firstMessage(raw)
			wantFirst, wantArray := unmarshalFirst(raw)
			if isArray != wantArray || !bytes.Equal(first, wantFirst) {
				t.Fatalf("firstMessage(%s) = %s, %v; encoding/json %s, %v", raw, first, isArray, wantFirst, wantArray)
			}
		}
	})
}

// BenchmarkSessionScan locates the members the session id reads (and the
// first non-system message) in a ~300 KB chat body: with the shared JSON
// reader (impl=jsonr) and with encoding/json (impl=encoding_json).
func BenchmarkSessionScan(b *testing.B) {
	body := bigSessionBody()
	b.Run("impl=jsonr", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var sb sessionBody
			if !scanSessionBody(body, &sb) {
				b.Fatal("refused")
			}
			if first, _ := firstMessage(sb.Messages); len(first) == 0 {
				b.Fatal("no first message")
			}
		}
	})
	b.Run("impl=encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var sb sessionBody
			if err := json.Unmarshal(body, &sb); err != nil {
				b.Fatal(err)
			}
			if first, _ := unmarshalFirst(sb.Messages); len(first) == 0 {
				b.Fatal("no first message")
			}
		}
	})
}
