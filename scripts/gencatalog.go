//go:build ignore

// gencatalog refreshes pkg/llm/catalog.json, the bundled model catalog, from
// the reference pi-catalog's models.json (make interop-install puts it under
// .interop/node_modules/@oh-my-pi/pi-catalog/src/models.json):
//
//	go run scripts/gencatalog.go .interop/node_modules/@oh-my-pi/pi-catalog/src/models.json
//
// Entries of the providers listed in added are replaced by the reference's,
// in the reference's order, after every other entry; the other entries are
// kept as they are, so bare-id resolution (first write wins)
// keeps preferring the original providers. Only the fields llm.Model reads
// are kept. The binaries carry the catalog as Go (pkg/llm/catalog_gen.go);
// regenerate it after a refresh (make generate runs both steps when
// CATALOG_MODELS names the models.json):
//
//	go generate ./pkg/llm
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// added are the API-key providers whose wire APIs the provider layer
// speaks (Chat Completions and Responses), in catalog order.
var added = []string{"groq", "cerebras", "mistral", "deepseek", "together", "fireworks", "moonshot", "xai"}

const target = "pkg/llm/catalog.json"

// compatKeys are the compat switches pkg/llm/openai reads (compatJSON).
var compatKeys = []string{"supportsDeveloperRole", "supportsMultipleSystemMessages", "maxTokensField",
	"supportsUsageInStreaming", "supportsReasoningEffort", "supportsStrictMode", "supportsPromptCacheKey",
	"reasoningContentField", "requiresToolResultName", "requiresAssistantAfterToolResult"}

type cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

type thinking struct {
	Mode    string   `json:"mode,omitempty"`
	Efforts []string `json:"efforts,omitempty"`
}

type model struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	API            string            `json:"api"`
	Provider       string            `json:"provider"`
	BaseURL        string            `json:"baseUrl"`
	Reasoning      bool              `json:"reasoning"`
	Input          []string          `json:"input"`
	Cost           cost              `json:"cost"`
	ContextWindow  int               `json:"contextWindow"`
	MaxTokens      int               `json:"maxTokens"`
	Thinking       *thinking         `json:"thinking,omitempty"`
	RequestModelID string            `json:"requestModelId,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Compat         map[string]any    `json:"compat,omitempty"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/gencatalog.go <pi-catalog models.json>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gencatalog:", err)
		os.Exit(1)
	}
}

func run(src string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	_, ref, err := object(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	cur, err := os.ReadFile(target)
	if err != nil {
		return err
	}
	var kept []json.RawMessage
	if err := json.Unmarshal(cur, &kept); err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	out := kept[:0]
	for _, m := range kept {
		var p struct{ Provider string }
		if err := json.Unmarshal(m, &p); err != nil {
			return err
		}
		if !slices.Contains(added, p.Provider) {
			out = append(out, m)
		}
	}
	for _, prov := range added {
		provRaw, ok := ref[prov]
		if !ok {
			return fmt.Errorf("%s: no provider %q", src, prov)
		}
		ids, models, err := object(provRaw)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", src, prov, err)
		}
		for _, id := range ids {
			var m model
			if err := json.Unmarshal(models[id], &m); err != nil {
				return fmt.Errorf("%s/%s: %w", prov, id, err)
			}
			m.Compat = pickCompat(m.Compat)
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			out = append(out, b)
		}
	}
	var buf bytes.Buffer
	buf.WriteString("[\n")
	for i, m := range out {
		var c bytes.Buffer
		if err := json.Compact(&c, m); err != nil {
			return err
		}
		buf.Write(c.Bytes())
		if i < len(out)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	return os.WriteFile(target, buf.Bytes(), 0o644)
}

// object decodes a JSON object into its keys, in file order, and values.
func object(raw []byte) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return keys, vals, nil
}

func pickCompat(c map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range compatKeys {
		if v, ok := c[k]; ok {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
