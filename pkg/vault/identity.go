package vault

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
)

// IdentityKey computes the credential's identity key with the 18.1.21 rule:
// the key upserts and dedupe match on and the
// vault stores in identity_key. It returns "" (JSON null) for API keys and
// OAuth credentials without a derivable identity.
func IdentityKey(provider string, c Credential) string {
	if c.Type != TypeOAuth {
		return ""
	}
	return identityFrom(provider, Identifiers(c))
}

// Identifiers returns the identifiers of an OAuth credential in the
// reference's insertion order, without duplicates: account:, email:,
// project:, org: (from the orgId field only), then the claims of the access
// and refresh tokens when they are JWTs.
func Identifiers(c Credential) []string {
	if c.Type != TypeOAuth {
		return nil
	}
	ids := make([]string, 0, 4)
	add := func(prefix, v string, lower bool) {
		v = strings.TrimSpace(v)
		if lower {
			v = strings.ToLower(v)
		}
		if v == "" {
			return
		}
		id := prefix + v
		for _, have := range ids {
			if have == id {
				return
			}
		}
		ids = append(ids, id)
	}
	add("account:", c.AccountID, false)
	add("email:", c.Email, true)
	add("project:", c.ProjectID, false)
	add("org:", c.OrgID(), false)
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
	return ids
}

func firstWith(ids []string, prefix string) string {
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			return id
		}
	}
	return ""
}

// orgScoped reports whether provider's identity keys carry the org
// qualifier (18.1.21: anthropic and openai-codex only).
func orgScoped(provider string) bool { return provider == "openai-codex" || provider == "anthropic" }

func identityFrom(provider string, ids []string) string {
	if orgScoped(provider) {
		base := firstWith(ids, "email:")
		if base == "" {
			base = firstWith(ids, "account:")
		}
		if base == "" {
			base = firstWith(ids, "project:")
		}
		org := firstWith(ids, "org:")
		switch {
		case base != "" && org != "":
			return base + "|" + org
		case base != "":
			return base
		}
		return org
	}
	for _, p := range []string{"account:", "email:", "project:"} {
		if id := firstWith(ids, p); id != "" {
			return id
		}
	}
	return ""
}

// ReplacementMatch reports whether an existing OAuth row (credential
// existing, identity key existingKey: stored trimmed, else recomputed) is
// the same subscription as the incoming OAuth credential, by the 18.1.21
// matcher: equal non-null keys, or the one-way org upgrade
// when the incoming key is org-qualified. incomingKey and incomingIDs are
// IdentityKey and Identifiers of incoming.
func ReplacementMatch(existing Credential, existingKey, incomingKey string, incomingIDs []string) bool {
	if existing.Type != TypeOAuth || incomingKey == "" {
		return false
	}
	if incomingKey == existingKey {
		return true
	}
	if existingKey == "" {
		return false
	}
	org := firstWith(incomingIDs, "org:")
	if org == "" {
		return false
	}
	if incomingKey != org && !strings.HasSuffix(incomingKey, "|"+org) {
		return false
	}
	if existingKey == org {
		return true
	}
	var existingIDs []string
	if strings.HasSuffix(existingKey, "|"+org) {
		existingIDs = Identifiers(existing)
	}
	orgValue := strings.TrimPrefix(org, "org:")
	for _, id := range incomingIDs {
		if !isBaseIdentifier(id) {
			continue
		}
		if _, v, _ := strings.Cut(id, ":"); v == orgValue {
			continue // Codex workspace id repeated as account: no per-user identity
		}
		if existingKey == id || existingKey == id+"|"+org {
			return true
		}
		for _, e := range existingIDs {
			if e == id {
				return true
			}
		}
	}
	return false
}

// OrgUpgradeCandidates returns the identity keys an existing row may hold
// for ReplacementMatch to match incoming by the org upgrade, beyond
// incomingKey itself: org:<o>, each base b and b|org:<o>. Rows keyed
// "…|org:<o>" on another base must be checked by scanning (the key alone
// does not say whether they share a base). nil when incoming is not
// org-qualified.
func OrgUpgradeCandidates(incomingKey string, incomingIDs []string) (keys []string, org string) {
	org = firstWith(incomingIDs, "org:")
	if org == "" || (incomingKey != org && !strings.HasSuffix(incomingKey, "|"+org)) {
		return nil, ""
	}
	keys = append(keys, org)
	orgValue := strings.TrimPrefix(org, "org:")
	for _, id := range incomingIDs {
		if !isBaseIdentifier(id) {
			continue
		}
		if _, v, _ := strings.Cut(id, ":"); v == orgValue {
			continue
		}
		keys = append(keys, id, id+"|"+org)
	}
	return keys, org
}

func isBaseIdentifier(id string) bool {
	return strings.HasPrefix(id, "email:") || strings.HasPrefix(id, "account:") || strings.HasPrefix(id, "project:")
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

// APIKeyMatchKey is what two API keys of provider are compared on by
// upserts: the key itself, except for the structured
// login keys of alibaba-token-plan and cloudflare-ai-gateway (18.1.21),
// which match on the token they embed. The result is a secret.
func APIKeyMatchKey(provider, key string) string {
	var tok string
	switch provider {
	case "alibaba-token-plan":
		tok = structuredToken(key, func(t string) bool { return alibabaToken().MatchString(t) })
	case "cloudflare-ai-gateway":
		tok = structuredToken(key, func(string) bool { return true })
	default:
		return key
	}
	if tok == "" {
		return "raw:" + key
	}
	return "token:" + tok
}

var alibabaToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sk-[A-Za-z0-9._~+/-]+={0,2}$`) })

// structuredToken parses a plain token or {"token": …, …} as the reference
// does; "" when the key does not parse.
func structuredToken(key string, valid func(string) bool) string {
	t := strings.TrimSpace(key)
	if t == "" {
		return ""
	}
	if !strings.HasPrefix(t, "{") {
		if valid(t) {
			return t
		}
		return ""
	}
	var m map[string]any
	if json.Unmarshal([]byte(t), &m) != nil || m == nil {
		return ""
	}
	s, ok := m["token"].(string)
	if !ok || strings.TrimSpace(s) == "" || !valid(strings.TrimSpace(s)) {
		return ""
	}
	for _, k := range []string{"accountId", "gatewayId", "cookie", "baseUrl"} {
		if v, ok := m[k]; ok {
			if _, isStr := v.(string); !isStr {
				return ""
			}
		}
	}
	return strings.TrimSpace(s)
}
