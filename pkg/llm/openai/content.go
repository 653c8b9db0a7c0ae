package openai

import (
	"slices"
	"strings"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// parseDataURL splits "data:<mime>;base64,<data>". ok is false for any
// other URL.
func parseDataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mime, enc, _ := strings.Cut(meta, ";")
	if enc != "base64" && !strings.HasSuffix(meta, ";base64") {
		return "", "", false
	}
	if mime == "" {
		mime = "application/octet-stream"
	}
	return mime, data, true
}

// imageFromURL returns the canonical image block for an OpenAI image URL:
// inline bytes for a data URL, a kept URL otherwise (never fetched).
func imageFromURL(u, detail string) llm.Content {
	if mime, data, ok := parseDataURL(u); ok {
		c := llm.Content{Type: llm.ContentImage, MimeType: mime, Data: data}
		c.SetDetail(detail)
		return c
	}
	c := llm.Content{Type: llm.ContentImage}
	c.SetURL(u)
	c.SetDetail(detail)
	return c
}

// appendImageURL appends the OpenAI image_url string of an image block.
func appendImageURL(dst []byte, c *llm.Content) []byte {
	if c.Data == "" {
		return jsonw.Plain(dst, c.URL())
	}
	mime := c.MimeType
	if mime == "" {
		mime = "image/png"
	}
	// Build "data:<mime>;base64,<data>" without an intermediate string:
	// base64 never needs escaping, mime almost never does.
	dst = append(dst, `"data:`...)
	dst = jsonw.PlainBody(dst, mime)
	dst = append(dst, ";base64,"...)
	dst = jsonw.PlainBody(dst, c.Data)
	return append(dst, '"')
}

// splitCallID returns the call_id half of a "<call_id>|<item_id>" tool id.
func splitCallID(id string) string {
	if i := strings.IndexByte(id, '|'); i >= 0 {
		return id[:i]
	}
	return id
}

// hasImage reports whether a message carries an image block.
func hasImage(m *llm.Message) bool {
	for i := range m.Content {
		if m.Content[i].Type == llm.ContentImage {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
