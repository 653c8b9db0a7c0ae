package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault/api"
)

// usage1834 is a GET /v1/usage answer as an 18.3.4 broker writes it: the
// shared-group scope, saved resets with credit detail, and fields this
// client does not know inside a report.
const usage1834 = `{"generatedAt":1767323045000,"reports":[
 {"provider":"google-antigravity","fetchedAt":1767323045000,"futureField":{"x":1},
  "limits":[{"id":"google-antigravity:anthropic:default:3p-weekly","label":"Claude & GPT (shared)",
   "scope":{"provider":"google-antigravity","windowId":"weekly","shared":true,"sharedGroup":"3p-weekly:weekly","later":"y"},
   "amount":{"unit":"percent","remainingFraction":0.2}}],
  "metadata":{"email":"g@x.io"}},
 {"provider":"anthropic","fetchedAt":1767323045000,"limits":[],
  "resetCredits":{"availableCount":3,"redeemableCount":2,"nextCreditId":"g-1","eligible":true,"reason":"cooldown",
   "cooldownUntil":"2026-01-03T00:00:00.000Z","newCounter":4,
   "credits":[{"id":"g-1","title":"Saved reset","program":"cedar_ember","remainingCount":2,"usable":true,"requiresLimit":false,
    "clears":["anthropic:5h"],"blocking":[],"usedFractions":{"anthropic:5h":1},"grantedAt":"2026-01-01T00:00:00.000Z",
    "expiresAt":"2026-02-01T00:00:00.000Z","status":"available","description":"unknown here"}]}}]}`

func TestDecodeUsageAcceptsNewReportFields(t *testing.T) {
	u, err := api.DecodeUsage(json.RawMessage(usage1834))
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Reports) != 2 {
		t.Fatalf("reports = %d", len(u.Reports))
	}
	if g := u.Reports[0].Limits[0].Scope; g.SharedGroup != "3p-weekly:weekly" || g.Shared == nil || !*g.Shared {
		t.Errorf("scope = %+v", g)
	}
	rc := u.Reports[1].ResetCredits
	if rc == nil || rc.AvailableCount != 3 || *rc.RedeemableCount != 2 || rc.NextCreditID != "g-1" || !*rc.Eligible ||
		rc.Reason != "cooldown" || rc.CooldownUntil != "2026-01-03T00:00:00.000Z" || len(rc.Credits) != 1 {
		t.Fatalf("resetCredits = %+v", rc)
	}
	c := rc.Credits[0]
	if c.ID != "g-1" || c.Program != "cedar_ember" || *c.RemainingCount != 2 || !*c.Usable || *c.RequiresLimit ||
		len(c.Clears) != 1 || c.Blocking == nil || c.UsedFractions["anthropic:5h"] != 1 || c.Status != "available" {
		t.Errorf("credit = %+v", c)
	}
	// Written again, the empty blocking list stays a list.
	b, _ := json.Marshal(c)
	if want := `"blocking":[]`; !json.Valid(b) || !strings.Contains(string(b), want) {
		t.Errorf("credit = %s, want %s", b, want)
	}
}

func TestDecodeUsageTopLevelIsStrict(t *testing.T) {
	for _, body := range []string{
		`{"reports":[]}`,
		`{"generatedAt":1,"reports":{}}`,
		`{"generatedAt":1,"reports":[{"fetchedAt":1,"limits":[]}]}`,
		`{"generatedAt":1,"reports":[{"provider":"anthropic","resetCredits":{"availableCount":"two"}}]}`,
	} {
		if _, err := api.DecodeUsage(json.RawMessage(body)); err == nil {
			t.Errorf("DecodeUsage(%s) = nil error", body)
		}
	}
}
