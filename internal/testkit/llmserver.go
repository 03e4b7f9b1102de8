package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// LLM is a scripted OpenAI-compatible chat-completions server listening on a
// loopback socket. It speaks the wire protocol (JSON and SSE streaming), so
// production clients can be exercised end to end without a real provider.
type LLM struct {
	// URL is the base URL ending in /v1, the value an OpenAI client expects.
	URL string

	srv     *httptest.Server
	respond Responder
	done    chan struct{} // closed on cleanup so that hanging handlers return
	ids     atomic.Int64

	mu   sync.Mutex
	reqs []*ChatRequest
}

// Responder decides the reply to one chat-completions request. It may be
// called concurrently.
type Responder func(req *ChatRequest) Reply

// ChatRequest is the decoded body of POST /v1/chat/completions.
type ChatRequest struct {
	Model          string
	Messages       []ChatMessage
	Tools          []ToolDef
	ToolChoice     json.RawMessage
	Stream         bool
	IncludeUsage   bool // stream_options.include_usage
	ResponseFormat *ResponseFormat
	Temperature    *float64
	MaxTokens      int
	Header         http.Header
	Raw            []byte // the request body exactly as received
}

// ChatMessage is one message of a request, flattened from the wire format.
type ChatMessage struct {
	Role             string
	Content          string // text parts of multi-part content are concatenated
	Name             string
	ToolCallID       string
	ReasoningContent string
	ToolCalls        []ToolCall
}

// ToolCall is a tool call made by an assistant message in the history.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolDef is a function tool offered to the model.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ResponseFormat mirrors the response_format request field.
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *JSONSchemaSpec `json:"json_schema,omitempty"`
}

// JSONSchemaSpec is the json_schema member of response_format.
type JSONSchemaSpec struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

// System returns the content of the first system message.
func (r *ChatRequest) System() string {
	for _, m := range r.Messages {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

// LastUser returns the content of the last user message.
func (r *ChatRequest) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// HasTool reports whether a tool with the given name was offered.
func (r *ChatRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ToolResults returns the role=tool messages in order.
func (r *ChatRequest) ToolResults() []ChatMessage {
	var out []ChatMessage
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// JSONMode reports whether the request asked for JSON output.
func (r *ChatRequest) JSONMode() bool {
	if r.ResponseFormat == nil {
		return false
	}
	return r.ResponseFormat.Type == "json_object" || r.ResponseFormat.Type == "json_schema"
}

// Reply scripts one response.
type Reply struct {
	// Content is streamed as several chunks (3-8 pieces, split on rune
	// boundaries).
	Content string
	// Reasoning is sent as reasoning_content, streamed before the content.
	Reasoning string
	// ToolCalls are streamed the way OpenAI does: a header delta with id and
	// name, then the arguments split across at least two fragment deltas.
	ToolCalls []ReplyToolCall
	// FinishReason defaults to "stop", or "tool_calls" with ToolCalls.
	FinishReason string
	// Status, if non-zero, answers with this HTTP status and an OpenAI-style
	// error body instead of a completion.
	Status int
	// ErrorMessage is the error body message when Status is set.
	ErrorMessage string
	// Header is added to the response (e.g. Retry-After).
	Header http.Header
	// Delay waits before answering; it ends early if the client goes away.
	Delay time.Duration
	// Hang never answers until the client goes away or the server closes.
	Hang bool
	// ChunkDelay pauses between streamed chunks; the opening role chunk and
	// the first real chunk are sent back to back.
	ChunkDelay time.Duration
	// BreakAfter, if positive, drops the connection after that many stream
	// chunks, simulating a provider failing mid-stream.
	BreakAfter int
}

// ReplyToolCall is a tool call the fake model makes.
type ReplyToolCall struct {
	ID   string // generated when empty
	Name string
	Args string
}

// NewLLM starts the server; it is closed when the test ends.
func NewLLM(t testing.TB, h Responder) *LLM {
	t.Helper()
	l := &LLM{respond: h, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", l.handleChat)
	mux.HandleFunc("GET /v1/models", l.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		llmWriteAPIError(w, http.StatusNotFound, "unknown path "+r.URL.Path)
	})
	l.srv = httptest.NewServer(mux)
	l.URL = l.srv.URL + "/v1"
	t.Cleanup(func() {
		close(l.done)
		l.srv.Close()
	})
	return l
}

// Requests returns the requests received so far, oldest first.
func (l *LLM) Requests() []*ChatRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*ChatRequest, len(l.reqs))
	copy(out, l.reqs)
	return out
}

// Count returns how many chat requests were received.
func (l *LLM) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// Last returns the most recent request, or nil.
func (l *LLM) Last() *ChatRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.reqs) == 0 {
		return nil
	}
	return l.reqs[len(l.reqs)-1]
}

