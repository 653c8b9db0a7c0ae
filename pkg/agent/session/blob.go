package session

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// Blob references: image data of at least blobThreshold base64
// characters is stored once in the global blob store as its decoded bytes,
// named by their SHA-256, and the session keeps "blob:sha256:<hex>".
const (
	blobPrefix    = "blob:sha256:"
	blobThreshold = 1024
)

// SetBlobsDir enables blob externalisation on write and rehydration on
// context builds (default: neither; <agentDir>/blobs in the agent).
func (f *File) SetBlobsDir(dir string) {
	f.mu.Lock()
	f.blobsDir = dir
	f.cache = nil // decoded without the store
	f.mu.Unlock()
}

// externalize returns m with large image data moved to the blob store,
// or m itself when nothing moved.
func (f *File) externalize(m Message) (Message, error) {
	if f.blobsDir == "" || m.LLM == nil {
		return m, nil
	}
	var out *llm.Message
	for i, c := range m.LLM.Content {
		if c.Type != llm.ContentImage || len(c.Data) < blobThreshold || strings.HasPrefix(c.Data, blobPrefix) {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(data)
		name := hex.EncodeToString(sum[:])
		path := filepath.Join(f.blobsDir, name)
		if _, err := os.Stat(path); err != nil {
			if err := os.MkdirAll(f.blobsDir, 0o700); err != nil {
				return m, fmt.Errorf("session: blob store: %w", err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return m, fmt.Errorf("session: blob store: %w", err)
			}
		}
		if out == nil {
			cp := *m.LLM
			cp.Content = append([]llm.Content(nil), m.LLM.Content...)
			out = &cp
		}
		out.Content[i].Data = blobPrefix + name
	}
	if out == nil {
		return m, nil
	}
	var details []byte
	if d := (&Entry{Raw: m.Raw}).field("details"); d != nil {
		details = d
	}
	return Message{Role: m.Role, Raw: EncodeMessage(out, details), LLM: m.LLM}, nil
}

// rehydrate replaces blob references in the messages' image blocks with
// the stored data; a missing blob leaves the reference.
func (f *File) rehydrate(msgs []Message) {
	if f.blobsDir == "" {
		return
	}
	for i := range msgs {
		m := msgs[i].LLM
		if m == nil {
			continue
		}
		copied := false
		for j, c := range m.Content {
			if c.Type != llm.ContentImage || !strings.HasPrefix(c.Data, blobPrefix) {
				continue
			}
			name := strings.TrimPrefix(c.Data, blobPrefix)
			if len(name) != 64 || strings.ContainsAny(name, `/\.`) {
				continue
			}
			data, err := os.ReadFile(filepath.Join(f.blobsDir, name))
			if err != nil {
				continue
			}
			if !copied {
				m.Content, copied = append([]llm.Content(nil), m.Content...), true
			}
			m.Content[j].Data = base64.StdEncoding.EncodeToString(data)
		}
	}
}
