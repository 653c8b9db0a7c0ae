package compaction

import (
	"encoding/json"
	"strconv"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// Pruning policy: the newest 40k tokens of tool output are protected, and
// older output is pruned only when that saves at least 20k.
const (
	PruneProtectTokens = 40000
	PruneMinimumSaving = 20000
)

// Pruned is the outcome of Prune.
type Pruned struct {
	// Replace maps an entry id to its new message JSON (for
	// session.File.ReplaceMessages); empty when nothing is pruned.
	Replace map[string][]byte
	// Saved is the estimated tokens removed.
	Saved int
}

// Prune walks the toolResult messages of path after the latest
// compaction's firstKeptEntryId that were not pruned before, walk newest
// to oldest; results while the running total is ≤ 40,000 tokens are
// protected, older ones are candidates except read and skill results.
// When the candidates add up to ≥ 20,000 tokens, each gets its content
// replaced by "[Output truncated - N tokens]" and a prunedAt of nowMs.
// msgs is File.EntryMessages(path).
func Prune(path []*session.Entry, msgs []session.Message, nowMs int64) Pruned {
	start := keptStart(path)
	total := 0
	type cand struct {
		i, tokens int
	}
	var cands []cand
	sum := 0
	for i := len(path) - 1; i >= start; i-- {
		m := msgs[i]
		if m.LLM == nil || m.LLM.Role != llm.RoleToolResult || prunedBefore(m) {
			continue
		}
		t := Estimate(m)
		total += t
		if total <= PruneProtectTokens || m.LLM.ToolName == "read" || m.LLM.ToolName == "skill" {
			continue
		}
		cands = append(cands, cand{i, t})
		sum += t
	}
	if sum < PruneMinimumSaving {
		return Pruned{}
	}
	out := Pruned{Replace: make(map[string][]byte, len(cands)), Saved: sum}
	for _, c := range cands {
		out.Replace[path[c.i].ID] = prunedMessage(msgs[c.i], c.tokens, nowMs)
	}
	return out
}

// keptStart is the index of the latest compaction's firstKeptEntryId on
// path (the entry after the compaction when it is not there), or 0.
func keptStart(path []*session.Entry) int {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type != session.TypeCompaction {
			continue
		}
		var c session.Compaction
		_ = path[i].Decode(&c)
		for j := 0; j < i; j++ {
			if path[j].ID == c.FirstKeptEntryID {
				return j
			}
		}
		return i + 1
	}
	return 0
}

func prunedBefore(m session.Message) bool {
	found := false
	session.ScanObject(m.Raw, func(key string, _ []byte) {
		if key == "prunedAt" {
			found = true
		}
	})
	return found
}

// prunedMessage is m with its content replaced and prunedAt set; every
// other field is kept as stored.
func prunedMessage(m session.Message, tokens int, nowMs int64) []byte {
	text := `[{"type":"text","text":"[Output truncated - ` + strconv.Itoa(tokens) + ` tokens]"}]`
	b := make([]byte, 0, len(m.Raw)/4+128)
	b = append(b, '{')
	first := true
	session.ScanObject(m.Raw, func(key string, val []byte) {
		if key == "prunedAt" {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		q, _ := json.Marshal(key)
		b = append(b, q...)
		b = append(b, ':')
		if key == "content" {
			b = append(b, text...)
		} else {
			b = append(b, val...)
		}
	})
	if !first {
		b = append(b, ',')
	}
	b = append(b, `"prunedAt":`...)
	b = strconv.AppendInt(b, nowMs, 10)
	return append(b, '}')
}
