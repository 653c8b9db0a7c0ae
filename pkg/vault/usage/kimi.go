package usage

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// KimiDefaultBase is the Kimi Code API base (KIMI_CODE_BASE_URL overrides it
// through Service.URLs).
const KimiDefaultBase = provider.KimiBaseURL

const kimiVersion = provider.KimiVersion

// Kimi probes GET <base>/usages for kimi-code OAuth credentials.
type Kimi struct{}

// ID returns "kimi-code".
func (Kimi) ID() string { return "kimi-code" }

// Supports accepts OAuth credentials only.
func (Kimi) Supports(c vault.Credential) bool { return c.Type == vault.TypeOAuth }

// kimiHeaders are the Kimi CLI identity headers. The device id is a hash of
// the host name, so it is stable without writing a file.
func kimiHeaders() map[string]string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, host)
	if host == "" {
		host = "unknown"
	}
	sum := sha256.Sum256([]byte("omp-kimi-device:" + host))
	goos := runtime.GOOS
	if goos == "linux" {
		goos = "Linux"
	}
	return map[string]string{
		"User-Agent":         "KimiCLI/" + kimiVersion,
		"X-Msh-Platform":     "kimi_cli",
		"X-Msh-Version":      kimiVersion,
		"X-Msh-Device-Name":  host,
		"X-Msh-Device-Model": goos + " " + runtime.GOARCH,
		"X-Msh-Os-Version":   "unknown",
		"X-Msh-Device-Id":    hex.EncodeToString(sum[:16]),
	}
}

// Fetch calls GET <base>/usages.
func (Kimi) Fetch(ctx context.Context, r Request) (*vault.UsageReport, error) {
	c := r.Credential
	now := r.nowMs()
	if c.Type != vault.TypeOAuth || c.Access == "" || (c.Expires != 0 && c.Expires <= now) {
		return nil, nil
	}
	base := trimBase(r.BaseURL)
	if base == "" {
		base = KimiDefaultBase
	}
	headers := kimiHeaders()
	headers["Authorization"] = "Bearer " + c.Access
	url := base + "/usages"
	payload, _, err := getJSON(ctx, r, http.MethodGet, url, headers, nil)
	if err != nil {
		r.logger().Warn("Kimi usage request failed", "provider", r.Provider, "error", err)
		return nil, err
	}
	rep := KimiReport(payload, now, c.AccountID)
	if rep == nil {
		return nil, nil
	}
	rep.Metadata["endpoint"] = url
	setMeta(rep.Metadata, "email", strings.TrimSpace(c.Email))
	return rep, nil
}

type kimiRow struct {
	label                  string
	used, limit, remaining *float64
	resetsAt               *int64
	window                 *vault.UsageWindow
}

func kimiReset(m map[string]any, now int64) *int64 {
	for _, k := range []string{"reset_at", "resetAt", "reset_time", "resetTime"} {
		switch v := m[k].(type) {
		case string:
			if t := parseISO(v); t != nil {
				return t
			}
		case float64:
			if v > 1e12 {
				return ptr(int64(v))
			}
			return ptr(int64(math.Round(v * 1000)))
		}
	}
	for _, k := range []string{"reset_in", "resetIn", "ttl", "window"} {
		if s, ok := number(m[k]); ok {
			return ptr(now + int64(math.Round(s*1000)))
		}
	}
	return nil
}

func kimiDurationLabel(d float64, unit string) string {
	u := strings.ToUpper(unit)
	n := strconv.FormatFloat(d, 'f', -1, 64)
	switch {
	case strings.Contains(u, "MINUTE"):
		if d >= 60 && math.Mod(d, 60) == 0 {
			return strconv.FormatFloat(d/60, 'f', -1, 64) + "h limit"
		}
		return n + "m limit"
	case strings.Contains(u, "HOUR"):
		return n + "h limit"
	case strings.Contains(u, "DAY"):
		return n + "d limit"
	case strings.Contains(u, "SECOND"):
		return n + "s limit"
	}
	return ""
}

func kimiWindow(w map[string]any, now int64) *vault.UsageWindow {
	d, hasD := number(w["duration"])
	unit := str(w["timeUnit"])
	label := ""
	if hasD && unit != "" {
		label = kimiDurationLabel(d, unit)
	}
	resets := kimiReset(w, now)
	if !hasD && label == "" && resets == nil {
		return nil
	}
	var dur *int64
	if hasD {
		u := strings.ToUpper(unit)
		for _, m := range []struct {
			k  string
			ms float64
		}{{"MINUTE", 60_000}, {"HOUR", 3_600_000}, {"DAY", 86_400_000}, {"WEEK", 604_800_000}, {"SECOND", 1000}} {
			if strings.Contains(u, m.k) {
				dur = ptr(int64(d * m.ms))
				break
			}
		}
	}
	id := "default"
	if dur != nil {
		id = canonicalWindowID(*dur)
	}
	return &vault.UsageWindow{ID: id, Label: cmp.Or(label, "Usage window"), DurationMs: dur, ResetsAt: resets}
}

