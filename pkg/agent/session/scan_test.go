package session

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// FuzzScanObject checks the scanner against encoding/json: it accepts
// exactly the lines that are one valid JSON object, and reports their
// members as encoding/json does (keys decoded, the last of a repeated key
// wins), each value a view of the line.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"type":"message","id":"x","parentId":null,"message":{"role":"user","content":"a\"}b"}}`,
		` { "a" : [1, {"b": "]"}], "c": "\\" } `, `{"a":"\u00e9"}`, `{"\u0061":1,"a":2}`, `[1]`, `{"a":}`, `{"a":"x`, `{"a":1,}`,
		`{"a":tru}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got := map[string][]byte{}
		ok := scanObject(line, func(k, v []byte) {
			if !bytes.Contains(line, v) {
				t.Fatalf("value %q not inside the line", v)
			}
			got[string(k)] = v
		})
		var want map[string]json.RawMessage
		valid := json.Unmarshal(line, &want) == nil && want != nil
		if ok != valid {
			t.Fatalf("scanObject(%q) = %v, encoding/json reads an object: %v", line, ok, valid)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: scanner keys %d, encoding/json %d", line, len(got), len(want))
		}
		for k, v := range want {
			if g := got[k]; !bytes.Equal(g, bytes.TrimSpace(v)) {
				t.Fatalf("key %q: scanner %s, json %s", k, g, v)
			}
		}
	})
}

// baseFields is what an encoding/json loader would decode of each line:
// the base fields and the raw message.
type baseFields struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp string          `json:"timestamp"`
	Message   json.RawMessage `json:"message"`
}

// BenchmarkScanLines reads the base fields and the raw message of every
// line of a 10 000-entry session (BenchmarkOpen10k's file): with the
// shared JSON reader, as parseEntry does (impl=jsonr), and with
// encoding/json (impl=encoding_json).
func BenchmarkScanLines(b *testing.B) {
	data, err := os.ReadFile(writeLongSession(b, 10_000))
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	b.Run("impl=jsonr", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				if _, ok := parseEntry(l); !ok {
					b.Fatalf("refused %s", l)
				}
			}
		}
	})
	b.Run("impl=encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				var e baseFields
				if err := json.Unmarshal(l, &e); err != nil || e.Type == "" {
					b.Fatalf("refused %s", l)
				}
			}
		}
	})
}
