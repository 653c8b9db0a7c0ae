package vault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RemoteRefreshSentinel replaces every OAuth refresh token that leaves the broker.
const RemoteRefreshSentinel = "__remote__"

// SourceLogin is the only API-key source value (18.1.21).
const SourceLogin = "login"

// CredentialType is "oauth" or "api_key".
type CredentialType string

// Credential types.
const (
	TypeOAuth  CredentialType = "oauth"
	TypeAPIKey CredentialType = "api_key"
)

// Credential is one stored secret: an OAuth token set or an API key.
//
// Access, Refresh, Key and the values in Extra are secrets: adapters must seal
// them at rest and must never log them.
type Credential struct {
	Type CredentialType

	// OAuth fields.
	Access        string
	Refresh       string
	Expires       int64 // access-token expiry, epoch milliseconds
	EnterpriseURL string
	ProjectID     string
	Email         string
	AccountID     string

	// API-key fields.
	Key    string
	Source string // "" or "login" (18.1.21)

	// Extra holds every other OAuth field: the 18.1.21 typed extras
	// (apiEndpoint, orgId, orgName, authorizedAt), MCP refresh material
	// (tokenUrl, clientId, clientSecret, resource, authorizationUrl) and any
	// other key a login flow or an imported row carries, as raw JSON. The
	// vault keeps them all; the wire emits them only in the
	// 18.1.21 shape (MarshalJSON, AppendWire with full), never in the 15.x
	// shape.
	Extra map[string]json.RawMessage
}

// Extension field names of 18.1.21 OAuth credentials.
const (
	FieldOrgID        = "orgId"
	FieldOrgName      = "orgName"
	FieldAuthorizedAt = "authorizedAt"
	FieldAPIEndpoint  = "apiEndpoint"
)

