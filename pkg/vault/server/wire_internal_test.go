package server

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// TestSameWireCoversEveryField keeps sameWire in step with the credential's
// wire encoding: changing any field must make two credentials differ, or a
// changed credential would be served with its old encoding.
func TestSameWireCoversEveryField(t *testing.T) {
	base := vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: 1, EnterpriseURL: "e",
		ProjectID: "p", Email: "m", AccountID: "c", Key: "k", Source: "s",
		Extra: map[string]json.RawMessage{"orgId": json.RawMessage(`"o"`)}}
	if !sameWire(&base, &base) {
		t.Fatal("sameWire(x, x) = false")
	}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		changed := base
		if f.Name == "Extra" {
			changed.Extra = map[string]json.RawMessage{"orgId": json.RawMessage(`"p"`)}
			if sameWire(&base, &changed) {
				t.Error("sameWire ignores a change of Extra")
			}
			continue
		}
		v := reflect.ValueOf(&changed).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int64:
			v.SetInt(v.Int() + 1)
		default:
			t.Fatalf("field %s has kind %s: teach sameWire and this test about it", f.Name, v.Kind())
		}
		if sameWire(&base, &changed) {
			t.Errorf("sameWire ignores a change of %s", f.Name)
		}
	}
}

// An unchanged record reuses the previous encoding; a changed one is encoded
// again.
func TestEncodeRecordReusesUnchanged(t *testing.T) {
	rec := vault.Record{ID: 7, Provider: "anthropic", IdentityKey: "email:a@example.com",
		Credential: vault.Credential{Type: vault.TypeOAuth, Access: "at-1", Refresh: "rt-1", Expires: 10, Email: "a@example.com"}}
	e, err := encodeRecord(&rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	prev := &e
	same, _ := encodeRecord(&rec, prev)
	if &same.prefix[0] != &e.prefix[0] {
		t.Error("unchanged record was encoded again")
	}
	rec.Credential.Access = "at-2"
	fresh, _ := encodeRecord(&rec, prev)
	if string(fresh.prefix) == string(e.prefix) {
		t.Error("changed record kept its old encoding")
	}
	rec.Credential.Access, rec.Credential.Refresh = "at-1", "rt-rotated" // the refresh token is never on the wire
	if again, _ := encodeRecord(&rec, prev); &again.prefix[0] != &e.prefix[0] {
		t.Error("a new refresh token alone (redacted on the wire) caused a new encoding")
	}
}
