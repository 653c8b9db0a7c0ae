package api

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/ompgo/omp/pkg/vault"
)

// Strict request decoders. Their messages are client-safe:
// they name keys, never echo values.

// decodeObject decodes raw as a JSON object with only the allowed keys.
func decodeObject(raw json.RawMessage, allowed ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, vault.Errorf(vault.EINVALID, "request body must be an object")
	}
	var extra []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		k := extra[0]
		if len(k) > 64 {
			k = k[:64] + "…"
		}
		return nil, vault.Errorf(vault.EINVALID, "%s must be removed (not an allowed key)", strconv.Quote(k))
	}
	return m, nil
}

// DecodeDisable decodes the body of POST /v1/credential/<id>/disable, {"cause"?: string}; an absent cause is "".
func DecodeDisable(raw json.RawMessage) (string, error) {
	m, err := decodeObject(raw, "cause")
	if err != nil {
		return "", err
	}
	c, ok := m["cause"]
	if !ok {
		return "", nil
	}
	var cause string
	if string(c) == "null" || json.Unmarshal(c, &cause) != nil {
		return "", vault.Errorf(vault.EINVALID, "cause must be a string")
	}
	return cause, nil
}

// DecodeUpload decodes the POST /v1/credential body, {"provider": string (min 1), "credential":
// WritableCredential}.
func DecodeUpload(raw json.RawMessage) (string, vault.Credential, error) {
	m, err := decodeObject(raw, "provider", "credential")
	if err != nil {
		return "", vault.Credential{}, err
	}
	var provider string
	if p, ok := m["provider"]; !ok || string(p) == "null" || json.Unmarshal(p, &provider) != nil || provider == "" {
		return "", vault.Credential{}, vault.Errorf(vault.EINVALID, "provider must be a non-empty string")
	}
	cred, err := vault.DecodeWritable(m["credential"])
	if err != nil {
		return "", vault.Credential{}, err
	}
	return provider, cred, nil
}

// DecodeStale decodes the body of POST /v1/usage/stale, {"provider"?:
// string} (an empty body reads as {}); an absent provider is "", every
// provider.
func DecodeStale(raw json.RawMessage) (string, error) {
	m, err := decodeObject(raw, "provider")
	if err != nil {
		return "", err
	}
	var provider string
	if p, ok := m["provider"]; ok && (string(p) == "null" || json.Unmarshal(p, &provider) != nil) {
		return "", vault.Errorf(vault.EINVALID, "provider must be a string (was %s)", jsonKind(p))
	}
	return provider, nil
}
