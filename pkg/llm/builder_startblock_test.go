package llm

import "testing"

func TestStartBlockCarriesMetadataOnTheStartEvent(t *testing.T) {
	var seen []Content
	b := NewBuilder(APIOpenAIResponses, "openai", "gpt-5", func(ev Event) bool {
		if ev.Type == EventThinkingStart || ev.Type == EventToolCallStart {
			seen = append(seen, *ev.Block())
		}
		return true
	})
	if !b.StartBlock(Content{Type: ContentThinking, Extra: &ContentExtra{ItemID: "rs_1"}, Thinking: "ignored"}) ||
		!b.StartBlock(Content{Type: ContentToolCall, ID: "call_1", Name: "f", Extra: &ContentExtra{ItemID: "fc_1"}, ArgumentsText: "x"}) {
		t.Fatal("StartBlock returned false")
	}
	if len(seen) != 2 || seen[0].ItemID() != "rs_1" || seen[0].Thinking != "" ||
		seen[1].ID != "call_1" || seen[1].ItemID() != "fc_1" || seen[1].ArgumentsText != "" {
		t.Errorf("start events saw %+v", seen)
	}
	if b.StartBlock(Content{Type: ContentImage}) {
		t.Error("StartBlock accepted an image block")
	}
}