func canonicalWindowID(ms int64) string {
	switch {
	case ms > 0 && ms%dayMs == 0:
		return strconv.FormatInt(ms/dayMs, 10) + "d"
	case ms > 0 && ms%hourMs == 0:
		return strconv.FormatInt(ms/hourMs, 10) + "h"
	}
	if m := int64(math.Round(float64(ms) / 60_000)); m > 0 {
		return strconv.FormatInt(m, 10) + "m"
	}
	return "default"
}

func kimiRowOf(m map[string]any, def string, now int64) *kimiRow {
	limit, used, rem := numberPtr(m["limit"]), numberPtr(m["used"]), numberPtr(m["remaining"])
	if used == nil && rem != nil && limit != nil {
		used = ptr(*limit - *rem)
	}
	if used == nil && limit == nil {
		return nil
	}
	return &kimiRow{label: cmp.Or(str(m["name"]), str(m["title"]), def), used: used, limit: limit, remaining: rem, resetsAt: kimiReset(m, now)}
}

// KimiReport converts a /usages payload into a report; nil when it holds
// no usable row.
func KimiReport(payload any, now int64, accountID string) *vault.UsageReport {
	m := object(payload)
	if m == nil {
		return nil
	}
	var rows []*kimiRow
	if u := object(m["usage"]); u != nil {
		if row := kimiRowOf(u, "Weekly limit", now); row != nil {
			row.window = &vault.UsageWindow{ID: "7d", Label: "7 Day", ResetsAt: row.resetsAt}
			rows = append(rows, row)
		}
	}
	if tq := object(m["totalQuota"]); tq != nil {
		if row := kimiRowOf(tq, "Total quota", now); row != nil {
			row.window = kimiWindow(object(tq["window"]), now)
			rows = append(rows, row)
		}
	}
	for i, it := range array(m["limits"]) {
		item := object(it)
		if item == nil {
			continue
		}
		detail := object(item["detail"])
		if detail == nil {
			detail = item
		}
		w := object(item["window"])
		if w == nil {
			w = map[string]any{}
		}
		d, _ := number(w["duration"])
		label := cmp.Or(str(item["name"]), str(item["title"]), str(item["scope"]), str(detail["name"]), str(detail["title"]),
			kimiDurationLabel(d, str(w["timeUnit"])), "Limit #"+strconv.Itoa(i+1))
		if row := kimiRowOf(detail, label, now); row != nil {
			row.window = kimiWindow(w, now)
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	rep := &vault.UsageReport{Provider: "kimi-code", FetchedAt: now, Limits: []vault.UsageLimit{}, Raw: payload, Metadata: map[string]any{}}
	setMeta(rep.Metadata, "accountId", accountID)
	for i, row := range rows {
		win := row.window
		switch {
		case win != nil && win.ResetsAt == nil && row.resetsAt != nil:
			cp := *win
			cp.ResetsAt = row.resetsAt
			win = &cp
		case win == nil && row.resetsAt != nil:
			win = &vault.UsageWindow{ID: "default", Label: "Usage window", ResetsAt: row.resetsAt}
		}
		amount := vault.UsageAmount{Unit: "unknown", Limit: row.limit, Used: row.used, Remaining: row.remaining}
		if row.limit != nil && row.used != nil && *row.limit > 0 {
			amount.UsedFraction = ptr(clamp(*row.used / *row.limit, 0, 1))
			amount.RemainingFraction = ptr(clamp((*row.limit-*row.used) / *row.limit, 0, 1))
			if amount.Remaining == nil {
				amount.Remaining = ptr(*row.limit - *row.used)
			}
		}
		scope := vault.UsageScope{Provider: "kimi-code", AccountID: accountID, Shared: ptr(true)}
		if win != nil {
			scope.WindowID = win.ID
		}
		rep.Limits = append(rep.Limits, vault.UsageLimit{ID: "kimi-code:" + strconv.Itoa(i), Label: row.label, Scope: scope,
			Window: win, Amount: amount, Status: statusFor(amount.UsedFraction)})
	}
	return rep
}
