package message

import (
	"encoding/json"
	"strings"
)

// Role is who a message comes from. It is persisted as a stable string.
type Role string

// Roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Status is the lifecycle state of a message. It is persisted as a stable string.
type Status string

// Statuses. The zero Status means completed.
const (
	StatusQueued    Status = "queued"
	StatusStreaming Status = "streaming"
	StatusCompleted Status = "completed"
	StatusError     Status = "error"
)

// PartType names the kind of a [Part]. It is persisted as a stable string.
type PartType string

// Part types.
const (
	// PartText is plain text.
	PartText PartType = "text"
	// PartToolCall is a call of a tool by an assistant.
	PartToolCall PartType = "tool_call"
	// PartToolResult is the result of a call, carried by a tool message.
	PartToolResult PartType = "tool_result"
	// PartReasoning is provider reasoning ("thinking") that some providers
	// require to be sent back verbatim. It is never shown as answer text.
	PartReasoning PartType = "reasoning"
	// PartImage is an image, by URL or inline data.
	PartImage PartType = "image"
)

// Part is one piece of a message's content. Which fields are set depends on Type.
type Part struct {
	Type PartType `json:"type"`
	// Text is the text of a text or reasoning part, or the output of a tool result.
	Text string `json:"text,omitempty"`
	// CallID pairs a tool call with its result.
	CallID string `json:"call_id,omitempty"`
	// Name is the tool name of a call or result.
	Name string `json:"name,omitempty"`
	// Arguments is the JSON argument object of a tool call.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// IsError marks a tool result that reports a failure to the model.
	IsError bool `json:"is_error,omitempty"`
	// Provider names the provider that produced a reasoning part; other
	// providers leave it out of their requests.
	Provider string `json:"provider,omitempty"`
	// Signature is the provider's opaque proof for a reasoning part
	// (Anthropic's signature, OpenAI's encrypted content).
	Signature string `json:"signature,omitempty"`
	// ID is the provider's id for a reasoning item, where it has one.
	ID string `json:"id,omitempty"`
	// MediaType and URL or Data describe an image.
	MediaType string `json:"media_type,omitempty"`
	URL       string `json:"url,omitempty"`
	Data      []byte `json:"data,omitempty"`
}

// ToolCall is a call of a tool as a model made it.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Usage counts tokens. Cached (read from a prompt cache) and cache-creation
// (written to it) tokens are included in Input, reasoning tokens in Output,
// as the providers report them.
type Usage struct {
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// CachedTokens are input tokens read from the provider's prompt cache.
	CachedTokens int64 `json:"cached_tokens,omitempty"`
	// CacheCreationTokens are input tokens written to the provider's prompt
	// cache (Anthropic's cache_creation_input_tokens; OpenAI does not report them).
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty"`
	ReasoningTokens     int64 `json:"reasoning_tokens,omitempty"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CachedTokens += o.CachedTokens
	u.CacheCreationTokens += o.CacheCreationTokens
	u.ReasoningTokens += o.ReasoningTokens
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// IsZero reports whether no tokens are counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// Message is one provider-neutral message of a conversation.
type Message struct {
	// ID is a stable identifier, assigned by the runner or the store.
	ID   string `json:"id,omitempty"`
	Role Role   `json:"role"`
	// Agent is the name of the agent that produced an assistant or tool message.
	Agent string `json:"agent,omitempty"`
	Parts []Part `json:"parts"`
	// Usage is what producing this message cost, for assistant messages.
	Usage *Usage `json:"usage,omitempty"`
	// Status is the message's lifecycle state; empty means completed.
	Status Status `json:"status,omitempty"`
	// FinishReason is why the model stopped, for an assistant message: "stop",
	// "tool_calls", "length", "content_filter", "refusal", "pause_turn" or a
	// provider's own word (see model.Chunk).
	FinishReason string `json:"finish_reason,omitempty"`
	// RequestID is the provider's id of the call that produced an assistant
	// message, where the provider sends one.
	RequestID string `json:"request_id,omitempty"`
	// Metadata holds free-form annotations; keys are namespaced by their owner.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// User returns a user message with text.
func User(text string) Message {
	return Message{Role: RoleUser, Parts: []Part{{Type: PartText, Text: text}}}
}

// System returns a system message with text.
func System(text string) Message {
	return Message{Role: RoleSystem, Parts: []Part{{Type: PartText, Text: text}}}
}

// Assistant returns an assistant message from agent with text.
func Assistant(agent, text string) Message {
	return Message{Role: RoleAssistant, Agent: agent, Parts: []Part{{Type: PartText, Text: text}}}
}

// ToolResult returns a tool message that answers call id with output.
func ToolResult(agent, callID, name, output string, isError bool) Message {
	return Message{Role: RoleTool, Agent: agent, Parts: []Part{{
		Type: PartToolResult, CallID: callID, Name: name, Text: output, IsError: isError,
	}}}
}

// Text returns the concatenated text parts of m (not reasoning, not results).
func (m *Message) Text() string {
	n := 0
	for i := range m.Parts {
		if m.Parts[i].Type == PartText {
			if n == 0 {
				n = i + 1
			} else {
				return m.joinText()
			}
		}
	}
	if n == 0 {
		return ""
	}
	return m.Parts[n-1].Text
}

func (m *Message) joinText() string {
	var b strings.Builder
	for i := range m.Parts {
		if m.Parts[i].Type == PartText {
			b.WriteString(m.Parts[i].Text)
		}
	}
	return b.String()
}

// ToolCalls returns the tool calls of m in order.
func (m *Message) ToolCalls() []ToolCall {
	var out []ToolCall
	for i := range m.Parts {
		p := &m.Parts[i]
		if p.Type == PartToolCall {
			out = append(out, ToolCall{ID: p.CallID, Name: p.Name, Arguments: p.Arguments})
		}
	}
	return out
}

// HasToolCalls reports whether m has at least one tool call part.
func (m *Message) HasToolCalls() bool {
	for i := range m.Parts {
		if m.Parts[i].Type == PartToolCall {
			return true
		}
	}
	return false
}

// Clone returns a deep copy of m, so that the copy can be changed without
// changing m. Argument bytes and image data are copied too.
func (m Message) Clone() Message {
	if m.Parts != nil {
		parts := make([]Part, len(m.Parts))
		copy(parts, m.Parts)
		for i := range parts {
			if parts[i].Arguments != nil {
				parts[i].Arguments = append(json.RawMessage(nil), parts[i].Arguments...)
			}
			if parts[i].Data != nil {
				parts[i].Data = append([]byte(nil), parts[i].Data...)
			}
		}
		m.Parts = parts
	}
	if m.Usage != nil {
		u := *m.Usage
		m.Usage = &u
	}
	if m.Metadata != nil {
		md := make(map[string]any, len(m.Metadata))
		for k, v := range m.Metadata {
			md[k] = v
		}
		m.Metadata = md
	}
	return m
}
