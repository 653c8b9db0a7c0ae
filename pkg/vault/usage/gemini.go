package usage

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// GeminiDefaultBase is the Cloud Code Assist base of google-gemini-cli.
const GeminiDefaultBase = provider.CodeAssistURL

// geminiHeaders are the Gemini CLI identity headers sent with every call.
var geminiHeaders = map[string]string{
	"User-Agent":      provider.GeminiCLIUsageUserAgent,
	"Client-Metadata": "ideType=IDE_UNSPECIFIED,platform=PLATFORM_UNSPECIFIED,pluginType=GEMINI",
}

// Gemini probes Cloud Code Assist quotas for google-gemini-cli OAuth
// credentials (loadCodeAssist, then retrieveUserQuota).
type Gemini struct{}

// ID returns "google-gemini-cli".
func (Gemini) ID() string { return "google-gemini-cli" }

// Supports accepts OAuth credentials with an access token.
func (Gemini) Supports(c vault.Credential) bool { return c.Type == vault.TypeOAuth && c.Access != "" }

// Fetch runs loadCodeAssist (to learn the project and tier) and
// retrieveUserQuota.
func (Gemini) Fetch(ctx context.Context, r Request) (*vault.UsageReport, error) {
	c := r.Credential
	now := r.nowMs()
	if c.Type != vault.TypeOAuth || c.Access == "" || (c.Expires != 0 && c.Expires <= now) {
		return nil, nil
	}
	base := trimBase(r.BaseURL)
	if base == "" {
		base = GeminiDefaultBase
	}
	headers := map[string]string{"Authorization": "Bearer " + c.Access, "Content-Type": "application/json"}
	for k, v := range geminiHeaders {
		headers[k] = v
	}
	loadBody := map[string]any{"metadata": map[string]string{"ideType": "IDE_UNSPECIFIED", "platform": "PLATFORM_UNSPECIFIED", "pluginType": "GEMINI"}}
	if c.ProjectID != "" {
		loadBody["cloudaicompanionProject"] = c.ProjectID
	}
	b, _ := json.Marshal(loadBody)
	load, _, err := getJSON(ctx, r, http.MethodPost, base+"/v1internal:loadCodeAssist", headers, b)
	if err != nil {
		r.logger().Warn("Gemini CLI loadCodeAssist failed", "error", err)
	}
	lm := object(load)
	project := c.ProjectID
	if project == "" {
		if s, ok := lm["cloudaicompanionProject"].(string); ok {
			project = s
		} else {
			project = str(object(lm["cloudaicompanionProject"])["id"])
		}
	}
	qb := []byte("{}")
	if project != "" {
		qb, _ = json.Marshal(map[string]string{"project": project})
	}
	quota, _, err := getJSON(ctx, r, http.MethodPost, base+"/v1internal:retrieveUserQuota", headers, qb)
	if err != nil {
		r.logger().Warn("Gemini CLI retrieveUserQuota failed", "error", err)
		return nil, err
	}
	rep := GeminiReport(quota, now, c.AccountID, project)
	tier := object(lm["currentTier"])
	setMeta(rep.Metadata, "currentTierId", str(tier["id"]))
	setMeta(rep.Metadata, "currentTierName", str(tier["name"]))
	setMeta(rep.Metadata, "email", strings.TrimSpace(c.Email))
	return rep, nil
}

// GeminiReport converts a retrieveUserQuota payload into a report.
func GeminiReport(payload any, now int64, accountID, projectID string) *vault.UsageReport {
	rep := &vault.UsageReport{Provider: "google-gemini-cli", FetchedAt: now, Limits: []vault.UsageLimit{}, Metadata: map[string]any{}, Raw: payload}
	for _, item := range array(object(payload)["buckets"]) {
		bm := object(item)
		if bm == nil {
			continue
		}
		model := str(bm["modelId"])
		win := &vault.UsageWindow{ID: "quota", Label: "Quota window", ResetsAt: parseISO(bm["resetTime"])}
		amount := vault.UsageAmount{Unit: "percent"}
		if rf, ok := number(bm["remainingFraction"]); ok {
			rem := clamp(rf, 0, 1)
			used := clamp(1-rem, 0, 1)
			amount = vault.UsageAmount{Unit: "percent", Used: ptr(math.Round(used*1000) / 10), Remaining: ptr(math.Round(rem*1000) / 10),
				Limit: ptr(100.0), UsedFraction: ptr(used), RemainingFraction: ptr(rem)}
		}
		label, id := "Gemini quota", "unknown:quota"
		if model != "" {
			label, id = "Gemini "+model, model+":quota"
		}
		rep.Limits = append(rep.Limits, vault.UsageLimit{ID: id, Label: label, Window: win, Amount: amount,
			Scope: vault.UsageScope{Provider: "google-gemini-cli", AccountID: accountID, ProjectID: projectID, ModelID: model, WindowID: win.ID}})
	}
	return rep
}
