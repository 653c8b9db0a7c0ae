// Package logx builds a daemon's logger from its --log-level and
// --log-format flags, or from OMP_LOG_LEVEL and OMP_LOG_FORMAT when a flag
// is not given.
package logx

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/ompgo/omp/internal/logbuf"
)

// The environment variables read when the flag is not given.
const (
	EnvLevel  = "OMP_LOG_LEVEL"
	EnvFormat = "OMP_LOG_FORMAT"
)

// The usage lines of the two flags, the same in every daemon.
const (
	LevelUsage  = "log level: debug, info, warn or error (default $" + EnvLevel + ", else info)"
	FormatUsage = "log format: text or json (default $" + EnvFormat + ", else text)"
)

// Options are a parsed log level and format.
type Options struct {
	Level slog.Level
	JSON  bool
}

// Parse reads the --log-level and --log-format values. An empty value
// falls back to getenv's EnvLevel or EnvFormat, then to info and text. A
// value that is not one of the accepted ones is an error naming where it
// came from and what is accepted.
func Parse(level, format string, getenv func(string) string) (Options, error) {
	var o Options
	v, from := pick(level, "--log-level", EnvLevel, getenv)
	switch v {
	case "", "info":
		o.Level = slog.LevelInfo
	case "debug":
		o.Level = slog.LevelDebug
	case "warn":
		o.Level = slog.LevelWarn
	case "error":
		o.Level = slog.LevelError
	default:
		return Options{}, fmt.Errorf("invalid %s %q: want debug, info, warn or error", from, v)
	}
	v, from = pick(format, "--log-format", EnvFormat, getenv)
	switch v {
	case "", "text":
	case "json":
		o.JSON = true
	default:
		return Options{}, fmt.Errorf("invalid %s %q: want text or json", from, v)
	}
	return o, nil
}

// pick returns the flag's value when given, else the environment's, with
// the name to put in an error.
func pick(flagValue, flagName, envName string, getenv func(string) string) (value, from string) {
	if v := strings.TrimSpace(flagValue); v != "" {
		return strings.ToLower(v), flagName
	}
	if getenv != nil {
		if v := strings.TrimSpace(getenv(envName)); v != "" {
			return strings.ToLower(v), envName
		}
	}
	return "", flagName
}

// Handler writes the records at o.Level and above to w, as text or JSON
// lines.
func (o Options) Handler(w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{Level: o.Level}
	if o.JSON {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// AtLeast is o with its level raised to floor when it is below.
func (o Options) AtLeast(floor slog.Level) Options {
	o.Level = max(o.Level, floor)
	return o
}

// New parses level and format as Parse does and returns a logger on w.
func New(level, format string, getenv func(string) string, w io.Writer) (*slog.Logger, error) {
	o, err := Parse(level, format, getenv)
	if err != nil {
		return nil, err
	}
	return slog.New(o.Handler(w)), nil
}

// Buffered returns a logger at o's level and one at Warn or above, both
// writing to w through one logbuf.Writer, so their lines keep their order
// and stay off the request path; Close the Writer on exit.
func (o Options) Buffered(w io.Writer) (log, warn *slog.Logger, b *logbuf.Writer) {
	b = logbuf.New(w)
	log = slog.New(logbuf.Handler(o.Handler(b), b))
	warn = slog.New(logbuf.Handler(o.AtLeast(slog.LevelWarn).Handler(b), b))
	return log, warn, b
}
