package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fastUsageSeeds are reports the fast parser must take, and near misses it
// must hand to the schema path.
var fastUsageSeeds = []string{
	`{"installId":"i","entries":[]}`,
	` { "installId" : "i" , "hostname":"h", "app":"gateway", "entries" : [ {"at":1,"provider":"p","model":"m","requests":1,"inputTokens":2,"outputTokens":3,"cacheReadTokens":4,"cacheWriteTokens":5,"costUsd":0.25} ] } `,
	`{"entries":[{"costUsd":-1.5e-3,"at":-0,"provider":"ü","model":"m","requests":2.9,"inputTokens":-7,"outputTokens":1E2,"cacheReadTokens":12345678901234567,"cacheWriteTokens":0}],"installId":"x"}`,
	`{"installId":"i","entries":[{"at":1,"provider":"p","model":"m","requests":1,"inputTokens":2,"outputTokens":3,"cacheReadTokens":4,"cacheWriteTokens":5,"costUsd":0,"credentialId":-3.5},{"credentialId":7,"at":1,"provider":"p","model":"m","requests":1,"inputTokens":2,"outputTokens":3,"cacheReadTokens":4,"cacheWriteTokens":5,"costUsd":0}]}`,
	`{"installId":"i","entries":[{"at":1,"provider":"p","model":"m","requests":1,"inputTokens":2,"outputTokens":3,"cacheReadTokens":4,"cacheWriteTokens":5,"costUsd":0,"extra":true}]}`,
	`{"installId":"i","entries":[{"at":1,"provider":"p","model":"m","requests":1,"inputTokens":2,"outputTokens":3,"cacheReadTokens":4,"cacheWriteTokens":5,"costUsd":0,"credentialId":"7"}]}`,
	`{"installId":"i","entries":[{"at":1,"provider":"p","model":"m","requests":1,"inputTokens":2,"outputTokens":3,"cacheReadTokens":4,"cacheWriteTokens":5}]}`,
	`{"installId":"i","entries":[{"at":1,"at":2,"provider":"p","model":"m","requests":1,"inputTokens":2,"outputTokens":3,"cacheReadTokens":4,"cacheWriteTokens":5,"costUsd":0}]}`,
	`{"installId":"a\"b","entries":[]}`, `{"installId":"i","installId":"j","entries":[]}`, `{"installId":"i","entries":[]} x`,
	`{"installId":"i","entries":[],"foo":1}`, `{"installId":null,"entries":[]}`, `{"installId":"i","entries":[1]}`,
	`{"installId":"i","entries":[{"at":01}]}`, `{"installId":"i","entries":[{"at":1e999}]}`, `{"installId":"\xff","entries":[]}`,
	`{"installId":"i","entries":[{}]}`, `[]`, `{}`, `{"installId":"i","entries":[],}`,
}

// The fast parser yields what the schema path yields wherever it accepts.
func FuzzFastClientUsage(f *testing.F) {
	for _, s := range fastUsageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := FastClientUsage(b)
		if !ok {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("fast path accepted invalid JSON %q", b)
		}
		slow, err := DecodeClientUsage(b)
		if err != nil {
			t.Fatalf("fast path accepted %q, schema path says %v", b, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, schema %+v", b, fast, slow)
		}
	})
}

func TestFastClientUsageTakesCommonReports(t *testing.T) {
	for i, s := range fastUsageSeeds[:4] {
		if _, ok := FastClientUsage([]byte(s)); !ok {
			t.Errorf("seed %d not taken by the fast path", i)
		}
	}
	for i, s := range fastUsageSeeds[4:] {
		if r, ok := FastClientUsage([]byte(s)); ok {
			t.Errorf("near miss %d (%s) taken: %+v", i, s, r)
		}
	}
	// 1001 entries: the schema path words the 400.
	e := `{"at":1,"provider":"p","model":"m","requests":1,"inputTokens":2,"outputTokens":3,"cacheReadTokens":4,"cacheWriteTokens":5,"costUsd":0}`
	if _, ok := FastClientUsage([]byte(`{"installId":"i","entries":[` + strings.Repeat(e+",", 1000) + e + `]}`)); ok {
		t.Error("1001 entries taken by the fast path")
	}
	if r, ok := FastClientUsage([]byte(`{"installId":"i","entries":[` + strings.Repeat(e+",", 999) + e + `]}`)); !ok || len(r.Entries) != 1000 {
		t.Error("1000 entries not taken")
	}
}
