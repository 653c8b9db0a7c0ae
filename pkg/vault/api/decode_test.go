package api_test

import (
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

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
		got, ok := api.ParseGenerationTag(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseGenerationTag(%q) = %d %v, want %d %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzDecodeDisable(f *testing.F) {
	for _, s := range []string{`{}`, `{"cause":"x"}`, `{"cause":1}`, `{"cause":null}`, `{"x":1}`, `[]`, `null`, `"s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cause, err := api.DecodeDisable(b)
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
		provider, cred, err := api.DecodeUpload(b)
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

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"kind":"snapshot","generation":1,"generatedAt":1,"serverNowMs":1,"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":1},"credentials":[]}`))
	f.Add([]byte(`{"kind":"removed","generation":1,"serverNowMs":1,"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":1},"id":3}`))
	f.Add([]byte(`{"kind":"entry","generation":1,"serverNowMs":1,"refresher":{"enabled":true,"intervalMs":1,"skewMs":0,"nextSweepInMs":1},"entry":{"id":1,"provider":"p","credential":{"type":"api_key","key":"k"},"identityKey":null,"rotatesInMs":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := api.DecodeEvent(b)
		if err != nil {
			return
		}
		switch ev.Kind {
		case api.KindSnapshot:
			if ev.Snapshot == nil {
				t.Fatal("snapshot event without a snapshot")
			}
		case api.KindEntry:
			if ev.Entry == nil || ev.Entry.Provider == "" {
				t.Fatal("entry event without an entry")
			}
		case api.KindRemoved:
		default:
			t.Fatalf("kind %q accepted", ev.Kind)
		}
	})
}