// Sequence answers with the replies in order and then repeats the last one.
func Sequence(replies ...Reply) Responder {
	var mu sync.Mutex
	next := 0
	return func(*ChatRequest) Reply {
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			return Reply{}
		}
		r := replies[min(next, len(replies)-1)]
		next++
		return r
	}
}

// FailFirst answers the first n requests with the given HTTP status and
// delegates the rest to then.
func FailFirst(n int, status int, then Responder) Responder {
	var mu sync.Mutex
	seen := 0
	return func(req *ChatRequest) Reply {
		mu.Lock()
		seen++
		fail := seen <= n
		mu.Unlock()
		if fail {
			return Reply{Status: status, ErrorMessage: fmt.Sprintf("scripted failure %d", status)}
		}
		return then(req)
	}
}

// Always answers every request with r.
func Always(r Reply) Responder {
	return func(*ChatRequest) Reply { return r }
}

func (l *LLM) handleModels(w http.ResponseWriter, _ *http.Request) {
	llmWriteJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   []map[string]any{{"id": "fake-model", "object": "model", "owned_by": "testkit"}},
	})
}

func (l *LLM) handleChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		llmWriteAPIError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	req, err := llmDecodeChatRequest(body)
	if err != nil {
		llmWriteAPIError(w, http.StatusBadRequest, "invalid request: "+err.Error())
		return
	}
	req.Header = r.Header.Clone()

	l.mu.Lock()
	l.reqs = append(l.reqs, req)
	l.mu.Unlock()

	var reply Reply
	if l.respond != nil {
		reply = l.respond(req)
	}
	id := fmt.Sprintf("chatcmpl-%d", l.ids.Add(1))
	ctx := r.Context()

	if reply.Hang {
		select {
		case <-ctx.Done():
		case <-l.done:
		}
		return
	}
	if !l.wait(ctx, reply.Delay) {
		return
	}
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if reply.Status != 0 {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		llmWriteAPIError(w, reply.Status, msg)
		return
	}
	modelName := req.Model
	if modelName == "" {
		modelName = "fake-model"
	}
	if req.Stream {
		l.stream(ctx, w, req, reply, id, modelName)
		return
	}
	llmWriteJSON(w, http.StatusOK, llmCompletion(req, reply, id, modelName))
}

// wait sleeps for d unless the client leaves or the server closes first.
func (l *LLM) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	case <-l.done:
		return false
	}
}

func llmFinishReason(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

func llmToolCallID(id string, i int, tc ReplyToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("call_%s_%d", strings.TrimPrefix(id, "chatcmpl-"), i)
}

func llmUsage(req *ChatRequest, r Reply) map[string]int {
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(m.Content)/4 + 1
	}
	completionTokens := (len(r.Content)+len(r.Reasoning))/4 + 1
	for _, tc := range r.ToolCalls {
		completionTokens += len(tc.Args)/4 + 1
	}
	return map[string]int{
		"prompt_tokens":     prompt,
		"completion_tokens": completionTokens,
		"total_tokens":      prompt + completionTokens,
	}
}

func llmCompletion(req *ChatRequest, r Reply, id, modelName string) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Content}
	if r.Reasoning != "" {
		msg["reasoning_content"] = r.Reasoning
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]map[string]any, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			calls[i] = map[string]any{
				"id":       llmToolCallID(id, i, tc),
				"type":     "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Args},
			}
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   modelName,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": llmFinishReason(r)}},
		"usage":   llmUsage(req, r),
	}
}

