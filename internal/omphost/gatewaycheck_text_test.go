package omphost

import (
	"testing"

	"github.com/ompgo/omp/pkg/proxy"
)

func TestCheckText(t *testing.T) {
	yes, no := true, false
	rows := []proxy.CredentialHealth{
		{ID: 12, Provider: "openai-codex", Type: "oauth", OK: &no, Email: "a@x", RemoteRefresh: true, Reason: "oauth refresh failed: invalid_grant"},
		{ID: 3, Provider: "anthropic", Type: "oauth", OK: &yes, AccountID: "acct-1", OrgName: "Acme", Completion: &proxy.CompletionHealth{}},
		{ID: 4, Provider: "anthropic", Type: "oauth", OK: &yes, OrgID: "org-1", Completion: &proxy.CompletionHealth{OK: &no, Reason: "boom"}},
	}
	got, failed := checkText("http://b", true, rows)
	want := "broker: http://b [strict]\n\nanthropic (2)\n" +
		"  ok       [chat: skip] id=  3 oauth   acct-1 (Acme)\n" +
		"  ok       [chat: FAIL] id=  4 oauth   (no identity on credential) (org-1) — chat: boom\n\nopenai-codex (1)\n" +
		"  FAIL     id= 12 oauth   a@x [remote-refresh] — oauth refresh failed: invalid_grant\n\n" +
		"2 ok, 1 failed, 0 unverifiable, 1 chat-failed, 3 total\n"
	if got != want || !failed {
		t.Errorf("failed=%v\n got %q\nwant %q", failed, got, want)
	}
	got, failed = checkText("http://b", false, nil)
	if got != "broker: http://b\n\n0 ok, 0 failed, 0 unverifiable, 0 total\n" || failed {
		t.Errorf("empty: %q %v", got, failed)
	}
}
