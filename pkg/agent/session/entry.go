package session

import (
	"encoding/json"
	"strings"
	"time"
)

// CurrentVersion is the session format version this package writes.
const CurrentVersion = 3

// Entry types of the session file format.
const (
	TypeSession             = "session"
	TypeTitle               = "title"
	TypeMessage             = "message"
	TypeModelChange         = "model_change"
	TypeThinkingLevelChange = "thinking_level_change"
	TypeCompaction          = "compaction"
	TypeBranchSummary       = "branch_summary"
	TypeCustom              = "custom"
	TypeCustomMessage       = "custom_message"
	TypeLabel               = "label"
	TypeSessionInfo         = "session_info"
	TypeModeChange          = "mode_change"
	TypeResetBoundary       = "reset_boundary"
	TypeTitleChange         = "title_change"
)

// timeLayout is the ISO-8601 UTC form with milliseconds of entry
// timestamps.
const timeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t as an entry timestamp.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// Header is the decoded first line of a session file. Fields the
// package does not know stay in the raw line, which is what gets written
// back.
type Header struct {
	Version       int    `json:"version"`
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd"`
	ParentSession string `json:"parentSession,omitempty"`
	Title         string `json:"title,omitempty"`
}

// Entry is one entry line: the base fields decoded, the line itself kept
// verbatim in Raw (without its newline). Raw must not be modified.
type Entry struct {
	Type      string
	ID        string
	ParentID  string // "" for a root
	Timestamp string
	Raw       json.RawMessage

	// message is the raw "message" member of Raw as parseEntry found it
	// (nil when not known: field then scans Raw). Whoever replaces Raw
	// clears it.
	message []byte
}

// parseEntry decodes the base fields of line; ok is false for a line that
// is not a JSON object with a string type.
func parseEntry(line []byte) (Entry, bool) {
	e := Entry{Raw: line}
	ok := scanObject(line, func(key []byte, val []byte) {
		switch string(key) {
		case "type":
			e.Type = entryType(val)
		case "message":
			if e.message == nil {
				e.message = val
			}
		case "id":
			e.ID, _ = rawString(val)
		case "parentId":
			e.ParentID, _ = rawString(val)
		case "timestamp":
			e.Timestamp, _ = rawString(val)
		}
	})
	if !ok || e.Type == "" {
		return Entry{}, false
	}
	return e, true
}

// entryType decodes a raw type value, without allocating for the types
// of the format.
func entryType(val []byte) string {
	if len(val) >= 2 && val[0] == '"' {
		for _, t := range entryTypes {
			if string(val[1:len(val)-1]) == t {
				return t
			}
		}
	}
	t, _ := rawString(val)
	return t
}

// entryTypes are the entry types, the most frequent first.
var entryTypes = [...]string{TypeMessage, TypeModelChange, TypeThinkingLevelChange, TypeCompaction,
	TypeBranchSummary, TypeCustom, TypeCustomMessage, TypeLabel, TypeSessionInfo, TypeModeChange,
	TypeResetBoundary, TypeTitleChange, TypeSession, TypeTitle}

// field returns the raw value of a top-level member of the entry.
func (e *Entry) field(name string) []byte {
	if name == "message" && e.message != nil {
		return e.message
	}
	var out []byte
	scanObject(e.Raw, func(key []byte, val []byte) {
		if string(key) == name && out == nil {
			out = val
		}
	})
	return out
}

// Decode unmarshals the entry's JSON into v (a struct with the fields of
// its type).
func (e *Entry) Decode(v any) error { return json.Unmarshal(e.Raw, v) }

// ModelChange is the payload of a model_change entry. Model is the omp
// spelling ("provider/id"); Provider and ModelID the pi-lineage one.
type ModelChange struct {
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
	ModelID  string `json:"modelId,omitempty"`
	Role     string `json:"role,omitempty"`
}

// Key returns "provider/id"; model wins over provider+modelId.
func (m ModelChange) Key() string {
	if m.Model != "" {
		return m.Model
	}
	if m.Provider != "" && m.ModelID != "" {
		return m.Provider + "/" + m.ModelID
	}
	return ""
}

// Compaction is the payload of a compaction entry.
type Compaction struct {
	Summary          string          `json:"summary"`
	ShortSummary     string          `json:"shortSummary,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int64           `json:"tokensBefore"`
	Details          json.RawMessage `json:"details,omitempty"`
	PreserveData     json.RawMessage `json:"preserveData,omitempty"`
	FromExtension    bool            `json:"fromExtension,omitempty"`
}

// BranchSummary is the payload of a branch_summary entry.
type BranchSummary struct {
	FromID        string          `json:"fromId"`
	Summary       string          `json:"summary"`
	Details       json.RawMessage `json:"details,omitempty"`
	FromExtension bool            `json:"fromExtension,omitempty"`
}

// CustomMessage is the payload of a custom_message entry.
type CustomMessage struct {
	CustomType string          `json:"customType"`
	Content    json.RawMessage `json:"content"`
	Display    bool            `json:"display"`
}

// SplitModelKey splits "provider/id" at the first slash.
func SplitModelKey(key string) (provider, id string) {
	provider, id, _ = strings.Cut(key, "/")
	return provider, id
}
