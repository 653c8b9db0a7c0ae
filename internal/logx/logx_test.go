package logx_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/logx"
)

func TestParse(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name          string
		level, format string
		env           map[string]string
		want          logx.Options
	}{
		{"defaults", "", "", nil, logx.Options{Level: slog.LevelInfo}},
		{"flags", "debug", "json", nil, logx.Options{Level: slog.LevelDebug, JSON: true}},
		{"case and spaces", " WARN ", "Text", nil, logx.Options{Level: slog.LevelWarn}},
		{"environment", "", "", map[string]string{logx.EnvLevel: "error", logx.EnvFormat: "json"}, logx.Options{Level: slog.LevelError, JSON: true}},
		{"the flag wins", "debug", "text", map[string]string{logx.EnvLevel: "error", logx.EnvFormat: "json"}, logx.Options{Level: slog.LevelDebug}},
		{"a bad variable under a flag is not read", "info", "", map[string]string{logx.EnvLevel: "loud"}, logx.Options{Level: slog.LevelInfo}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := logx.Parse(tt.level, tt.format, env(tt.env))
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q, %q) = %+v, %v; want %+v", tt.level, tt.format, got, err, tt.want)
			}
		})
	}
}

func TestParseNamesTheBadValue(t *testing.T) {
	tests := []struct {
		level, format string
		env           map[string]string
		want          string
	}{
		{"loud", "", nil, `invalid --log-level "loud": want debug, info, warn or error`},
		{"", "xml", nil, `invalid --log-format "xml": want text or json`},
		{"", "", map[string]string{logx.EnvLevel: "trace"}, `invalid OMP_LOG_LEVEL "trace": want debug, info, warn or error`},
		{"", "", map[string]string{logx.EnvFormat: "logfmt"}, `invalid OMP_LOG_FORMAT "logfmt": want text or json`},
	}
	for _, tt := range tests {
		_, err := logx.Parse(tt.level, tt.format, func(k string) string { return tt.env[k] })
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q, %q, %v): %v, want %q", tt.level, tt.format, tt.env, err, tt.want)
		}
	}
}

func TestNewWritesJSONLinesAtTheLevel(t *testing.T) {
	var out bytes.Buffer
	log, err := logx.New("warn", "json", nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("dropped")
	log.Warn("kept", "n", 1)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %q, want one line", out.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec["msg"] != "kept" || rec["level"] != "WARN" || rec["n"] != 1.0 {
		t.Fatalf("line %q: %v", lines[0], err)
	}
}

func TestBufferedWarnLoggerStaysAtWarn(t *testing.T) {
	var out bytes.Buffer
	o, err := logx.Parse("debug", "text", nil)
	if err != nil {
		t.Fatal(err)
	}
	log, warn, b := o.Buffered(&out)
	log.Debug("debug line")
	warn.Info("info from the warn logger")
	warn.Warn("warning")
	b.Close()
	got := out.String()
	if !strings.Contains(got, "debug line") || !strings.Contains(got, "warning") || strings.Contains(got, "info from the warn logger") {
		t.Fatalf("got %q", got)
	}
	if strings.Index(got, "debug line") > strings.Index(got, "warning") {
		t.Fatalf("lines out of order: %q", got)
	}
}
