package cli

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

// TestCheckTextTerminalSafe: what the broker and the upstreams put in a
// credential's fields (emails, organisations, failure reasons) reaches the
// terminal as visible escapes, one line per credential.
func TestCheckTextTerminalSafe(t *testing.T) {
	no := false
	rows := []proxy.CredentialHealth{{ID: 7, Provider: "anthropic\x1b[2J", Type: "oauth", OK: &no,
		Email: "a@x\x1b]52;c;aGk=\x07", OrgName: "Org\u202e", Reason: "upstream said \x1b]0;pwned\x07\nline two\u009b"}}
	got, _ := checkText("http://b", false, rows)
	want := "broker: http://b\n\n" + `anthropic\x1b[2J` + " (1)\n" +
		"  FAIL     id=  7 oauth   " + `a@x\x1b]52;c;aGk=\x07 (Org\u202e) — upstream said \x1b]0;pwned\x07\nline two\u009b` + "\n\n" +
		"0 ok, 1 failed, 0 unverifiable, 1 total\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
