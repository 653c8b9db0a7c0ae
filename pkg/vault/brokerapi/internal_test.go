package brokerapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

func testHub() *hub {
	return &hub{schedule: func() vault.Schedule { return vault.Schedule{} }, now: func() time.Time { return time.UnixMilli(1000) },
		log: slog.New(slog.DiscardHandler)}
}

func key(id int64, k string) vault.Record {
	return vault.Record{ID: id, Provider: "openai", Credential: vault.Credential{Type: vault.TypeAPIKey, Key: k}}
}

// A subscriber one publication behind gets the hub's shared delta bytes; one
// further behind gets its own coalesced diff.
func TestFramesSince(t *testing.T) {
	h := testHub()
	s1 := h.build(1, []vault.Record{key(1, "a"), key(2, "b")}, nil, nil)
	s2 := h.build(2, []vault.Record{key(1, "a"), key(2, "b2"), key(3, "c")}, nil, s1)
	s3 := h.build(3, []vault.Record{key(2, "b2"), key(3, "c")}, nil, s2)
	if got := framesSince(s2, s3, shape15); &got[0] != &s3.delta[0] {
		t.Fatal("an in-sync subscriber did not get the shared delta")
	}
	if got := string(framesSince(s2, s3, shape15)); strings.Count(got, "event: ") != 1 || !strings.Contains(got, `"kind":"removed","generation":3,"serverNowMs":1000`) {
		t.Fatalf("delta s2→s3 = %q", got)
	}
	got := string(framesSince(s1, s3, shape15))
	ib, ic, ia := strings.Index(got, `"key":"b2"`), strings.Index(got, `"key":"c"`), strings.Index(got, "event: removed")
	if strings.Count(got, "event: ") != 3 || ib < 0 || ic < ib || ia < ic || !strings.Contains(got, `"id":1}`) {
		t.Fatalf("coalesced diff s1→s3 = %q", got)
	}
	if d := diff(nil, s3, h.build(4, []vault.Record{key(2, "b2"), key(3, "c")}, nil, nil), shape15, nil); len(d) != 0 {
		t.Fatalf("an unchanged set emitted %q", d)
	}
}

func TestParseGenerationTag(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{`"5"`, 5, true}, {`W/"5"`, 5, true}, {`5`, 5, true}, {` W/ "5" `, 5, true}, {`"5.0"`, 5, true},
		{`"5e2"`, 500, true}, {`"1765500000001"`, 1765500000001, true},
		{``, 0, false}, {`garbage`, 0, false}, {`"-1"`, 0, false}, {`"5.5"`, 0, false}, {`"NaN"`, 0, false},
		{`"Infinity"`, 0, false}, {`"9007199254740993"`, 0, false}, {`""`, 0, false}, {`W/`, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseGenerationTag(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseGenerationTag(%q) = %d %v, want %d %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// The stream reader (internal/sse with the broker's 64 MiB limit) takes a
// snapshot frame over the 32 MiB default.
func TestStreamReaderLimit(t *testing.T) {
	big := strings.Repeat("x", 40<<20)
	ev, err := newStreamReader(strings.NewReader("event: snapshot\ndata: " + big + "\n\n")).Next()
	if err != nil || len(ev.Data) != len(big) || ev.Name != "snapshot" {
		t.Fatalf("large line: %d %v", len(ev.Data), err)
	}
}

func FuzzDecodeDisable(f *testing.F) {
	for _, s := range []string{`{}`, `{"cause":"x"}`, `{"cause":1}`, `{"cause":null}`, `{"x":1}`, `[]`, `null`, `"s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cause, err := decodeDisable(b)
		if err != nil {
			if vault.ErrorCode(err) != vault.EINVALID || vault.ErrorMessage(err) == "internal error" {
				t.Fatalf("error without a client message: %v", err)
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || len(m) > 1 {
			t.Fatalf("accepted %q", b)
		}
		if c, ok := m["cause"]; ok {
			var s string
			if json.Unmarshal(c, &s) != nil || s != cause {
				t.Fatalf("cause %q from %q", cause, b)
			}
		}
	})
}

func FuzzDecodeUpload(f *testing.F) {
	for _, s := range []string{
		`{"provider":"p","credential":{"type":"api_key","key":"k"}}`,
		`{"provider":"anthropic","credential":{"type":"oauth","refresh":"r","access":"a","expires":1,"email":"e"}}`,
		`{"provider":"p","credential":{"type":"oauth","refresh":"__remote__","access":"a","expires":1}}`,
		`{"provider":"","credential":{}}`, `{"provider":"p","credential":null,"x":1}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		provider, cred, err := decodeUpload(b)
		if err != nil {
			if vault.ErrorCode(err) != vault.EINVALID || vault.ErrorMessage(err) == "internal error" {
				t.Fatalf("error without a client message: %v", err)
			}
			return
		}
		if provider == "" || cred.Validate() != nil {
			t.Fatalf("accepted an invalid upload %q", b)
		}
		if cred.IsOAuth() && cred.Refresh == vault.RemoteRefreshSentinel {
			t.Fatal("accepted the sentinel")
		}
	})
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: {}\n\n", ": k\r\n\r\n", "data: 1\rdata: 2\r\r", "data\n\n", "event\n", "\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newStreamReader(bytes.NewReader(b))
		for range len(b) + 1 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if bytes.ContainsAny([]byte(ev.Name), "\r\n") {
				t.Fatalf("event name with a line break: %q", ev.Name)
			}
			if _, err := decodeEvent(ev.Data); err == nil && !json.Valid(ev.Data) {
				t.Fatal("decoded invalid JSON")
			}
		}
		t.Fatal("reader did not terminate")
	})
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"kind":"snapshot","generation":1,"generatedAt":1,"serverNowMs":1,"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":1},"credentials":[]}`))
	f.Add([]byte(`{"kind":"removed","generation":1,"serverNowMs":1,"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":1},"id":3}`))
	f.Add([]byte(`{"kind":"entry","generation":1,"serverNowMs":1,"refresher":{"enabled":true,"intervalMs":1,"skewMs":0,"nextSweepInMs":1},"entry":{"id":1,"provider":"p","credential":{"type":"api_key","key":"k"},"identityKey":null,"rotatesInMs":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeEvent(b)
		if err != nil {
			return
		}
		switch ev.Kind {
		case KindSnapshot:
			if ev.Snapshot == nil {
				t.Fatal("snapshot event without a snapshot")
			}
		case KindEntry:
			if ev.Entry == nil || ev.Entry.Provider == "" {
				t.Fatal("entry event without an entry")
			}
		case KindRemoved:
		default:
			t.Fatalf("kind %q accepted", ev.Kind)
		}
	})
}
