package cliproxy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func TestParse(t *testing.T) {
	const exp = "2026-09-01T18:00:00Z"
	tests := []struct {
		name     string
		file     string
		json     string
		opts     Options
		want     Entry // File defaults to the test file name
		wantSkip string
	}{
		// The five mapped CLIProxyAPI types.
		{name: "claude", file: "claude-a@b.c.json",
			json: `{"type":"claude","access_token":"sk-ant-oat01-x","refresh_token":"sk-ant-ort01-y","id_token":"","email":"a@b.c","last_refresh":"2026-09-01T10:00:00Z","expired":"2026-09-01T18:00:00Z","account_uuid":"u"}`,
			want: Entry{Provider: "anthropic", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "sk-ant-oat01-x", Refresh: "sk-ant-ort01-y", Expires: ms(exp), Email: "a@b.c"}}},
		{name: "codex with account id", file: "codex-a@b.c.json",
			json: `{"type":"codex","id_token":"eyJ","access_token":"eyJa","refresh_token":"rt_1","account_id":"acc-1","email":"a@b.c","last_refresh":"2026-09-01T10:00:00Z","expired":"2026-09-11T10:00:00+02:00"}`,
			want: Entry{Provider: "openai-codex", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "eyJa", Refresh: "rt_1", Expires: ms("2026-09-11T08:00:00Z"), Email: "a@b.c", AccountID: "acc-1"}}},
		{name: "antigravity with project id", file: "antigravity-x.json",
			json: `{"type":"antigravity","access_token":"ya29.a","refresh_token":"1//r","expires_in":3599,"timestamp":1788000000000,"expired":"2026-09-01T11:00:00Z","email":"a@gmail.com","project_id":"proj-1"}`,
			want: Entry{Provider: "google-antigravity", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "ya29.a", Refresh: "1//r", Expires: ms("2026-09-01T11:00:00Z"), Email: "a@gmail.com", ProjectID: "proj-1"}}},
		{name: "gemini legacy nested token", file: "gemini-a@gmail.com-proj.json",
			json: `{"type":"gemini","token":{"access_token":"ya29.n","token_type":"Bearer","refresh_token":"1//n","expiry":"2026-05-01T11:00:00.123Z","client_id":"c","client_secret":"s","scopes":["x"]},"project_id":"proj-g","email":"a@gmail.com","auto":false,"checked":true}`,
			want: Entry{Provider: "google-gemini-cli", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "ya29.n", Refresh: "1//n", Expires: ms("2026-05-01T11:00:00.123Z"), Email: "a@gmail.com", ProjectID: "proj-g"}}},
		{name: "gemini-cli capital Token object", file: "x.json",
			json: `{"type":"gemini-cli","Token":{"access_token":"a","refresh_token":"r","expiry":"2026-05-01T11:00:00+00:00"},"email":"e@x"}`,
			want: Entry{Provider: "google-gemini-cli", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms("2026-05-01T11:00:00Z"), Email: "e@x"}}},

		// Unmapped types: skipped without --provider, accepted with it when they carry tokens.
		{name: "kimi skipped without provider", file: "kimi-1.json",
			json:     `{"type":"kimi","access_token":"a","refresh_token":"r","token_type":"Bearer","expired":"2026-09-01T18:00:00Z"}`,
			wantSkip: "cannot determine omp provider from type=kimi (pass --provider to override)"},
		{name: "kimi with provider", file: "kimi-1.json", opts: Options{Provider: "kimi-code"},
			json: `{"type":"kimi","access_token":"a","refresh_token":"r","device_id":"d","expired":"2026-09-01T18:00:00Z"}`,
			want: Entry{Provider: "kimi-code", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "xai skipped without provider", file: "xai-a.json",
			json:     `{"type":"xai","access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z"}`,
			wantSkip: "cannot determine omp provider from type=xai (pass --provider to override)"},
		{name: "xai with provider", file: "xai-a.json", opts: Options{Provider: "xai-oauth"},
			json: `{"type":"xai","access_token":"a","refresh_token":"r","id_token":"i","expired":"2026-09-01T18:00:00Z","email":"x@x","sub":"s"}`,
			want: Entry{Provider: "xai-oauth", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp), Email: "x@x"}}},
		{name: "vertex skipped without provider", file: "vertex-p.json",
			json:     `{"type":"vertex","service_account":{"private_key":"k"},"project_id":"p","email":"sa@p"}`,
			wantSkip: "cannot determine omp provider from type=vertex (pass --provider to override)"},
		{name: "vertex has no tokens even with provider", file: "vertex-p.json", opts: Options{Provider: "google-vertex"},
			json:     `{"type":"vertex","service_account":{"private_key":"k"},"project_id":"p","email":"sa@p"}`,
			wantSkip: ReasonMissingTokens},
		{name: "qwen skipped without provider", file: "qwen-a.json",
			json:     `{"type":"qwen","access_token":"a","refresh_token":"r","resource_url":"u","expired":"2026-09-01T18:00:00Z"}`,
			wantSkip: "cannot determine omp provider from type=qwen (pass --provider to override)"},
		{name: "qwen with provider", file: "qwen-a.json", opts: Options{Provider: "qwen-portal"},
			json: `{"type":"qwen","access_token":"a","refresh_token":"r","resource_url":"u","email":"q@q","expired":"2026-09-01T18:00:00Z"}`,
			want: Entry{Provider: "qwen-portal", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp), Email: "q@q"}}},
		{name: "iflow skipped without provider", file: "iflow-a.json",
			json:     `{"type":"iflow","access_token":"a","refresh_token":"r","api_key":"k","expired":"2026-09-01T18:00:00Z"}`,
			wantSkip: "cannot determine omp provider from type=iflow (pass --provider to override)"},
		{name: "iflow with provider", file: "iflow-a.json", opts: Options{Provider: "iflow"},
			json: `{"type":"iflow","access_token":"a","refresh_token":"r","api_key":"k","cookie":"c","expired":"2026-09-01 18:00:00"}`,
			want: Entry{Provider: "iflow", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "gitlab skipped without provider", file: "gitlab-u.json",
			json:     `{"type":"gitlab","auth_method":"oauth","access_token":"a","refresh_token":"r","oauth_expires_at":"2026-09-01T18:00:00Z"}`,
			wantSkip: "cannot determine omp provider from type=gitlab (pass --provider to override)"},
		{name: "gitlab with provider reads oauth_expires_at", file: "gitlab-u.json", opts: Options{Provider: "gitlab-duo"},
			json: `{"type":"gitlab","auth_method":"oauth","base_url":"https://gitlab.com","access_token":"a","refresh_token":"r","oauth_expires_at":"2026-09-01T18:00:00Z","username":"u","email":"g@g"}`,
			want: Entry{Provider: "gitlab-duo", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp), Email: "g@g"}}},
		{name: "github-copilot skipped without provider", file: "github-copilot-u.json",
			json:     `{"type":"github-copilot","username":"u","access_token":"gho_x","token_type":"bearer","api_token_expires_at":1788000000}`,
			wantSkip: "cannot determine omp provider from type=github-copilot (pass --provider to override)"},
		{name: "github-copilot has no refresh token even with provider", file: "github-copilot-u.json", opts: Options{Provider: "github-copilot"},
			json:     `{"type":"github-copilot","username":"u","access_token":"gho_x","token_type":"bearer","api_token_expires_at":1788000000}`,
			wantSkip: ReasonMissingTokens},

		// Reference skip order and texts.
		{name: "invalid JSON", file: "claude.json", json: `{"type":`, wantSkip: "unreadable JSON: unexpected end of JSON input"},
		{name: "empty file", file: "claude.json", json: ``, wantSkip: "unreadable JSON: unexpected end of JSON input"},
		{name: "trailing garbage", file: "claude.json", json: `{} x`, wantSkip: "unreadable JSON: invalid character 'x' after top-level value"},
		{name: "disabled checked before provider", file: "x.json", json: `{"disabled":true}`, wantSkip: ReasonDisabled},
		{name: "disabled must be boolean true", file: "claude.json", json: `{"disabled":"true","access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z"}`,
			want: Entry{Provider: "anthropic", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "disabled included on request", file: "claude.json", opts: Options{IncludeDisabled: true},
			json: `{"disabled":true,"type":"claude","access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z"}`,
			want: Entry{Provider: "anthropic", Disabled: true, Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "no type shows ?", file: "unknown.json", json: `{"access_token":"a"}`,
			wantSkip: "cannot determine omp provider from type=? (pass --provider to override)"},
		{name: "null type shows ?", file: "unknown.json", json: `{"type":null}`,
			wantSkip: "cannot determine omp provider from type=? (pass --provider to override)"},
		{name: "empty type shown empty", file: "unknown.json", json: `{"type":""}`,
			wantSkip: "cannot determine omp provider from type= (pass --provider to override)"},
		{name: "raw untrimmed type shown", file: "unknown.json", json: `{"type":" Kimi "}`,
			wantSkip: "cannot determine omp provider from type= Kimi  (pass --provider to override)"},
		{name: "numeric type shown as JS would", file: "unknown.json", json: `{"type":5}`,
			wantSkip: "cannot determine omp provider from type=5 (pass --provider to override)"},
		{name: "type trimmed and lowercased for the map", file: "x.json",
			json: `{"type":" CLAUDE ","access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z"}`,
			want: Entry{Provider: "anthropic", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "filename fallback for an unmapped type", file: "/dir/Codex-me@x.json",
			json: `{"type":"kimi","access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z"}`,
			want: Entry{Provider: "openai-codex", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "filename fallback exact key", file: "antigravity.json",
			json: `{"access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z"}`,
			want: Entry{Provider: "google-antigravity", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "filename fallback needs the dash", file: "claudex.json", json: `{"access_token":"a"}`,
			wantSkip: "cannot determine omp provider from type=? (pass --provider to override)"},
		{name: "override used verbatim", file: "claude.json", opts: Options{Provider: "custom"},
			json: `{"type":"claude","access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z"}`,
			want: Entry{Provider: "custom", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "missing refresh token", file: "claude.json", json: `{"access_token":"a","expired":"x"}`, wantSkip: ReasonMissingTokens},
		{name: "empty access token", file: "claude.json", json: `{"access_token":"","refresh_token":"r"}`, wantSkip: ReasonMissingTokens},
		{name: "non-string tokens are missing", file: "claude.json", json: `{"access_token":1,"refresh_token":"r"}`, wantSkip: ReasonMissingTokens},
		{name: "missing expiry", file: "claude.json", json: `{"access_token":"a","refresh_token":"r"}`, wantSkip: "cannot parse expired=?"},
		{name: "null expiry", file: "claude.json", json: `{"access_token":"a","refresh_token":"r","expired":null}`, wantSkip: "cannot parse expired=?"},
		{name: "empty expiry", file: "claude.json", json: `{"access_token":"a","refresh_token":"r","expired":""}`, wantSkip: "cannot parse expired="},
		{name: "garbage expiry quoted", file: "claude.json", json: `{"access_token":"a","refresh_token":"r","expired":"soon"}`, wantSkip: "cannot parse expired=soon"},
		{name: "boolean expiry quoted", file: "claude.json", json: `{"access_token":"a","refresh_token":"r","expired":false}`, wantSkip: "cannot parse expired=false"},
		{name: "non-object document", file: "claude.json", json: `[1,2]`, wantSkip: ReasonMissingTokens},
		{name: "null document", file: "unknown.json", json: `null`,
			wantSkip: "cannot determine omp provider from type=? (pass --provider to override)"},
		{name: "empty identity strings dropped", file: "claude.json",
			json: `{"access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z","email":"","account_id":"","project_id":""}`,
			want: Entry{Provider: "anthropic", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: ms(exp)}}},
		{name: "top-level tokens win over nested", file: "gemini.json",
			json: `{"access_token":"top","refresh_token":"rtop","token":{"access_token":"n","refresh_token":"rn","expiry":"2026-09-01T18:00:00Z"}}`,
			want: Entry{Provider: "google-gemini-cli", Credential: vault.Credential{Type: vault.TypeOAuth, Access: "top", Refresh: "rtop", Expires: ms(exp)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.json), tt.file, tt.opts)
			if tt.wantSkip != "" {
				var se *SkipError
				if !errors.As(err, &se) || se.Reason != tt.wantSkip {
					t.Fatalf("err = %v, want skip %q", err, tt.wantSkip)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected skip: %v", err)
			}
			want := tt.want
			want.File = tt.file
			if got.Provider != want.Provider || got.Disabled != want.Disabled || got.File != want.File || !got.Credential.Equal(want.Credential) {
				t.Fatalf("got  %+v %+v\nwant %+v %+v", got, got.Credential.Expires, want, want.Credential.Expires)
			}
			if err := got.Credential.Validate(); err != nil {
				t.Fatalf("imported credential invalid: %v", err)
			}
		})
	}
}

func TestExpiryAliases(t *testing.T) {
	want := ms("2026-09-01T18:00:00Z")
	for _, key := range []string{"expired", "expire", "expires_at", "expiresAt", "expiry", "expires"} {
		for _, nest := range []string{"", "token", "Token"} {
			name := key
			body := `"` + key + `":"2026-09-01T18:00:00Z"`
			if nest != "" {
				name = nest + "." + key
				body = `"` + nest + `":{` + body + `}`
			}
			t.Run(name, func(t *testing.T) {
				e, err := Parse([]byte(`{"access_token":"a","refresh_token":"r",`+body+`}`), "claude.json", Options{})
				if err != nil || e.Credential.Expires != want {
					t.Fatalf("got %d, %v; want %d", e.Credential.Expires, err, want)
				}
			})
		}
	}
}

func TestExpiryLookupOrder(t *testing.T) {
	tests := []struct {
		name, body string
		want       int64
	}{
		{"expired beats later aliases", `"expired":"2026-01-01T00:00:00Z","expiry":"2027-01-01T00:00:00Z"`, ms("2026-01-01T00:00:00Z")},
		{"first alias in order wins", `"expires":"2027-01-01T00:00:00Z","expire":"2026-02-01T00:00:00Z"`, ms("2026-02-01T00:00:00Z")},
		{"top level beats nested", `"token":{"expired":"2027-01-01T00:00:00Z"},"expires_at":"2026-03-01T00:00:00Z"`, ms("2026-03-01T00:00:00Z")},
		{"unparsable alias falls through", `"expired":"n/a","expiry":"2026-04-01T00:00:00Z"`, ms("2026-04-01T00:00:00Z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse([]byte(`{"access_token":"a","refresh_token":"r",`+tt.body+`}`), "claude.json", Options{})
			if err != nil || e.Credential.Expires != tt.want {
				t.Fatalf("got %d, %v; want %d", e.Credential.Expires, err, tt.want)
			}
		})
	}
	// All aliases unparsable: the reason quotes "expired" as the reference does.
	_, err := Parse([]byte(`{"access_token":"a","refresh_token":"r","expired":"bad","expiry":"worse"}`), "claude.json", Options{})
	if err == nil || err.Error() != "cannot parse expired=bad" {
		t.Fatalf("err = %v", err)
	}
}

func TestParseExpiry(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want int64 // 0 = unparsable
	}{
		{"RFC3339 Z", "2026-09-01T18:00:00Z", ms("2026-09-01T18:00:00Z")},
		{"RFC3339 offset", "2026-09-01T20:00:00+02:00", ms("2026-09-01T18:00:00Z")},
		{"RFC3339 compact offset", "2026-09-01T20:00:00+0200", ms("2026-09-01T18:00:00Z")},
		{"fractional milliseconds", "2026-09-01T18:00:00.123Z", ms("2026-09-01T18:00:00.123Z")},
		{"fractional nanoseconds truncated to ms", "2026-09-01T18:00:00.123456789+00:00", ms("2026-09-01T18:00:00.123Z")},
		{"space layout with seconds (UTC)", "2026-09-01 18:00:00", ms("2026-09-01T18:00:00Z")},
		{"space layout with fraction", "2026-09-01 18:00:00.5", ms("2026-09-01T18:00:00.5Z")},
		{"space layout without seconds", "2026-09-01 18:00", ms("2026-09-01T18:00:00Z")},
		{"surrounding whitespace", " 2026-09-01T18:00:00Z ", ms("2026-09-01T18:00:00Z")},
		{"epoch seconds", float64(1788000000), 1788000000000},
		{"epoch milliseconds", float64(1788000000123), 1788000000123},
		{"fractional epoch seconds", 1788000000.5, 1788000000500},
		{"zero", float64(0), 0},
		{"negative", float64(-5), 0},
		{"absurdly large", 1e300, 0},
		{"garbage", "tomorrow", 0},
		{"empty", "", 0},
		{"bool", true, 0},
		{"nil", nil, 0},
		{"object", map[string]any{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseExpiry(tt.in)
			if ok != (tt.want != 0) || got != tt.want {
				t.Fatalf("ParseExpiry(%v) = %d, %v; want %d", tt.in, got, ok, tt.want)
			}
		})
	}
}

func TestJSString(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"s", "s"}, {true, "true"}, {float64(5), "5"}, {1.5, "1.5"}, {float64(1788000000000), "1788000000000"},
		{1e21, "1e+21"}, {1e-7, "1e-7"}, {[]any{"a", nil, float64(1)}, "a,,1"}, {map[string]any{}, "[object Object]"}, {nil, "null"},
	}
	for _, tt := range tests {
		if got := jsString(tt.in); got != tt.want {
			t.Errorf("jsString(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSkipReasonsNeverQuoteTokens(t *testing.T) {
	inputs := []string{
		`{"type":"kimi","access_token":"SECRET-A","refresh_token":"SECRET-R","expired":"x"}`,
		`{"type":"claude","access_token":"SECRET-A","refresh_token":"SECRET-R","expired":"bad"}`,
		`{"type":"claude","access_token":"SECRET-A","refresh_token":"SECRET-R"` + "\x01",
	}
	for _, in := range inputs {
		_, err := Parse([]byte(in), "f.json", Options{})
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Fatalf("err %v", err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"type":"claude","access_token":"a","refresh_token":"r","expired":"2026-09-01T18:00:00Z"}`,
		`{"type":"gemini","token":{"access_token":"a","refresh_token":"r","expiry":1788000000}}`,
		`{"disabled":true}`, `[]`, `null`, `{"type":5,"expired":[1,{}]}`, `{`,
	} {
		f.Add([]byte(s), "claude-x.json", "")
	}
	f.Fuzz(func(t *testing.T, data []byte, file, provider string) {
		e, err := Parse(data, file, Options{Provider: provider})
		if err != nil {
			var se *SkipError
			if !errors.As(err, &se) || se.Reason == "" {
				t.Fatalf("non-skip error %v", err)
			}
			return
		}
		if e.Provider == "" || e.Credential.Access == "" || e.Credential.Refresh == "" || e.Credential.Expires <= 0 {
			t.Fatalf("accepted incomplete entry %+v", e)
		}
		_ = Describe(e, time.Unix(0, 0))
	})
}

func BenchmarkParse(b *testing.B) {
	data := []byte(`{"type":"gemini","token":{"access_token":"ya29.n","token_type":"Bearer","refresh_token":"1//n","expiry":"2026-05-01T11:00:00.123Z","client_id":"c","client_secret":"s","scopes":["x"]},"project_id":"proj-g","email":"a@gmail.com","auto":false,"checked":true}`)
	for b.Loop() {
		if _, err := Parse(data, "gemini-a.json", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
