package google

import (
	"encoding/json"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// maxStopSequences is Gemini's limit on stopSequences.
const maxStopSequences = 5

// antigravityOutputCaps are the fixed maxOutputTokens the Antigravity
// backend expects per wire model id (reference gemini-headers.ts), with the
// opaque model_enum label the real client sends.
var antigravityProfiles = map[string]struct {
	modelEnum string
	maxOutput int
}{
	"gemini-3.5-flash-extra-low": {"MODEL_PLACEHOLDER_M187", 65536},
	"gemini-3.5-flash-low":       {"MODEL_PLACEHOLDER_M20", 65536},
	"gemini-3-flash-agent":       {"MODEL_PLACEHOLDER_M132", 65536},
	"gemini-3.1-pro-low":         {"MODEL_PLACEHOLDER_M36", 65535},
	"gemini-pro-agent":           {"MODEL_PLACEHOLDER_M16", 65535},
	"claude-sonnet-4-6":          {"", 64000},
	"claude-opus-4-6-thinking":   {"", 64000},
}

func (b *builder) generation(req *llm.Request) {
	g := &GenerationConfig{Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK, MaxOutputTokens: req.MaxTokens}
	if len(req.StopSequences) > 0 {
		g.StopSequences = req.StopSequences[:min(len(req.StopSequences), maxStopSequences)]
	}
	g.ThinkingConfig = b.thinking(req, g)
	if b.tr.target.Antigravity {
		if p, ok := antigravityProfiles[b.model.WireID()]; ok {
			g.MaxOutputTokens = p.maxOutput
		}
	}
	if x := req.ExtraFor(llm.APIGoogle); x != nil {
		_ = json.Unmarshal(x[ExtraResponseMimeType], &g.ResponseMimeType)
		g.ResponseSchema, g.ResponseJSONSchema = x[ExtraResponseSchema], x[ExtraResponseJSONSchema]
	}
	if g.Temperature != nil || g.TopP != nil || g.TopK != nil || g.MaxOutputTokens > 0 ||
		len(g.StopSequences) > 0 || g.ThinkingConfig != nil ||
		g.ResponseMimeType != "" || len(g.ResponseSchema) > 0 || len(g.ResponseJSONSchema) > 0 {
		b.out.GenerationConfig = g
	}
}

// thinking maps the canonical reasoning options to a thinkingConfig:
// budgets for Gemini 2.5, levels for Gemini 3.
// Unset reasoning leaves the provider default.
func (b *builder) thinking(req *llm.Request, g *GenerationConfig) *ThinkingConfig {
	if !b.model.Reasoning {
		return nil
	}
	include := !req.HideThinkingSummary
	if req.DisableReasoning {
		if b.tr.level {
			return &ThinkingConfig{ThinkingLevel: "low"}
		}
		off := 0
		if strings.Contains(b.model.WireID(), "pro") {
			off = 128 // 2.5 Pro cannot turn thinking off; 128 is its minimum
		}
		return &ThinkingConfig{ThinkingBudget: &off}
	}
	effort, budget := req.Reasoning, req.ThinkingBudget
	if effort == llm.EffortNone && budget == 0 {
		return nil
	}
	if b.tr.level {
		if effort == llm.EffortNone {
			effort = llm.EffortForBudget(budget)
		}
		return &ThinkingConfig{IncludeThoughts: include, ThinkingLevel: thinkingLevel(effort)}
	}
	if budget == 0 {
		budget = llm.ThinkingBudget(effort)
		if effort == llm.EffortXHigh {
			budget = maxBudget(b.model.WireID())
		}
	}
	if budget > 0 && g.MaxOutputTokens > 0 && g.MaxOutputTokens <= budget {
		// maxOutputTokens counts thinking too: leave room for the answer.
		g.MaxOutputTokens += budget
		if b.model.MaxTokens > 0 && g.MaxOutputTokens > b.model.MaxTokens {
			g.MaxOutputTokens = b.model.MaxTokens
		}
	}
	return &ThinkingConfig{IncludeThoughts: include, ThinkingBudget: &budget}
}

// thinkingLevel is the Gemini 3 column of table 9.2.
func thinkingLevel(e llm.Effort) string {
	switch e {
	case llm.EffortMedium, llm.EffortHigh, llm.EffortXHigh:
		return "high"
	}
	return "low"
}

// maxBudget is the largest thinking budget of a Gemini 2.5 model.
func maxBudget(id string) int {
	if strings.Contains(id, "flash") {
		return 24576
	}
	return 32768
}
