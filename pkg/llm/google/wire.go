package google

import "encoding/json"

// GenerateContentRequest is the body of generateContent /
// streamGenerateContent (and the "request" of a Code Assist envelope).
type GenerateContentRequest struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []json.RawMessage `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
	// ServiceTier is sent to the Developer API only ("flex", "priority").
	ServiceTier string `json:"serviceTier,omitempty"`
	// SessionID and Labels are Antigravity envelope fields.
	SessionID string            `json:"sessionId,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`

	names *nameMap // wire tool name ↔ canonical name
}

// Content is one conversation turn (role "user" or "model"; no role for a
// system instruction outside Antigravity).
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a turn; the set fields say which kind it is.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *Blob             `json:"inlineData,omitempty"`
	FileData         *FileData         `json:"fileData,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// Blob is inline base64 data.
type Blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// FileData references remote media by URI.
type FileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// FunctionCall is a tool call made by the model; Args is a JSON object.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse answers a FunctionCall; Response is a JSON object.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
	// Parts carries images of a multimodal tool result (Gemini 3).
	Parts []Part `json:"parts,omitempty"`
}

// ToolConfig selects how the model may call functions.
type ToolConfig struct {
	FunctionCallingConfig FunctionCallingConfig `json:"functionCallingConfig"`
}

// FunctionCallingConfig is the function-calling mode ("AUTO", "ANY",
// "NONE", "VALIDATED") and an optional allow-list.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// GenerationConfig holds the sampling and output options.
type GenerationConfig struct {
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"topP,omitempty"`
	TopK            *int            `json:"topK,omitempty"`
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	StopSequences   []string        `json:"stopSequences,omitempty"`
	ThinkingConfig  *ThinkingConfig `json:"thinkingConfig,omitempty"`
	// The structured output settings, sent only for a request that came
	// in on the Gemini API (see ExtraResponseMimeType).
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
}

// ThinkingConfig controls reasoning: a token budget (Gemini 2.5; -1 is
// dynamic, 0 off) or a level (Gemini 3).
type ThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// codeAssistRequest is the Code Assist envelope around a request.
type codeAssistRequest struct {
	Model       string                  `json:"model"`
	Project     string                  `json:"project"`
	Request     *GenerateContentRequest `json:"request"`
	RequestID   string                  `json:"requestId,omitempty"`
	UserAgent   string                  `json:"userAgent,omitempty"`
	RequestType string                  `json:"requestType,omitempty"`
}

// response is one streamed GenerateContentResponse chunk.
type response struct {
	Candidates     []candidate     `json:"candidates"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	Error          *apiError       `json:"error"`
}

// codeAssistChunk is a Code Assist stream chunk: {response: …} or an error.
type codeAssistChunk struct {
	Response *response `json:"response"`
	Error    *apiError `json:"error"`
}

type candidate struct {
	Content      *Content `json:"content"`
	FinishReason string   `json:"finishReason"`
}

type usageMetadata struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
}

type promptFeedback struct {
	BlockReason        string `json:"blockReason"`
	BlockReasonMessage string `json:"blockReasonMessage"`
}

// apiError is google.rpc.Status as the REST API renders it.
type apiError struct {
	Code    int           `json:"code"`
	Message string        `json:"message"`
	Status  string        `json:"status"`
	Details []errorDetail `json:"details"`
}

type errorDetail struct {
	Type       string `json:"@type"`
	Reason     string `json:"reason"`
	RetryDelay string `json:"retryDelay"`
}
