package api

import (
	"encoding/json"

	"github.com/ompgo/omp/pkg/vault"
)

// CredentialBlock is the wire form of a block: the body of
// POST /v1/credential/:id/block and an item of a snapshot entry's blocks.
type CredentialBlock struct {
	ProviderKey    string `json:"providerKey"`
	BlockScope     string `json:"blockScope"`
	BlockedUntilMs int64  `json:"blockedUntilMs"`
	UpdatedAtMs    int64  `json:"updatedAtMs,omitempty"`
}

// WireBlock is the wire form of b.
func WireBlock(b vault.CredentialBlock) CredentialBlock {
	return CredentialBlock{ProviderKey: b.ProviderKey, BlockScope: b.Scope, BlockedUntilMs: b.UntilMs, UpdatedAtMs: b.UpdatedAtMs}
}

// Block is the domain form of w.
func (w CredentialBlock) Block() vault.CredentialBlock {
	return vault.CredentialBlock{ProviderKey: w.ProviderKey, Scope: w.BlockScope, UntilMs: w.BlockedUntilMs, UpdatedAtMs: w.UpdatedAtMs}
}

// ObservedUsageEntry is one entry of a ClientUsageReport.
type ObservedUsageEntry struct {
	At               int64   `json:"at"`
	Provider         string  `json:"provider"`
	Model            string  `json:"model"`
	Requests         int64   `json:"requests"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	CostUsd          float64 `json:"costUsd"`
	// CredentialID names the credential that served the usage (0 = not
	// named, omitted). PostObserved sends it only to a broker that
	// announced ObservedCredentialIDs.
	CredentialID int64 `json:"credentialId,omitempty"`
}

// ClientUsageReport is the body of POST /v1/usage/observed. Empty Hostname
// and App are omitted (brokers 17.1.2–18.0.6 reject the app key).
type ClientUsageReport struct {
	InstallID string               `json:"installId"`
	Hostname  string               `json:"hostname,omitempty"`
	App       string               `json:"app,omitempty"`
	Entries   []ObservedUsageEntry `json:"entries"`
}

// UsageClients is the GET /v1/usage/clients answer.
type UsageClients struct {
	GeneratedAt int64                 `json:"generatedAt"`
	Clients     []vault.ClientSummary `json:"clients"`
}

// DisabledCredential is one tombstone: identity fields
// only for OAuth rows that have them, never token material.
type DisabledCredential struct {
	ID           int64  `json:"id"`
	Provider     string `json:"provider"`
	Type         string `json:"type"`
	Cause        string `json:"cause"`
	Email        string `json:"email,omitempty"`
	AccountID    string `json:"accountId,omitempty"`
	OrgID        string `json:"orgId,omitempty"`
	OrgName      string `json:"orgName,omitempty"`
	DisabledAtMs int64  `json:"disabledAtMs,omitempty"`
}

// NewDisabledCredential is the tombstone of a disabled record.
func NewDisabledCredential(r vault.Record) DisabledCredential {
	d := DisabledCredential{ID: r.ID, Provider: r.Provider, Type: string(r.Credential.Type), Cause: r.DisabledCause}
	if !r.UpdatedAt.IsZero() {
		d.DisabledAtMs = r.UpdatedAt.Unix() * 1000
	}
	if r.Credential.IsOAuth() {
		c := r.Credential
		d.Email, d.AccountID = c.Email, c.AccountID
		_ = json.Unmarshal(c.Extra["orgId"], &d.OrgID)
		_ = json.Unmarshal(c.Extra["orgName"], &d.OrgName)
	}
	return d
}

// DisabledList is the GET /v1/credentials/disabled answer.
type DisabledList struct {
	GeneratedAt int64                `json:"generatedAt"`
	Disabled    []DisabledCredential `json:"disabled"`
}
