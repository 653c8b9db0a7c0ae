package conformance

import "strings"

// scenario is one conversation step, expressed in every inbound format,
// and the upstream's scripted answer to it.
type scenario struct {
	name  string
	reply turn
	// body returns the inbound request body for format in, asking for
	// model and the given stream mode.
	body func(in, model string, stream bool) string
}

const (
	weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	question      = "Weather in Paris and Tokyo?"
	system        = "You are terse."
)

// toolsTurn is the first scenario's answer: reasoning, text, two parallel
// tool calls and usage with cached tokens.
var toolsTurn = turn{
	thinking:      []string{"The user wants two cities; ", "call the tool twice."},
	signature:     "c2lnLXJlYXNvbmluZy0x",
	text:          []string{"Checking ", "both cities."},
	calls:         []call{{id: "call_A", name: "get_weather", args: []string{`{"city":`, `"Paris"}`}}, {id: "call_B", name: "get_weather", args: []string{`{"city":"Tokyo"}`}}},
	callSignature: "c2lnLWNhbGwtMQ==",
	usage:         usage{input: 25, cacheRead: 100, cacheWrite: 7, output: 89, reasoning: 40},
}

// answerTurn is the second scenario's answer: reasoning and a final text.
var answerTurn = turn{
	thinking:  []string{"Both results are in."},
	signature: "c2lnLXJlYXNvbmluZy0y",
	text:      []string{"Paris: 18°C, sunny. ", "Tokyo: 22°C, rain."},
	usage:     usage{input: 60, cacheRead: 120, output: 30, reasoning: 10},
}

func streamFields(in string, stream bool) string {
	if !stream {
		return `"stream":false`
	}
	if in == "chat" {
		return `"stream":true,"stream_options":{"include_usage":true}`
	}
	return `"stream":true`
}

func fill(tmpl, in, model string, stream bool) string {
	return strings.NewReplacer("$MODEL", model, "$STREAM", streamFields(in, stream), "$SCHEMA", weatherSchema,
		"$Q", question, "$SYS", system).Replace(tmpl)
}

// toolsBodies ask the first question with one tool offered.
var toolsBodies = map[string]string{
	"chat": `{"model":"$MODEL",$STREAM,"reasoning_effort":"high","max_completion_tokens":4096,
 "messages":[{"role":"system","content":"$SYS"},{"role":"user","content":"$Q"}],
 "tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":$SCHEMA}}],
 "tool_choice":"auto","parallel_tool_calls":true}`,
	"messages": `{"model":"$MODEL","max_tokens":4096,$STREAM,"system":"$SYS",
 "thinking":{"type":"enabled","budget_tokens":2048},
 "messages":[{"role":"user","content":[{"type":"text","text":"$Q","cache_control":{"type":"ephemeral"}}]}],
 "tools":[{"name":"get_weather","description":"Get the weather","input_schema":$SCHEMA}],
 "tool_choice":{"type":"auto"}}`,
	"responses": `{"model":"$MODEL",$STREAM,"instructions":"$SYS","store":false,
 "reasoning":{"effort":"high","summary":"auto"},"include":["reasoning.encrypted_content"],"max_output_tokens":4096,
 "input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"$Q"}]}],
 "tools":[{"type":"function","name":"get_weather","description":"Get the weather","parameters":$SCHEMA,"strict":false}],
 "tool_choice":"auto","parallel_tool_calls":true}`,
	"pi": `{"model":"$MODEL",$STREAM,
 "context":{"systemPrompt":["$SYS"],"messages":[{"role":"user","content":"$Q","timestamp":1700000000000}],
  "tools":[{"name":"get_weather","description":"Get the weather","parameters":$SCHEMA}]},
 "options":{"reasoning":"high","maxTokens":4096}}`,
}

