package model

// Wire event names of the chat stream (deer-flow 1.x).
const (
	EventMessageChunk   = "message_chunk"
	EventToolCalls      = "tool_calls"
	EventToolCallChunks = "tool_call_chunks"
	EventToolCallResult = "tool_call_result"
	EventInterrupt      = "interrupt"
	EventCitations      = "citations"
	EventError          = "error"
)

// ToolCall is one entry of an event's tool_calls list.
type ToolCall struct {
	Type string         `json:"type"`
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// ToolCallChunk is one streamed piece of a tool call.
type ToolCallChunk struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	Args  string `json:"args"`
}

// Option is a choice offered by an interrupt.
type Option struct {
	Text  string `json:"text"`
	Value string `json:"value"`
}

// EventData is the JSON payload of one event. Fields absent from an event kind are omitted; content is
// omitted when empty, as deer-flow does.
type EventData struct {
	ThreadID         string     `json:"thread_id"`
	Agent            string     `json:"agent,omitempty"`
	ID               string     `json:"id,omitempty"`
	Role             string     `json:"role,omitempty"`
	Content          string     `json:"content,omitempty"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	FinishReason     string     `json:"finish_reason,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	// A pointer so that an empty list is still sent: the web client iterates it unconditionally.
	ToolCallChunks *[]ToolCallChunk `json:"tool_call_chunks,omitempty"`
	ToolCallID     string           `json:"tool_call_id,omitempty"`
	Options        []Option         `json:"options,omitempty"`
	Citations      []Citation       `json:"citations,omitempty"`
	Error          string           `json:"error,omitempty"`
	Reason         string           `json:"reason,omitempty"`
}

// Event is one server-sent event of a run.
type Event struct {
	Type string    `json:"event"`
	Data EventData `json:"data"`
}

// Citation is a source a tool really returned during a run.
type Citation struct {
	URL            string   `json:"url"`
	Title          string   `json:"title"`
	Description    string   `json:"description,omitempty"`
	ContentSnippet string   `json:"content_snippet,omitempty"`
	RelevanceScore float64  `json:"relevance_score,omitempty"`
	Domain         string   `json:"domain,omitempty"`
	AccessedAt     *string  `json:"accessed_at"`
	SourceType     string   `json:"source_type"`
	Agents         []string `json:"-"`
}
