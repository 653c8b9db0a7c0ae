// Package export writes a session as a self-contained HTML page (the
// interactive mode's /export, RPC's export_html). It has no terminal
// dependency: RPC mode uses it without the terminal UI.
package export

import (
	"bytes"
	"encoding/json"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// exportPage is the minimal self-contained HTML: escaped text,
// collapsible tool results, no theming; parsed on first use (a package
// initialiser would run on every omp start).
var exportPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("export").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>omp session {{.Header.ID}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}
pre{white-space:pre-wrap;background:#f4f4f4;padding:.5rem;border-radius:4px}
.role{font-weight:bold;margin-top:1rem}.user .role{color:#1558b0}.error{color:#b00020}</style></head>
<body><h1>omp session</h1>
<p>id {{.Header.ID}} · started {{.Header.Timestamp}} · cwd {{.Header.Cwd}} · leaf {{.Leaf}}</p>
{{if .System}}<details><summary>System prompt</summary><pre>{{.System}}</pre></details>{{end}}
{{range .Items}}<div class="{{.Class}}"><div class="role">{{.Role}}</div>
{{if .Collapsed}}<details><summary>{{.Summary}}</summary><pre>{{.Text}}</pre></details>{{else}}<pre>{{.Text}}</pre>{{end}}</div>
{{end}}</body></html>
`))
})

type exportItem struct {
	Role, Class, Text, Summary string
	Collapsed                  bool
}

// HTML writes the active path of sf as a self-contained HTML page
// to path (/export; default path <cwd>/omp-session-<sessionId>.html).
func HTML(sf *session.File, systemPrompt, path string) error {
	var items []exportItem
	for _, e := range sf.ActivePath() {
		role, text := EntryText(e)
		it := exportItem{Role: role, Class: role, Text: text}
		if e.Type == session.TypeMessage {
			var w struct {
				Message json.RawMessage `json:"message"`
			}
			if e.Decode(&w) == nil {
				if msg, err := session.DecodeMessage(w.Message); err == nil && msg.LLM != nil {
					it.Text = messageText(msg.LLM)
					if msg.LLM.Role == llm.RoleToolResult {
						it.Collapsed, it.Summary = true, msg.LLM.ToolName+" result"
						if msg.LLM.IsError {
							it.Class += " error"
						}
					}
				}
			}
		} else if text == "" {
			continue
		}
		items = append(items, it)
	}
	var b bytes.Buffer
	err := exportPage().Execute(&b, map[string]any{"Header": sf.Header(), "Leaf": sf.Leaf(), "System": systemPrompt,
		"Items": items})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func messageText(m *llm.Message) string {
	var parts []string
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			parts = append(parts, c.Text)
		case llm.ContentThinking:
			parts = append(parts, "(thinking) "+c.Thinking)
		case llm.ContentToolCall:
			parts = append(parts, "→ "+c.Name+" "+string(c.Arguments))
		case llm.ContentImage:
			parts = append(parts, "[image]")
		}
	}
	if m.ErrorMessage != "" {
		parts = append(parts, "Error: "+m.ErrorMessage)
	}
	return strings.Join(parts, "\n")
}

// EntryText is an entry's role (or type) and its text in one line: what
// the page shows for it, and the interactive mode's tree and pickers.
func EntryText(e *session.Entry) (role, text string) {
	switch e.Type {
	case session.TypeMessage:
		var w struct {
			Message json.RawMessage `json:"message"`
		}
		if e.Decode(&w) != nil {
			return "message", ""
		}
		msg, err := session.DecodeMessage(w.Message)
		if err != nil {
			return "message", ""
		}
		role = msg.Role
		if msg.LLM == nil {
			var b struct {
				Command string `json:"command"`
			}
			_ = json.Unmarshal(w.Message, &b)
			return role, "!" + b.Command
		}
		var parts []string
		for _, c := range msg.LLM.Content {
			switch c.Type {
			case llm.ContentText:
				parts = append(parts, c.Text)
			case llm.ContentToolCall:
				parts = append(parts, "["+c.Name+"]")
			}
		}
		if msg.LLM.StopReason == llm.StopError || msg.LLM.StopReason == llm.StopAborted {
			parts = append(parts, "("+string(msg.LLM.StopReason)+")")
		}
		return role, strings.Join(parts, " ")
	case session.TypeCompaction:
		var c session.Compaction
		_ = e.Decode(&c)
		return "compaction", "── compacted ── " + c.Summary
	case session.TypeBranchSummary:
		var b session.BranchSummary
		_ = e.Decode(&b)
		return "branch summary", b.Summary
	case session.TypeCustomMessage:
		var c struct {
			Content json.RawMessage `json:"content"`
		}
		_ = e.Decode(&c)
		var s string
		if json.Unmarshal(c.Content, &s) != nil {
			s = string(c.Content)
		}
		return "custom", s
	}
	return e.Type, ""
}
