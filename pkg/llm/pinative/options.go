package pinative

import (
	"encoding/json"
	"strconv"

	"github.com/ompgo/omp/pkg/llm"
)

// allowedOptions is the allow-list of pi-native request options; every
// other key is dropped silently.
var allowedOptions = map[string]bool{
	"temperature": true, "topP": true, "topK": true, "minP": true, "presencePenalty": true,
	"frequencyPenalty": true, "repetitionPenalty": true, "stopSequences": true, "maxTokens": true,
	"cacheRetention": true, "headers": true, "initiatorOverride": true, "maxRetryDelayMs": true,
	"metadata": true, "sessionId": true, "promptCacheKey": true, "streamFirstEventTimeoutMs": true,
	"streamIdleTimeoutMs": true, "reasoning": true, "disableReasoning": true, "hideThinkingSummary": true,
	"thinkingBudgets": true, "toolChoice": true, "serviceTier": true, "kimiApiFormat": true,
	"syntheticApiFormat": true, "preferWebsockets": true, "openrouterVariant": true,
}

// decodeOptions maps the allow-listed options onto r. Options with a
// canonical slot fill it; the others are kept raw in r.Extra. Null values
// are skipped; a value of the wrong type is a *RequestError.
func decodeOptions(raw json.RawMessage, r *llm.Request) error {
	var opts map[string]json.RawMessage
	if err := json.Unmarshal(raw, &opts); err != nil {
		return optionError("options", err)
	}
	var budgets map[string]float64
	for k, v := range opts {
		if !allowedOptions[k] || kind(v) == 'n' || kind(v) == 0 {
			continue
		}
		var err error
		switch k {
		case "temperature":
			err = decodeInto(v, &r.Temperature)
		case "topP":
			err = decodeInto(v, &r.TopP)
		case "topK":
			var f float64
			if err = json.Unmarshal(v, &f); err == nil {
				n := int(f)
				r.TopK = &n
			}
		case "maxTokens":
			var f float64
			if err = json.Unmarshal(v, &f); err == nil {
				r.MaxTokens = int(f)
			}
		case "stopSequences":
			err = json.Unmarshal(v, &r.StopSequences)
		case "headers":
			err = json.Unmarshal(v, &r.Headers)
		case "metadata":
			r.Metadata, err = stringMap(v)
		case "sessionId":
			err = json.Unmarshal(v, &r.SessionID)
		case "promptCacheKey":
			err = json.Unmarshal(v, &r.PromptCacheKey)
		case "serviceTier":
			err = json.Unmarshal(v, &r.ServiceTier)
		case "disableReasoning":
			err = json.Unmarshal(v, &r.DisableReasoning)
		case "hideThinkingSummary":
			err = json.Unmarshal(v, &r.HideThinkingSummary)
		case "reasoning":
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				if e := llm.Effort(s); e.Valid() {
					r.Reasoning = e
				} else {
					return &RequestError{Message: "`options.reasoning` must be one of minimal, low, medium, high, xhigh"}
				}
			}
		case "thinkingBudgets":
			err = json.Unmarshal(v, &budgets)
		case "toolChoice":
			r.ToolChoice, err = toolChoice(v)
		case "cacheRetention":
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				switch s {
				case "short":
					r.CacheControl = &llm.CacheControl{}
				case "long":
					r.CacheControl = &llm.CacheControl{TTL: "1h"}
				}
				r.Extra = setExtra(r.Extra, k, v)
			}
		default:
			r.Extra = setExtra(r.Extra, k, v)
		}
		if err != nil {
			return optionError("options."+k, err)
		}
	}
	if budgets != nil {
		r.Extra = setExtra(r.Extra, "thinkingBudgets", opts["thinkingBudgets"])
		if b, ok := budgets[string(r.Reasoning)]; ok && r.Reasoning != llm.EffortNone && b > 0 {
			r.ThinkingBudget = int(b)
		}
	}
	return nil
}

func decodeInto(v json.RawMessage, dst **float64) error {
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return err
	}
	*dst = &f
	return nil
}

func optionError(field string, err error) error {
	return &RequestError{Message: "`" + field + "` is malformed: " + err.Error(), Err: err}
}

func setExtra(m map[string]json.RawMessage, k string, v json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		m = make(map[string]json.RawMessage)
	}
	m[k] = v
	return m
}

// stringMap decodes an object keeping string values and the JSON text of
// the others.
func stringMap(v json.RawMessage) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(raw))
	for k, x := range raw {
		var s string
		if kind(x) == '"' && json.Unmarshal(x, &s) == nil {
			out[k] = s
		} else if kind(x) != 'n' {
			out[k] = string(x)
		}
	}
	return out, nil
}

// toolChoice reads "auto" | "none" | "any" | "required" | {type:"function",
// name} | {type:"function", function:{name}} | {type:"tool", name}.
func toolChoice(v json.RawMessage) (llm.ToolChoice, error) {
	if kind(v) == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return llm.ToolChoice{}, err
		}
		switch s {
		case "auto":
			return llm.ToolChoice{Mode: llm.ToolChoiceAuto}, nil
		case "none":
			return llm.ToolChoice{Mode: llm.ToolChoiceNone}, nil
		case "any", "required":
			return llm.ToolChoice{Mode: llm.ToolChoiceRequired}, nil
		}
		return llm.ToolChoice{}, &json.UnsupportedValueError{Str: strconv.Quote(s)}
	}
	var o struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(v, &o); err != nil {
		return llm.ToolChoice{}, err
	}
	name := o.Name
	if name == "" {
		name = o.Function.Name
	}
	if (o.Type == "function" || o.Type == "tool") && name != "" {
		return llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: name}, nil
	}
	return llm.ToolChoice{}, nil // e.g. {type:"computer"}: provider default
}
