package vault

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// IdentityKey computes the credential's identity key (broker.md §2.5): the
// key upserts and dedupe match on and the vault stores in identity_key.
// It returns "" (JSON null) for API keys and OAuth credentials without a
// derivable identity.
func IdentityKey(provider string, c Credential) string {
	if c.Type != TypeOAuth {
		return ""
	}
	var ids []string
	add := func(prefix, v string, lower bool) {
		v = strings.TrimSpace(v)
		if lower {
			v = strings.ToLower(v)
		}
		if v != "" {
			ids = append(ids, prefix+v)
		}
	}
	add("account:", c.AccountID, false)
	add("email:", c.Email, true)
	add("project:", c.ProjectID, false)
	for _, tok := range []string{c.Access, c.Refresh} {
		claims := JWTClaims(tok)
		if claims == nil {
			continue
		}
		add("email:", claimString(claims, "email"), true)
		if prof, ok := claims["https://api.openai.com/profile"].(map[string]any); ok {
			add("email:", claimString(prof, "email"), true)
		}
		acct := ""
		for _, k := range []string{"account_id", "accountId", "user_id", "sub"} {
			if s, ok := claims[k].(string); ok {
				acct = s
				break
			}
		}
		if acct == "" {
			if auth, ok := claims["https://api.openai.com/auth"].(map[string]any); ok {
				acct, _ = auth["chatgpt_account_id"].(string)
			}
		}
		add("account:", acct, false)
	}
	first := func(prefix string) string {
		for _, id := range ids {
			if strings.HasPrefix(id, prefix) {
				return id
			}
		}
		return ""
	}
	if provider == "openai-codex" || provider == "anthropic" {
		return first("email:")
	}
	for _, p := range []string{"account:", "email:", "project:"} {
		if id := first(p); id != "" {
			return id
		}
	}
	return ""
}

func claimString(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// JWTClaims decodes the payload of a three-part JWT without verifying it.
// It returns nil when tok is not a JWT with a JSON object payload.
func JWTClaims(tok string) map[string]any {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[1] == "" {
		return nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	var claims map[string]any
	if json.Unmarshal(payload, &claims) != nil {
		return nil
	}
	return claims
}
