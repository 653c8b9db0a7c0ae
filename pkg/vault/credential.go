package vault

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RemoteRefreshSentinel replaces every OAuth refresh token that leaves the broker.
const RemoteRefreshSentinel = "__remote__"

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

	// API-key field.
	Key string

	// Extra holds provider-specific fields written by login flows or found in
	// imported rows (apiEndpoint, orgId, id tokens, …). They are kept in the
	// vault and never emitted on the wire (reference clients reject them).
	Extra map[string]json.RawMessage
}

// IsOAuth reports whether c is an OAuth credential.
func (c Credential) IsOAuth() bool { return c.Type == TypeOAuth }

// Redacted returns a copy of c that is safe to send to clients: the OAuth
// refresh token is replaced by RemoteRefreshSentinel and Extra is dropped.
func (c Credential) Redacted() Credential {
	r := c
	r.Extra = nil
	if r.Type == TypeOAuth {
		r.Refresh = RemoteRefreshSentinel
	}
	return r
}

// Validate checks c as a credential written by a client (upload, import).
// Messages are client-safe and contain no secret.
func (c Credential) Validate() error {
	switch c.Type {
	case TypeOAuth:
		if c.Refresh == "" {
			return Errorf(EINVALID, "credential.refresh must be a non-empty string")
		}
		if c.Refresh == RemoteRefreshSentinel {
			return Errorf(EINVALID, "refresh token must not equal the remote sentinel (%s)", RemoteRefreshSentinel)
		}
		if c.Access == "" {
			return Errorf(EINVALID, "credential.access must be a non-empty string")
		}
		if c.Key != "" {
			return Errorf(EINVALID, "credential.key is not allowed on an oauth credential")
		}
	case TypeAPIKey:
		if c.Key == "" {
			return Errorf(EINVALID, "credential.key must be a non-empty string")
		}
		if c.Access != "" || c.Refresh != "" || c.Expires != 0 || c.Email != "" || c.AccountID != "" || c.ProjectID != "" || c.EnterpriseURL != "" {
			return Errorf(EINVALID, "credential of type api_key accepts only \"type\" and \"key\"")
		}
	default:
		return Errorf(EINVALID, "credential.type must be \"oauth\" or \"api_key\"")
	}
	return nil
}

// Equal reports whether two credentials hold the same data (used by the
// compare-and-set disable).
func (c Credential) Equal(o Credential) bool {
	if c.Type != o.Type || c.Access != o.Access || c.Refresh != o.Refresh || c.Expires != o.Expires ||
		c.EnterpriseURL != o.EnterpriseURL || c.ProjectID != o.ProjectID || c.Email != o.Email ||
		c.AccountID != o.AccountID || c.Key != o.Key || len(c.Extra) != len(o.Extra) {
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

// wireOAuth and wireAPIKey are the exact wire shapes (broker.md §2.3). Field
// order matches the reference so byte comparisons in tests are stable.
type wireOAuth struct {
	Type          CredentialType `json:"type"`
	Refresh       string         `json:"refresh"`
	Access        string         `json:"access"`
	Expires       int64          `json:"expires"`
	EnterpriseURL string         `json:"enterpriseUrl,omitempty"`
	ProjectID     string         `json:"projectId,omitempty"`
	Email         string         `json:"email,omitempty"`
	AccountID     string         `json:"accountId,omitempty"`
}

type wireAPIKey struct {
	Type CredentialType `json:"type"`
	Key  string         `json:"key"`
}

// MarshalJSON encodes the wire shape: only the documented fields, absent
// optionals omitted, Extra never emitted. Callers redact first.
func (c Credential) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case TypeOAuth:
		return json.Marshal(wireOAuth{c.Type, c.Refresh, c.Access, c.Expires, c.EnterpriseURL, c.ProjectID, c.Email, c.AccountID})
	case TypeAPIKey:
		return json.Marshal(wireAPIKey{c.Type, c.Key})
	}
	return nil, fmt.Errorf("vault: cannot encode credential of type %q", c.Type)
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

// DecodeWritable strictly decodes a WritableCredential (POST /v1/credential
// body, broker.md §2.3): only the documented keys, with their types.
// Validate is applied too. Messages are client-safe.
func DecodeWritable(raw json.RawMessage) (Credential, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Credential{}, Errorf(EINVALID, "credential must be an object")
	}
	var typ string
	if err := json.Unmarshal(m["type"], &typ); err != nil {
		return Credential{}, Errorf(EINVALID, "credential.type must be \"oauth\" or \"api_key\"")
	}
	allowed := map[CredentialType]map[string]bool{
		TypeOAuth:  {"type": true, "refresh": true, "access": true, "expires": true, "enterpriseUrl": true, "projectId": true, "email": true, "accountId": true},
		TypeAPIKey: {"type": true, "key": true},
	}[CredentialType(typ)]
	if allowed == nil {
		return Credential{}, Errorf(EINVALID, "credential.type must be \"oauth\" or \"api_key\"")
	}
	for k := range m {
		if !allowed[k] {
			return Credential{}, Errorf(EINVALID, "credential.%s is not an allowed key", k)
		}
	}
	if CredentialType(typ) == TypeOAuth {
		if _, ok := m["expires"]; !ok {
			return Credential{}, Errorf(EINVALID, "credential.expires must be a number")
		}
		var f float64
		if err := json.Unmarshal(m["expires"], &f); err != nil {
			return Credential{}, Errorf(EINVALID, "credential.expires must be a number")
		}
		for _, k := range []string{"refresh", "access"} {
			if _, ok := m[k]; !ok {
				return Credential{}, Errorf(EINVALID, "credential.%s must be a non-empty string", k)
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
