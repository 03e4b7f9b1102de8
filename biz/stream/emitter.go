// Package stream turns model output, tool results and interrupts into the wire events of a run
// (deer-flow 1.x chat-stream events) and hands them, in order, to the run's sink.
package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/cloudwego/eino/schema"

	"github.com/deer-go/deer-go/biz/model"
)

// Sink receives the events of one run, in order. It must not block for long: it is called from the run.
type Sink func(model.Event)

// Emitter produces the wire events of one run. Events are produced where the model stream is consumed, in the
// goroutine of the agent that consumes it, so a message's events are complete before its agent moves on and no
// event can be written after the run returns.
type Emitter struct {
	threadID string
	sink     Sink
}

// New returns an emitter for a thread's run.
func New(threadID string, sink Sink) *Emitter {
	return &Emitter{threadID: threadID, sink: sink}
}

type ctxKey struct{}

// WithEmitter attaches the run's emitter to ctx.
func WithEmitter(ctx context.Context, e *Emitter) context.Context {
	return context.WithValue(ctx, ctxKey{}, e)
}

// From returns the run's emitter, or a discarding one when the context carries none (e.g. in unit tests of a node).
func From(ctx context.Context) *Emitter {
	if e, ok := ctx.Value(ctxKey{}).(*Emitter); ok && e != nil {
		return e
	}
	return &Emitter{sink: func(model.Event) {}}
}

// NewID returns a fresh message id. Ids are random so they stay unique for the life of a thread, across runs and restarts.
func NewID(prefix string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the runtime guarantees this never happens
	}
	return prefix + hex.EncodeToString(b[:])
}

func (e *Emitter) base(agent, id string) model.EventData {
	return model.EventData{ThreadID: e.threadID, Agent: agent, ID: id, Role: "assistant"}
}

func (e *Emitter) emit(typ string, d model.EventData) { e.sink(model.Event{Type: typ, Data: d}) }

// Message streams one model response as events and returns the whole message. The message always ends with a
// finish_reason event, also when the stream fails (the error is returned after the message was closed).
func (e *Emitter) Message(agent string, sr *schema.StreamReader[*schema.Message]) (*schema.Message, error) {
	return e.MessageThen(agent, sr, nil)
}

// MessageThen is Message with a tail: after a successful stream, the text returned by after (if any) is sent as
// the message's last content before it is finished, and appended to the returned message.
func (e *Emitter) MessageThen(agent string, sr *schema.StreamReader[*schema.Message], after func(*schema.Message) string) (*schema.Message, error) {
	defer sr.Close()
	id := NewID("run--")
	var chunks []*schema.Message
	think := &thinkSplitter{}
	announced := map[int]bool{} // tool-call index → its tool_calls event was sent
	var streamErr error
	for {
		chunk, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			streamErr = err
			break
		}
		if chunk == nil {
			continue
		}
		chunks = append(chunks, chunk)
		text, reasoning := think.split(chunk.Content)
		reasoning = chunk.ReasoningContent + reasoning
		if text != "" || reasoning != "" {
			d := e.base(agent, id)
			d.Content, d.ReasoningContent = text, reasoning
			e.emit(model.EventMessageChunk, d)
		}
		for _, tc := range chunk.ToolCalls {
			idx := 0
			if tc.Index != nil {
				idx = *tc.Index
			}
			c := model.ToolCallChunk{Type: "tool_call_chunk", Index: idx, ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments}
			d := e.base(agent, id)
			if !announced[idx] && tc.Function.Name != "" {
				announced[idx] = true
				d.ToolCalls = []model.ToolCall{{Type: "tool_call", ID: tc.ID, Name: tc.Function.Name, Args: map[string]any{}}}
				d.ToolCallChunks = &[]model.ToolCallChunk{c}
				e.emit(model.EventToolCalls, d)
				continue
			}
			c.ID, c.Name = "", "" // a continuation fragment: appended to the call announced above
			if c.Args == "" {
				continue
			}
			d.ToolCallChunks = &[]model.ToolCallChunk{c}
			e.emit(model.EventToolCallChunks, d)
		}
	}
	if rest := think.flush(); rest != "" {
		d := e.base(agent, id)
		d.Content = rest
		e.emit(model.EventMessageChunk, d)
	}
	var msg *schema.Message
	if len(chunks) > 0 {
		m, err := schema.ConcatMessages(chunks)
		if err != nil && streamErr == nil {
			streamErr = fmt.Errorf("assemble model output: %w", err)
		}
		msg = m
	}
	if msg == nil {
		msg = &schema.Message{Role: schema.Assistant}
	}
	msg.Content = stripThink(msg.Content)
	if after != nil && streamErr == nil {
		if tail := after(msg); tail != "" {
			d := e.base(agent, id)
			d.Content = tail
			e.emit(model.EventMessageChunk, d)
			msg.Content += tail
		}
	}
	e.finish(agent, id, msg, streamErr != nil)
	return msg, streamErr
}