// ExtraString returns Extra[k] when it is a JSON string, else "".
func (c Credential) ExtraString(k string) string {
	raw, ok := c.Extra[k]
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// OrgID is the trimmed orgId extension field ("" when absent).
func (c Credential) OrgID() string { return strings.TrimSpace(c.ExtraString(FieldOrgID)) }

// HasExtensions reports whether c holds fields beyond the 15.x wire set
// (OAuth extras or an API-key source).
func (c Credential) HasExtensions() bool { return len(c.Extra) > 0 || c.Source != "" }

// Base returns c without its 18.1.21 extension fields: the 15.x shape.
func (c Credential) Base() Credential {
	c.Extra, c.Source = nil, ""
	return c
}

// IsOAuth reports whether c is an OAuth credential.
func (c Credential) IsOAuth() bool { return c.Type == TypeOAuth }

// Redacted returns a copy of c that is safe to send to clients: the OAuth
// refresh token is replaced by RemoteRefreshSentinel. Extra and Source are
// kept (shared, not copied); the encoder decides whether they are emitted.
func (c Credential) Redacted() Credential {
	r := c
	if r.Type == TypeOAuth {
		r.Refresh = RemoteRefreshSentinel
	}
	return r
}

// CheckType fails with EINVALID, naming t, unless t is "oauth" or
// "api_key": the vault stores no other credential type.
func CheckType(t CredentialType) error {
	switch t {
	case TypeOAuth, TypeAPIKey:
		return nil
	case "":
		return Errorf(EINVALID, "credential.type must be \"oauth\" or \"api_key\" (was empty)")
	}
	return Errorf(EINVALID, "credential.type must be \"oauth\" or \"api_key\" (was %s)", strconv.Quote(clip(string(t))))
}

// Validate checks c as a credential to be stored: a client's upload, and
// every credential built in Go (import, migrate, login, the refresh
// write-back), since the vault's writes call it too. A type other than
// "oauth" or "api_key", empty included, is refused. Messages are
// client-safe and contain no secret.
func (c Credential) Validate() error {
	switch c.Type {
	case TypeOAuth:
		// An empty refresh is accepted (18.1.21): the row cannot refresh.
		if c.Refresh == RemoteRefreshSentinel {
			return Errorf(EINVALID, "refresh token must not equal the remote sentinel (%s)", RemoteRefreshSentinel)
		}
		if c.Access == "" {
			return Errorf(EINVALID, "credential.access must be a non-empty string")
		}
		if c.Key != "" || c.Source != "" {
			return Errorf(EINVALID, "credential.key is not allowed on an oauth credential")
		}
	case TypeAPIKey:
		if c.Key == "" {
			return Errorf(EINVALID, "credential.key must be a non-empty string")
		}
		if c.Access != "" || c.Refresh != "" || c.Expires != 0 || c.Email != "" || c.AccountID != "" || c.ProjectID != "" || c.EnterpriseURL != "" || len(c.Extra) > 0 {
			return Errorf(EINVALID, "credential of type api_key accepts only \"type\", \"key\" and \"source\"")
		}
		if c.Source != "" && c.Source != SourceLogin {
			return Errorf(EINVALID, "credential.source must be \"login\"")
		}
	default:
		return CheckType(c.Type)
	}
	return nil
}

// Equal reports whether two credentials hold the same data (used by the
// compare-and-set disable).
func (c Credential) Equal(o Credential) bool {
	if c.Type != o.Type || c.Access != o.Access || c.Refresh != o.Refresh || c.Expires != o.Expires ||
		c.EnterpriseURL != o.EnterpriseURL || c.ProjectID != o.ProjectID || c.Email != o.Email ||
		c.AccountID != o.AccountID || c.Key != o.Key || c.Source != o.Source || len(c.Extra) != len(o.Extra) {
		return false
	}
	for k, v := range c.Extra {
		if string(o.Extra[k]) != string(v) {
			return false
		}
	}
	return true
}

// Identity returns the human identity used in logs and CLI output:
// email, accountId, projectId or "(no identity)" for OAuth, "(api key)" for keys.
func (c Credential) Identity() string {
	if c.Type == TypeAPIKey {
		return "(api key)"
	}
	for _, s := range []string{c.Email, c.AccountID, c.ProjectID} {
		if s != "" {
			return s
		}
	}
	return "(no identity)"
}

// String never prints a secret.
func (c Credential) String() string {
	return fmt.Sprintf("%s credential %s", c.Type, c.Identity())
}

// GoString never prints a secret either (%#v).
func (c Credential) GoString() string { return c.String() }

// MarshalJSON encodes the 18.1.21 wire shape: the 15.x
// fields, then every Extra key in key order (OAuth) or source (API key).
// Callers redact first.
func (c Credential) MarshalJSON() ([]byte, error) {
	return c.AppendWire(nil, true)
}

// oauthWire and apiKeyWire are the 15.x wire fields of a credential, in
// the reference's order.
type oauthWire struct {
	Type          string `json:"type"`
	Refresh       string `json:"refresh"`
	Access        string `json:"access"`
	Expires       int64  `json:"expires"`
	EnterpriseURL string `json:"enterpriseUrl,omitempty"`
	ProjectID     string `json:"projectId,omitempty"`
	Email         string `json:"email,omitempty"`
	AccountID     string `json:"accountId,omitempty"`
}

type apiKeyWire struct {
	Type   string `json:"type"`
	Key    string `json:"key"`
	Source string `json:"source,omitempty"`
}

// AppendWire appends c's wire JSON to b: the 15.x field set in reference
// order (absent optionals omitted), plus, when full, the
// extension fields. Callers redact first.
func (c Credential) AppendWire(b []byte, full bool) ([]byte, error) {
	switch c.Type {
	case TypeOAuth:
		w, err := json.Marshal(oauthWire{Type: string(TypeOAuth), Refresh: c.Refresh, Access: c.Access, Expires: c.Expires,
			EnterpriseURL: c.EnterpriseURL, ProjectID: c.ProjectID, Email: c.Email, AccountID: c.AccountID})
		if err != nil {
			return nil, err
		}
		if !full || len(c.Extra) == 0 {
			return append(b, w...), nil
		}
		// The extension fields follow in key order; their keys are known
		// only at run time, so they are appended after the struct's.
		b = append(b, w[:len(w)-1]...)
		keys := make([]string, 0, len(c.Extra))
		for k := range c.Extra {
			if !wireOAuthKeys[k] {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := c.Extra[k]
			if !json.Valid(v) {
				return nil, fmt.Errorf("vault: credential field %q is not valid JSON", k)
			}
			q, _ := json.Marshal(k)
			b = append(append(b, ','), q...)
			b = appendCompact(append(b, ':'), v)
		}
		return append(b, '}'), nil
	case TypeAPIKey:
		w := apiKeyWire{Type: string(TypeAPIKey), Key: c.Key}
		if full {
			w.Source = c.Source
		}
		out, err := json.Marshal(w)
		if err != nil {
			return nil, err
		}
		return append(b, out...), nil
	}
	return nil, fmt.Errorf("vault: cannot encode credential of type %q", c.Type)
}

// wireOAuthKeys are the keys the typed fields of an OAuth credential own.
var wireOAuthKeys = map[string]bool{"type": true, "refresh": true, "access": true, "expires": true,
	"enterpriseUrl": true, "projectId": true, "email": true, "accountId": true}

func appendCompact(b []byte, v json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return append(b, v...)
	}
	return append(b, buf.Bytes()...)
}

// UnmarshalJSON decodes a credential leniently: unknown keys of an OAuth
// credential go to Extra (the reference keeps provider extension fields),
// unknown keys of an API key are dropped. Use DecodeWritable for strict
// request validation.
func (c *Credential) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var out Credential
	str := func(k string, dst *string) error {
		raw, ok := m[k]
		if !ok {
			return nil
		}
		delete(m, k)
		if string(raw) == "null" {
			return nil
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("credential.%s must be a string", k)
		}
		return nil
	}
	var typ string
	if err := str("type", &typ); err != nil {
		return err
	}
	out.Type = CredentialType(typ)
	switch out.Type {
	case TypeAPIKey:
		if err := str("key", &out.Key); err != nil {
			return err
		}
		if err := str("source", &out.Source); err != nil {
			return err
		}
	case TypeOAuth:
		for k, dst := range map[string]*string{"access": &out.Access, "refresh": &out.Refresh,
			"enterpriseUrl": &out.EnterpriseURL, "projectId": &out.ProjectID, "email": &out.Email, "accountId": &out.AccountID} {
			if err := str(k, dst); err != nil {
				return err
			}
		}
		if raw, ok := m["expires"]; ok {
			delete(m, "expires")
			var f float64
			if err := json.Unmarshal(raw, &f); err != nil {
				return fmt.Errorf("credential.expires must be a number")
			}
			out.Expires = int64(f)
		}
		if len(m) > 0 {
			out.Extra = m
		}
	default:
		return fmt.Errorf("credential.type must be \"oauth\" or \"api_key\"")
	}
	*c = out
	return nil
}

