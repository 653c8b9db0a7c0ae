// Package pinative is the inbound codec of the pi-native format
// (POST /v1/pi/stream): it decodes a
// request body into the canonical llm.Request plus the model selection, and
// encodes canonical events as the pi-native SSE stream (each event as
// "data: <json>\n\n", then "data: [DONE]\n\n"), the non-streaming
// {"message": …} body and the {"error":{type,message}} envelope.
package pinative