// finish closes a message. When it carries tool calls, one tool_calls event lists all of them with complete
// arguments; the web client replaces its list with it, so parallel calls all show up.
func (e *Emitter) finish(agent, id string, msg *schema.Message, failed bool) {
	d := e.base(agent, id)
	if len(msg.ToolCalls) == 0 || failed {
		d.FinishReason = "stop"
		if !failed && msg.ResponseMeta != nil && msg.ResponseMeta.FinishReason == "length" {
			d.FinishReason = "length"
		}
		e.emit(model.EventMessageChunk, d)
		return
	}
	calls := append([]schema.ToolCall(nil), msg.ToolCalls...)
	sort.SliceStable(calls, func(i, j int) bool { return index(calls[i]) < index(calls[j]) })
	chunks := make([]model.ToolCallChunk, 0, len(calls))
	for _, tc := range calls {
		d.ToolCalls = append(d.ToolCalls, model.ToolCall{Type: "tool_call", ID: tc.ID, Name: tc.Function.Name, Args: ParseArgs(tc.Function.Arguments)})
		chunks = append(chunks, model.ToolCallChunk{Type: "tool_call_chunk", Index: index(tc), ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
	}
	d.ToolCallChunks = &chunks
	d.FinishReason = "tool_calls"
	e.emit(model.EventToolCalls, d)
}

func index(tc schema.ToolCall) int {
	if tc.Index != nil {
		return *tc.Index
	}
	return 0
}

// ParseArgs decodes tool-call arguments; arguments that are not a JSON object come back as {"input": raw}.
func ParseArgs(raw string) map[string]any {
	args := map[string]any{}
	if raw == "" {
		return args
	}
	if err := json.Unmarshal([]byte(raw), &args); err != nil || args == nil {
		return map[string]any{"input": raw}
	}
	return args
}

// ToolResult emits the result of a tool call.
func (e *Emitter) ToolResult(agent, toolCallID, content string) {
	d := e.base(agent, NewID("tool--"))
	d.ToolCallID = toolCallID
	d.Content = content
	e.emit(model.EventToolCallResult, d)
}

// Interrupt emits the pause of a run. It carries no agent, as in deer-flow.
func (e *Emitter) Interrupt(id, content string, options []model.Option) {
	e.emit(model.EventInterrupt, model.EventData{
		ThreadID: e.threadID, ID: id, Role: "assistant", Content: content, FinishReason: "interrupt", Options: options,
	})
}

// Citations emits the sources collected by the run.
func (e *Emitter) Citations(c []model.Citation) {
	if len(c) == 0 {
		return
	}
	e.emit(model.EventCitations, model.EventData{ThreadID: e.threadID, Citations: c})
}

// Error emits the event that ends a failed or cancelled run.
func (e *Emitter) Error(msg, reason string) {
	e.emit(model.EventError, model.EventData{ThreadID: e.threadID, Error: msg, Reason: reason})
}