// replayBodies send the second turn: the assistant's reasoning, text and
// both calls in each format's own replay form, then both tool results.
var replayBodies = map[string]string{
	"chat": `{"model":"$MODEL",$STREAM,"reasoning_effort":"high","max_completion_tokens":4096,
 "messages":[{"role":"system","content":"$SYS"},{"role":"user","content":"$Q"},
  {"role":"assistant","content":"Checking both cities.","reasoning_content":"Need both cities.",
   "tool_calls":[{"id":"call_A","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
                 {"id":"call_B","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}}]},
  {"role":"tool","tool_call_id":"call_A","content":"18°C and sunny"},
  {"role":"tool","tool_call_id":"call_B","content":"22°C, rain"}],
 "tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":$SCHEMA}}]}`,
	"messages": `{"model":"$MODEL","max_tokens":4096,$STREAM,"system":"$SYS",
 "thinking":{"type":"enabled","budget_tokens":2048},
 "messages":[{"role":"user","content":"$Q"},
  {"role":"assistant","content":[{"type":"thinking","thinking":"Need both cities.","signature":"EqQBCgIYAhIM-prior"},
   {"type":"text","text":"Checking both cities."},
   {"type":"tool_use","id":"toolu_A","name":"get_weather","input":{"city":"Paris"}},
   {"type":"tool_use","id":"toolu_B","name":"get_weather","input":{"city":"Tokyo"}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_B","content":"22°C, rain"},
   {"type":"tool_result","tool_use_id":"toolu_A","content":[{"type":"text","text":"18°C and sunny"}]}]}],
 "tools":[{"name":"get_weather","description":"Get the weather","input_schema":$SCHEMA}]}`,
	"responses": `{"model":"$MODEL",$STREAM,"instructions":"$SYS","store":false,
 "reasoning":{"effort":"high","summary":"auto"},"include":["reasoning.encrypted_content"],
 "input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"$Q"}]},
  {"type":"reasoning","id":"rs_prior","summary":[{"type":"summary_text","text":"Need both cities."}],"encrypted_content":"gAAAAB-prior"},
  {"type":"message","role":"assistant","id":"msg_prior","content":[{"type":"output_text","text":"Checking both cities.","annotations":[]}]},
  {"type":"function_call","id":"fc_A","call_id":"call_A","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
  {"type":"function_call","id":"fc_B","call_id":"call_B","name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"},
  {"type":"function_call_output","call_id":"call_A","output":"18°C and sunny"},
  {"type":"function_call_output","call_id":"call_B","output":"22°C, rain"}],
 "tools":[{"type":"function","name":"get_weather","description":"Get the weather","parameters":$SCHEMA,"strict":false}]}`,
	"pi": `{"model":"$MODEL",$STREAM,
 "context":{"systemPrompt":["$SYS"],"messages":[{"role":"user","content":"$Q","timestamp":1700000000000},
  {"role":"assistant","api":"google-generative-ai","provider":"google","model":"gemini-2.5-pro",
   "content":[{"type":"thinking","thinking":"Need both cities.","thinkingSignature":"c2lnLXByaW9yLXRob3VnaHQ="},
    {"type":"text","text":"Checking both cities."},
    {"type":"toolCall","id":"call_A","name":"get_weather","arguments":{"city":"Paris"},"thoughtSignature":"c2lnLXByaW9yLWNhbGw="},
    {"type":"toolCall","id":"call_B","name":"get_weather","arguments":{"city":"Tokyo"}}],
   "usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
   "stopReason":"toolUse","timestamp":1700000000500},
  {"role":"toolResult","toolCallId":"call_A","toolName":"get_weather","content":[{"type":"text","text":"18°C and sunny"}],"isError":false,"timestamp":1700000000600},
  {"role":"toolResult","toolCallId":"call_B","toolName":"get_weather","content":[{"type":"text","text":"22°C, rain"}],"isError":false,"timestamp":1700000000700}],
  "tools":[{"name":"get_weather","description":"Get the weather","parameters":$SCHEMA}]},
 "options":{"reasoning":"high","maxTokens":4096}}`,
}

var scenarios = []scenario{
	{name: "tools", reply: toolsTurn, body: func(in, model string, stream bool) string { return fill(toolsBodies[in], in, model, stream) }},
	{name: "replay", reply: answerTurn, body: func(in, model string, stream bool) string { return fill(replayBodies[in], in, model, stream) }},
}

// okReply is a 2xx scripted answer in up's wire shape.
func okReply(up upstream, tn turn) upstreamReply {
	return upstreamReply{status: 200, contentType: up.contentType, body: up.script(tn)}
}
