package session

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzScanObject checks the scanner against encoding/json: every valid
// object is accepted with the same top-level members, and whatever the
// scanner accepts never makes it panic or return values outside the line.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"type":"message","id":"x","parentId":null,"message":{"role":"user","content":"a\"}b"}}`,
		` { "a" : [1, {"b": "]"}], "c": "\\" } `, `{"a":"\u00e9"}`, `[1]`, `{"a":}`, `{"a":"x`, `{"a":1,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got := map[string][]byte{}
		ok := scanObject(line, func(kb []byte, v []byte) {
			k := string(kb)
			if !bytes.Contains(line, v) {
				t.Fatalf("value %q not inside the line", v)
			}
			got[k] = v
		})
		var want map[string]json.RawMessage
		if json.Unmarshal(line, &want) != nil || want == nil {
			return // invalid or not an object: the scanner may accept or not
		}
		if !ok {
			t.Fatalf("valid object rejected: %s", line)
		}
		for k, v := range want {
			if bytes.ContainsAny([]byte(k), "\\\"") {
				continue
			}
			if g, has := got[k]; has && !bytes.Equal(bytes.TrimSpace(g), bytes.TrimSpace(v)) {
				// encoding/json keeps the last duplicate, the scanner reports each.
				if bytes.Count(line, []byte(`"`+k+`"`)) < 2 {
					t.Fatalf("key %q: scanner %s, json %s", k, g, v)
				}
			}
		}
	})
}
