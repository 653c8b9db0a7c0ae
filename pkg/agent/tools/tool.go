// Package tools holds the coding agent's built-in tools:
// read, write, edit, bash, grep, find and todo, their JSON schemas, the
// argument validation the loop runs before executing one, and the
// shared output rules (sanitising, head/tail truncation, artifact spill).
//
// A tool never panics on bad input: every failure is an error whose text
// is shown to the model as an isError tool result.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// Result is what a tool returns: content for the model and details
// for the session and UI, never sent to the model.
type Result struct {
	Content []llm.Content
	Details any
}

// TextResult is a result with one text block.
func TextResult(text string, details any) Result {
	return Result{Content: []llm.Content{llm.Text(text)}, Details: details}
}

// Error is a model-visible tool failure (ToolError): the loop records it as
// an isError result and continues. Details, when set, are persisted.
type Error struct {
	Msg     string
	Details any
}

func (e *Error) Error() string { return e.Msg }

// Errorf returns an *Error.
func Errorf(format string, a ...any) error { return &Error{Msg: fmt.Sprintf(format, a...)} }

// AbortError is a tool failure with abort semantics (ToolAbortError): the
// result is recorded and the run stops as aborted.
type AbortError struct{ Msg string }

func (e *AbortError) Error() string { return e.Msg }

// Env is what the tools share within a session.
type Env struct {
	// Cwd is the session working directory; relative paths resolve here.
	Cwd string
	// Home expands "~" (default: $HOME of Environ).
	Home string
	// Environ is the environment of bash children (default os.Environ()).
	Environ []string
	// Artifacts stores truncated output (nil: truncate without a spill).
	Artifacts *Artifacts
	// Rule returns the content of rulebook rule name for rule://<name>
	// reads (nil: no rulebook).
	Rule func(name string) (string, bool)
}

// Resolve returns p made absolute against the session cwd, with "~"
// expanded.
func (e *Env) Resolve(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home := e.Home
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(e.Cwd, p)
	}
	return filepath.Clean(p)
}

// Rel returns p relative to the session cwd when it is below it, else p.
func (e *Env) Rel(p string) string {
	if r, err := filepath.Rel(e.Cwd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// Tool is one built-in tool.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments.
	Parameters json.RawMessage
	// Strict rejects unknown properties.
	Strict bool
	// Normalize rewrites accepted aliases before validation (may be nil).
	Normalize func(args map[string]any) map[string]any
	// Check rejects argument shapes with a fixed error before validation
	// (may be nil).
	Check func(args map[string]any) error
	// Run executes a validated call. update (never nil) reports partial
	// results.
	Run func(ctx context.Context, args map[string]any, update func(Result)) (Result, error)
}

// Spec returns the tool's definition for the model.
func (t *Tool) Spec() llm.Tool {
	return llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
}

// Set is the active tool set of a session.
type Set struct {
	tools  []*Tool
	byName map[string]*Tool
}

// NewSet returns a set of tools in the given order.
func NewSet(tools ...*Tool) *Set {
	s := &Set{byName: map[string]*Tool{}}
	for _, t := range tools {
		s.tools = append(s.tools, t)
		s.byName[t.Name] = t
	}
	return s
}

// Specs returns the definitions offered to the model.
func (s *Set) Specs() []llm.Tool {
	out := make([]llm.Tool, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.Spec())
	}
	return out
}

// Names returns the tool names in order.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.Name)
	}
	return out
}

// Execute runs one call: an unknown name, invalid arguments, a
// tool error or a panic-free failure all come back as isError results.
// A non-nil error is returned only for an *AbortError (the run must stop).
func (s *Set) Execute(ctx context.Context, name string, raw json.RawMessage, update func(Result)) (res Result, isError bool, abort error) {
	t, ok := s.byName[name]
	if !ok {
		return TextResult("Tool "+name+" not found", nil), true, nil
	}
	var args map[string]any
	if len(raw) == 0 || string(raw) == "null" {
		args = map[string]any{}
	} else if err := json.Unmarshal(raw, &args); err != nil {
		return TextResult(fmt.Sprintf("Validation failed for tool %q:\n  - arguments must be a JSON object\n\nReceived arguments:\n%s", name, raw), nil), true, nil
	}
	delete(args, "i") // the 18.1.21 intent property is never validated
	if t.Normalize != nil {
		args = t.Normalize(args)
	}
	if t.Check != nil {
		if err := t.Check(args); err != nil {
			return TextResult(err.Error(), nil), true, nil
		}
	}
	if problems := validate(t.Parameters, args, t.Strict); len(problems) > 0 {
		pretty, _ := json.MarshalIndent(args, "", "  ")
		return TextResult(fmt.Sprintf("Validation failed for tool %q:\n%s\n\nReceived arguments:\n%s",
			name, "  - "+strings.Join(problems, "\n  - "), pretty), nil), true, nil
	}
	if update == nil {
		update = func(Result) {}
	}
	res, err := t.Run(ctx, args, update)
	if err == nil {
		return res, false, nil
	}
	var ab *AbortError
	if errors.As(err, &ab) {
		return TextResult(ab.Msg, nil), true, err
	}
	var te *Error
	if errors.As(err, &te) {
		r := TextResult(te.Msg, te.Details)
		if len(res.Content) > 0 {
			r.Content = res.Content
		}
		return r, true, nil
	}
	return TextResult(err.Error(), nil), true, nil
}

// str returns args[k] as a string ("" when absent).
func str(args map[string]any, k string) string {
	s, _ := args[k].(string)
	return s
}

// num returns args[k] as an int and whether it was given.
func num(args map[string]any, k string) (int, bool) {
	f, ok := args[k].(float64)
	return int(f), ok
}

func boolean(args map[string]any, k string) bool {
	b, _ := args[k].(bool)
	return b
}