// DecodeWritable decodes a WritableCredential (POST /v1/credential body)
// with the 18.1.21 schema: OAuth is not
// strict (unknown keys are kept in Extra) but its known keys are typed;
// API keys are strict with an optional source "login". Validate is applied
// too. Messages name keys and JSON types, never values.
func DecodeWritable(raw json.RawMessage) (Credential, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Credential{}, Errorf(EINVALID, "credential must be an object")
	}
	var typ string
	if err := json.Unmarshal(m["type"], &typ); err != nil || (typ != string(TypeOAuth) && typ != string(TypeAPIKey)) {
		return Credential{}, Errorf(EINVALID, "credential.type must be \"oauth\" or \"api_key\"")
	}
	want := func(k, kind string, required bool) error {
		v, ok := m[k]
		if !ok {
			if required {
				return Errorf(EINVALID, "credential.%s must be a %s (was missing)", k, kind)
			}
			return nil
		}
		if got := jsonKind(v); got != kind {
			return Errorf(EINVALID, "credential.%s must be a %s (was %s)", k, kind, got)
		}
		return nil
	}
	if CredentialType(typ) == TypeAPIKey {
		for k := range m {
			if k != "type" && k != "key" && k != "source" {
				return Credential{}, Errorf(EINVALID, "credential.%s must be removed", clip(k))
			}
		}
		if err := want("key", "string", true); err != nil {
			return Credential{}, err
		}
		if v, ok := m["source"]; ok && string(v) != `"login"` {
			return Credential{}, Errorf(EINVALID, "credential.source must be \"login\" (was %s)", describe(v))
		}
	} else {
		for _, f := range [...]struct {
			k, kind  string
			required bool
		}{{"refresh", "string", true}, {"access", "string", true}, {"expires", "number", true},
			{"enterpriseUrl", "string", false}, {"projectId", "string", false}, {"email", "string", false},
			{"accountId", "string", false}, {FieldAPIEndpoint, "string", false}, {FieldOrgID, "string", false},
			{FieldOrgName, "string", false}, {FieldAuthorizedAt, "number", false}} {
			if err := want(f.k, f.kind, f.required); err != nil {
				return Credential{}, err
			}
		}
	}
	var c Credential
	if err := c.UnmarshalJSON(raw); err != nil {
		return Credential{}, Errorf(EINVALID, "%s", strings.TrimSpace(err.Error()))
	}
	if err := c.Validate(); err != nil {
		return Credential{}, err
	}
	return c, nil
}

// jsonKind names the JSON type of v as the reference validator does.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "missing"
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// describe renders a rejected value for a message: a short string is
// quoted (it is an enum value, not a secret field), anything else is its
// JSON type.
func describe(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if len(s) > 32 {
			return "a string"
		}
		return strconv.Quote(s)
	}
	return "a " + jsonKind(v)
}

func clip(k string) string {
	if len(k) > 64 {
		return k[:64] + "…"
	}
	return k
}