func (l *LLM) stream(ctx context.Context, w http.ResponseWriter, req *ChatRequest, r Reply, id, modelName string) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		llmWriteAPIError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id":      id,
			"object":  "chat.completion.chunk",
			"created": created,
			"model":   modelName,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}

	var chunks []map[string]any
	chunks = append(chunks, chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range llmSplitRunes(r.Reasoning, llmPieceCount(r.Reasoning)) {
		chunks = append(chunks, chunk(map[string]any{"reasoning_content": p}, nil))
	}
	for _, p := range llmSplitRunes(r.Content, llmPieceCount(r.Content)) {
		chunks = append(chunks, chunk(map[string]any{"content": p}, nil))
	}
	for i, tc := range r.ToolCalls {
		chunks = append(chunks, chunk(map[string]any{"tool_calls": []map[string]any{{
			"index":    i,
			"id":       llmToolCallID(id, i, tc),
			"type":     "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, frag := range llmSplitRunes(tc.Args, max(2, min(4, utf8.RuneCountInString(tc.Args)))) {
			chunks = append(chunks, chunk(map[string]any{"tool_calls": []map[string]any{{
				"index":    i,
				"function": map[string]any{"arguments": frag},
			}}}, nil))
		}
	}
	chunks = append(chunks, chunk(map[string]any{}, llmFinishReason(r)))
	if req.IncludeUsage {
		chunks = append(chunks, map[string]any{
			"id":      id,
			"object":  "chat.completion.chunk",
			"created": created,
			"model":   modelName,
			"choices": []any{},
			"usage":   llmUsage(req, r),
		})
	}

	for i, c := range chunks {
		if r.BreakAfter > 0 && i >= r.BreakAfter {
			// Aborting the handler makes the server cut the connection
			// without finishing the chunked body.
			panic(http.ErrAbortHandler)
		}
		// The opening role chunk goes out together with the first real one.
		if i > 1 && !l.wait(ctx, r.ChunkDelay) {
			return
		}
		data, err := json.Marshal(c)
		if err != nil {
			panic(fmt.Sprintf("testkit: marshal chunk: %v", err))
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return
		}
		flusher.Flush()
	}
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err != nil {
		return
	}
	flusher.Flush()
}

// llmPieceCount picks how many stream chunks a text becomes: 3 to 8, fewer only
// when the text has fewer runes.
func llmPieceCount(s string) int {
	n := utf8.RuneCountInString(s)
	return min(n, max(3, min(8, n/4)))
}

// llmSplitRunes cuts s into n pieces of roughly equal rune counts. Pieces may be
// empty only when s has fewer than n runes.
func llmSplitRunes(s string, n int) []string {
	if n <= 0 {
		return nil
	}
	if !utf8.ValidString(s) {
		// Keep invalid bytes intact by splitting on byte positions of rune starts.
		return llmSplitBytes(s, n)
	}
	runes := []rune(s)
	out := make([]string, 0, n)
	for i := range n {
		lo := len(runes) * i / n
		hi := len(runes) * (i + 1) / n
		out = append(out, string(runes[lo:hi]))
	}
	return out
}

func llmSplitBytes(s string, n int) []string {
	out := make([]string, 0, n)
	start := 0
	for i := range n {
		end := len(s) * (i + 1) / n
		for end < len(s) && end > start && !utf8.RuneStart(s[end]) {
			end++
		}
		end = max(end, start)
		out = append(out, s[start:end])
		start = end
	}
	return out
}

type llmWireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCallID       string          `json:"tool_call_id"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type llmWireRequest struct {
	Model         string           `json:"model"`
	Messages      []llmWireMessage `json:"messages"`
	Stream        bool             `json:"stream"`
	ToolChoice    json.RawMessage  `json:"tool_choice"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ResponseFormat *ResponseFormat `json:"response_format"`
	Temperature    *float64        `json:"temperature"`
	MaxTokens      int             `json:"max_tokens"`
	Tools          []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// llmDecodeChatRequest parses a request body; unknown fields are ignored as a
// real provider would.
func llmDecodeChatRequest(body []byte) (*ChatRequest, error) {
	var w llmWireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("decode body: %w", err)
	}
	req := &ChatRequest{
		Model:          w.Model,
		Stream:         w.Stream,
		ToolChoice:     w.ToolChoice,
		ResponseFormat: w.ResponseFormat,
		Temperature:    w.Temperature,
		MaxTokens:      w.MaxTokens,
		Raw:            bytes.Clone(body),
	}
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, ToolDef{
			Name:        t.Function.Name,
			Description: t.Function.Description,
			Parameters:  t.Function.Parameters,
		})
	}
	for i, m := range w.Messages {
		content, err := llmDecodeContent(m.Content)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		msg := ChatMessage{
			Role:             m.Role,
			Content:          content,
			Name:             m.Name,
			ToolCallID:       m.ToolCallID,
			ReasoningContent: m.ReasoningContent,
		}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

// llmDecodeContent accepts both a plain string and the multi-part array form.
func llmDecodeContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("decode content: %w", err)
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("decode content parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func llmWriteJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A failed write means the client left; nothing useful remains to do.
	if _, err := w.Write(data); err != nil {
		return
	}
}

func llmWriteAPIError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "server_error"
	}
	llmWriteJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil},
	})
}
