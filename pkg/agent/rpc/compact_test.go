package rpc

import (
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/compaction"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// TestRPCCompactUsesTheBuiltinCompactor: RPC compact runs our
// compaction with the custom instructions and answers the
// CompactionResult; the context then starts with the summary. On a
// session with nothing to summarise the error is "Nothing to compact".
func TestRPCCompactUsesTheBuiltinCompactor(t *testing.T) {
	long := strings.Repeat("abcd", 3000)
	prov := &llmtest.Provider{Chunk: 512, Messages: []llm.Message{
		{Role: llm.RoleAssistant, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text(long)}},
		{Role: llm.RoleAssistant, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text(long)}},
		{Role: llm.RoleAssistant, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text("## Current outcome\nrpc summary")}},
	}}
	p := startRPCInProcessWith(t, prov, func(ag *agent.Agent) {
		ag.Compaction = compaction.Defaults()
		ag.Compaction.KeepRecentTokens = 3001 // the cut at "prompt 2": no split
		ag.Compactor = ag.BuiltinCompactor()
	})
	p.next("ready")
	p.send(`{"id":"0","type":"compact"}`)
	if r := p.next("0"); r["success"] != false || r["error"] != "Nothing to compact" {
		t.Fatalf("empty compact = %v", r)
	}
	for _, id := range []string{"1", "2"} {
		p.send(`{"id":"` + id + `","type":"prompt","message":"prompt ` + id + `"}`)
		p.next(id)
		p.next("agent_end")
	}
	p.send(`{"id":"3","type":"compact","customInstructions":"mention the prompts"}`)
	r := p.next("3")
	data, _ := r["data"].(map[string]any)
	if r["success"] != true || data["summary"] != "## Current outcome\nrpc summary" || data["firstKeptEntryId"] == "" ||
		data["tokensBefore"].(float64) < 6000 {
		t.Fatalf("compact = %v", r)
	}
	if req := prov.Requests[2]; !strings.HasSuffix(req.Messages[0].Content[0].Text, "Additional focus requested by the user:\nmention the prompts") {
		t.Fatalf("summary prompt: %.200s", req.Messages[0].Content[0].Text)
	}
	p.send(`{"id":"4","type":"get_messages"}`)
	msgs := p.next("4")["data"].(map[string]any)["messages"].([]any)
	if first := msgs[0].(map[string]any); first["role"] != "compactionSummary" || len(msgs) != 3 {
		t.Fatalf("%d messages, first %v", len(msgs), first["role"])
	}
	p.in.Close()
	<-p.done
}
