// Package openai adapts the canonical model of pkg/llm to the OpenAI wire
// family:
//
//   - upstream Providers: ChatProvider (Chat Completions, and any
//     OpenAI-compatible server such as Ollama, vLLM, llama.cpp, LiteLLM or
//     OpenRouter), ResponsesProvider (Responses) and CodexProvider (the
//     ChatGPT-Codex backend);
//   - inbound codecs for the gateway: DecodeChatRequest and
//     DecodeResponsesRequest turn a client body into an llm.Request;
//     ChatStream / ResponsesStream encode canonical events as SSE frames,
//     AppendChatCompletion / AppendResponse encode a final message, and
//     AppendErrorBody writes the error envelope.
//
// The request translation path (decode one format, encode the other) uses
// the single-pass reader and writer (the module's internal/jsonr and this layer's
// jsonw) instead of encoding/json, which on its own costs more than the
// 1 ms budget for a 300 KB request. Strings and raw request parts (tool
// schemas, same-family extra fields) alias the decoded body: a caller must
// not modify the body while the Request is in use. The upstream stream
// parsers read the common delta chunks with the same reader, reusing its
// buffers (no allocation per event), and hand every other chunk to
// encoding/json, which stays the reference for edge cases.
package openai
