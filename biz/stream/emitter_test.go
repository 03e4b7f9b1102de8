package stream

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"

	"github.com/deer-go/deer-go/biz/model"
)

const testThread = "thread-1"

// recorder collects the events a sink receives.
type recorder struct{ events []model.Event }

func (r *recorder) sink(ev model.Event) { r.events = append(r.events, ev) }

func newRecorder() (*recorder, *Emitter) {
	r := &recorder{}
	return r, New(testThread, r.sink)
}

func intp(i int) *int { return &i }

func textChunk(s string) *schema.Message { return &schema.Message{Role: schema.Assistant, Content: s} }

func toolChunk(idx int, id, name, args string) *schema.Message {
	return &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{{
		Index: intp(idx), ID: id, Function: schema.FunctionCall{Name: name, Arguments: args},
	}}}
}

// checkMessage asserts what every event of one streamed message shares and returns its id.
func checkMessage(t *testing.T, events []model.Event, agent string) string {
	t.Helper()
	if len(events) == 0 {
		t.Fatal("no events")
	}
	id := events[0].Data.ID
	if !strings.HasPrefix(id, "run--") {
		t.Errorf("id %q lacks the run-- prefix", id)
	}
	for i, ev := range events {
		d := ev.Data
		if d.ThreadID != testThread || d.Agent != agent || d.Role != "assistant" || d.ID != id {
			t.Errorf("event %d: thread %q agent %q role %q id %q; want %q %q assistant %q", i, d.ThreadID, d.Agent, d.Role, d.ID, testThread, agent, id)
		}
	}
	return id
}

func contents(events []model.Event) (text, reasoning []string) {
	for _, ev := range events {
		if ev.Type == model.EventMessageChunk && (ev.Data.Content != "" || ev.Data.ReasoningContent != "") {
			text = append(text, ev.Data.Content)
			reasoning = append(reasoning, ev.Data.ReasoningContent)
		}
	}
	return text, reasoning
}

func TestMessagePlainText(t *testing.T) {
	rec, e := newRecorder()
	sr := schema.StreamReaderFromArray([]*schema.Message{textChunk("Hel"), textChunk(""), nil, textChunk("lo")})
	msg, err := e.Message(model.AgentCoordinator, sr)
	if err != nil {
		t.Fatalf("Message: %v", err)
	}
	if msg.Content != "Hello" || msg.Role != schema.Assistant {
		t.Errorf("returned message = %q/%q, want assistant/Hello", msg.Role, msg.Content)
	}
	checkMessage(t, rec.events, model.AgentCoordinator)
	if len(rec.events) != 3 {
		t.Fatalf("got %d events, want 3 (empty chunk omitted): %+v", len(rec.events), rec.events)
	}
	for i, want := range []string{"Hel", "lo", ""} {
		ev := rec.events[i]
		if ev.Type != model.EventMessageChunk || ev.Data.Content != want {
			t.Errorf("event %d = %s %q, want message_chunk %q", i, ev.Type, ev.Data.Content, want)
		}
	}
	for i, ev := range rec.events[:2] {
		if ev.Data.FinishReason != "" {
			t.Errorf("event %d has finish_reason %q before the end", i, ev.Data.FinishReason)
		}
	}
	if last := rec.events[2]; last.Data.FinishReason != "stop" {
		t.Errorf("last finish_reason = %q, want stop", last.Data.FinishReason)
	}
}

func TestMessageEmptyStream(t *testing.T) {
	rec, e := newRecorder()
	msg, err := e.Message(model.AgentPlanner, schema.StreamReaderFromArray([]*schema.Message{}))
	if err != nil {
		t.Fatalf("Message: %v", err)
	}
	if msg == nil || msg.Role != schema.Assistant || msg.Content != "" {
		t.Errorf("returned message = %+v, want empty assistant message", msg)
	}
	if len(rec.events) != 1 || rec.events[0].Data.FinishReason != "stop" {
		t.Errorf("events = %+v, want a single finish event", rec.events)
	}
}

func TestMessageFinishLength(t *testing.T) {
	rec, e := newRecorder()
	last := textChunk("cut")
	last.ResponseMeta = &schema.ResponseMeta{FinishReason: "length"}
	if _, err := e.Message(model.AgentReporter, schema.StreamReaderFromArray([]*schema.Message{textChunk("a "), last})); err != nil {
		t.Fatalf("Message: %v", err)
	}
	if got := rec.events[len(rec.events)-1].Data.FinishReason; got != "length" {
		t.Errorf("finish_reason = %q, want length", got)
	}
}

func TestMessageReasoningContent(t *testing.T) {
	rec, e := newRecorder()
	sr := schema.StreamReaderFromArray([]*schema.Message{
		{Role: schema.Assistant, ReasoningContent: "think "},
		{Role: schema.Assistant, ReasoningContent: "more"},
		textChunk("answer"),
	})
	msg, err := e.Message(model.AgentPlanner, sr)
	if err != nil {
		t.Fatalf("Message: %v", err)
	}
	checkMessage(t, rec.events, model.AgentPlanner)
	text, reasoning := contents(rec.events)
	if want := []string{"", "", "answer"}; !reflect.DeepEqual(text, want) {
		t.Errorf("content = %q, want %q", text, want)
	}
	if want := []string{"think ", "more", ""}; !reflect.DeepEqual(reasoning, want) {
		t.Errorf("reasoning_content = %q, want %q", reasoning, want)
	}
	if msg.Content != "answer" || msg.ReasoningContent != "think more" {
		t.Errorf("returned message content %q reasoning %q", msg.Content, msg.ReasoningContent)
	}
}

func TestMessageInlineThink(t *testing.T) {
	rec, e := newRecorder()
	sr := schema.StreamReaderFromArray([]*schema.Message{
		textChunk("<thi"), textChunk("nk>step one"), textChunk("</th"), textChunk("ink>Result"), textChunk(" <th"),
	})
	msg, err := e.Message(model.AgentResearcher, sr)
	if err != nil {
		t.Fatalf("Message: %v", err)
	}
	checkMessage(t, rec.events, model.AgentResearcher)
	text, reasoning := contents(rec.events)
	if got := strings.Join(text, ""); got != "Result <th" {
		t.Errorf("streamed content = %q, want %q", got, "Result <th")
	}
	if got := strings.Join(reasoning, ""); got != "step one" {
		t.Errorf("streamed reasoning = %q, want %q", got, "step one")
	}
	for _, s := range text {
		if strings.Contains(s, "think") {
			t.Errorf("a content event leaks a think tag: %q", s)
		}
	}
	if msg.Content != "Result <th" {
		t.Errorf("returned content = %q, want think block stripped", msg.Content)
	}
}

func TestMessageToolCalls(t *testing.T) {
	rec, e := newRecorder()
	sr := schema.StreamReaderFromArray([]*schema.Message{
		textChunk("Let me search."),
		toolChunk(0, "call_a", "web_search", ""),
		toolChunk(0, "", "", `{"query":`),
		toolChunk(1, "call_b", "crawl", `{"url":`),
		toolChunk(0, "", "", `"go"}`),
		toolChunk(1, "", "", `"https://example.com"}`),
		toolChunk(1, "", "", ""), // an empty fragment sends nothing
	})
	msg, err := e.Message(model.AgentResearcher, sr)
	if err != nil {
		t.Fatalf("Message: %v", err)
	}
	checkMessage(t, rec.events, model.AgentResearcher)

	type want struct {
		typ   string
		index int
		id    string
		name  string
		args  string
	}
	wants := []want{
		{typ: model.EventMessageChunk},
		{model.EventToolCalls, 0, "call_a", "web_search", ""},
		{model.EventToolCallChunks, 0, "", "", `{"query":`},
		{model.EventToolCalls, 1, "call_b", "crawl", `{"url":`},
		{model.EventToolCallChunks, 0, "", "", `"go"}`},
		{model.EventToolCallChunks, 1, "", "", `"https://example.com"}`},
	}
	if len(rec.events) != len(wants)+1 {
		t.Fatalf("got %d events, want %d: %+v", len(rec.events), len(wants)+1, rec.events)
	}
	for i, w := range wants {
		ev := rec.events[i]
		if ev.Type != w.typ {
			t.Errorf("event %d type = %s, want %s", i, ev.Type, w.typ)
			continue
		}
		if ev.Data.FinishReason != "" {
			t.Errorf("event %d finish_reason = %q before the end", i, ev.Data.FinishReason)
		}
		if w.typ == model.EventMessageChunk {
			continue
		}
		if ev.Data.ToolCallChunks == nil || len(*ev.Data.ToolCallChunks) != 1 {
			t.Errorf("event %d tool_call_chunks = %v, want one entry", i, ev.Data.ToolCallChunks)
			continue
		}
		c := (*ev.Data.ToolCallChunks)[0]
		if c.Type != "tool_call_chunk" || c.Index != w.index || c.ID != w.id || c.Name != w.name || c.Args != w.args {
			t.Errorf("event %d chunk = %+v, want index %d id %q name %q args %q", i, c, w.index, w.id, w.name, w.args)
		}
		if w.typ == model.EventToolCalls {
			tc := ev.Data.ToolCalls
			if len(tc) != 1 || tc[0].Name != w.name || tc[0].ID != w.id || tc[0].Type != "tool_call" || tc[0].Args == nil {
				t.Errorf("event %d tool_calls = %+v, want one call %s/%s with empty args", i, tc, w.id, w.name)
			}
		} else if len(ev.Data.ToolCalls) != 0 {
			t.Errorf("event %d: a fragment carries tool_calls %+v", i, ev.Data.ToolCalls)
		}
	}

	final := rec.events[len(rec.events)-1]
	if final.Type != model.EventToolCalls || final.Data.FinishReason != "tool_calls" {
		t.Fatalf("final event = %s/%q, want tool_calls/tool_calls", final.Type, final.Data.FinishReason)
	}
	wantCalls := []model.ToolCall{
		{Type: "tool_call", ID: "call_a", Name: "web_search", Args: map[string]any{"query": "go"}},
		{Type: "tool_call", ID: "call_b", Name: "crawl", Args: map[string]any{"url": "https://example.com"}},
	}
	if !reflect.DeepEqual(final.Data.ToolCalls, wantCalls) {
		t.Errorf("final tool_calls = %+v, want %+v", final.Data.ToolCalls, wantCalls)
	}
	wantChunks := []model.ToolCallChunk{
		{Type: "tool_call_chunk", Index: 0, ID: "call_a", Name: "web_search", Args: `{"query":"go"}`},
		{Type: "tool_call_chunk", Index: 1, ID: "call_b", Name: "crawl", Args: `{"url":"https://example.com"}`},
	}
	if final.Data.ToolCallChunks == nil || !reflect.DeepEqual(*final.Data.ToolCallChunks, wantChunks) {
		t.Errorf("final tool_call_chunks = %v, want %+v", final.Data.ToolCallChunks, wantChunks)
	}
	if len(msg.ToolCalls) != 2 || msg.Content != "Let me search." {
		t.Errorf("returned message = %+v", msg)
	}
}

func TestMessageStreamError(t *testing.T) {
	rec, e := newRecorder()
	boom := errors.New("connection reset")
	sr, sw := schema.Pipe[*schema.Message](4)
	sw.Send(textChunk("partial "), nil)
	sw.Send(toolChunk(0, "call_a", "web_search", `{"q":`), nil)
	sw.Send(nil, boom)
	sw.Close()

	called := false
	msg, err := e.MessageThen(model.AgentReporter, sr, func(*schema.Message) string { called = true; return "tail" })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if called {
		t.Error("the tail ran after a failed stream")
	}
	if msg == nil || msg.Content != "partial " {
		t.Errorf("returned message = %+v, want the partial content", msg)
	}
	checkMessage(t, rec.events, model.AgentReporter)
	last := rec.events[len(rec.events)-1]
	if last.Type != model.EventMessageChunk || last.Data.FinishReason != "stop" {
		t.Errorf("last event = %s/%q, want message_chunk/stop", last.Type, last.Data.FinishReason)
	}
}

func TestMessageThenTail(t *testing.T) {
	tests := []struct {
		name      string
		tail      string
		wantCount int
	}{
		{"tail sent before finish", "\n\n[1] source", 3},
		{"empty tail sends nothing", "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, e := newRecorder()
			var seen string
			msg, err := e.MessageThen(model.AgentReporter, schema.StreamReaderFromArray([]*schema.Message{textChunk("<think>r</think>Report")}),
				func(m *schema.Message) string { seen = m.Content; return tt.tail })
			if err != nil {
				t.Fatalf("MessageThen: %v", err)
			}
			if seen != "Report" {
				t.Errorf("tail saw content %q, want the stripped message", seen)
			}
			checkMessage(t, rec.events, model.AgentReporter)
			if len(rec.events) != tt.wantCount {
				t.Fatalf("got %d events, want %d: %+v", len(rec.events), tt.wantCount, rec.events)
			}
			if tt.tail != "" {
				if got := rec.events[1]; got.Data.Content != tt.tail || got.Data.FinishReason != "" {
					t.Errorf("tail event = %+v", got.Data)
				}
			}
			if last := rec.events[len(rec.events)-1]; last.Data.FinishReason != "stop" || last.Data.Content != "" {
				t.Errorf("finish event = %+v", last.Data)
			}
			if want := "Report" + tt.tail; msg.Content != want {
				t.Errorf("returned content = %q, want %q", msg.Content, want)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		raw  string
		want map[string]any
	}{
		{"", map[string]any{}},
		{`{"a":1,"b":"x"}`, map[string]any{"a": float64(1), "b": "x"}},
		{`{"a":`, map[string]any{"input": `{"a":`}},
		{"not json", map[string]any{"input": "not json"}},
		{`[1,2]`, map[string]any{"input": `[1,2]`}},
		{`"str"`, map[string]any{"input": `"str"`}},
		{`null`, map[string]any{"input": `null`}},
	}
	for _, tt := range tests {
		if got := ParseArgs(tt.raw); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseArgs(%q) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

func TestInterrupt(t *testing.T) {
	rec, e := newRecorder()
	opts := []model.Option{{Text: "Edit plan", Value: "edit_plan"}, {Text: "Start research", Value: "accepted"}}
	e.Interrupt("int-1", "Please review the plan.", opts)
	if len(rec.events) != 1 {
		t.Fatalf("got %d events, want 1", len(rec.events))
	}
	ev := rec.events[0]
	want := model.EventData{ThreadID: testThread, ID: "int-1", Role: "assistant", Content: "Please review the plan.", FinishReason: "interrupt", Options: opts}
	if ev.Type != model.EventInterrupt || !reflect.DeepEqual(ev.Data, want) {
		t.Errorf("event = %s %+v, want interrupt %+v", ev.Type, ev.Data, want)
	}
	if ev.Data.Agent != "" {
		t.Errorf("interrupt carries agent %q", ev.Data.Agent)
	}
}

func TestCitations(t *testing.T) {
	rec, e := newRecorder()
	e.Citations(nil)
	e.Citations([]model.Citation{})
	if len(rec.events) != 0 {
		t.Fatalf("empty citations emitted %+v", rec.events)
	}
	c := []model.Citation{{URL: "https://example.com", Title: "Example", SourceType: "web_search"}}
	e.Citations(c)
	if len(rec.events) != 1 {
		t.Fatalf("got %d events, want 1", len(rec.events))
	}
	ev := rec.events[0]
	if ev.Type != model.EventCitations || ev.Data.ThreadID != testThread || !reflect.DeepEqual(ev.Data.Citations, c) {
		t.Errorf("event = %s %+v", ev.Type, ev.Data)
	}
}

func TestError(t *testing.T) {
	rec, e := newRecorder()
	e.Error("model unavailable", "failed")
	want := model.Event{Type: model.EventError, Data: model.EventData{ThreadID: testThread, Error: "model unavailable", Reason: "failed"}}
	if len(rec.events) != 1 || !reflect.DeepEqual(rec.events[0], want) {
		t.Errorf("events = %+v, want %+v", rec.events, want)
	}
}

func TestToolResult(t *testing.T) {
	rec, e := newRecorder()
	e.ToolResult(model.AgentResearcher, "call_a", "result text")
	if len(rec.events) != 1 {
		t.Fatalf("got %d events, want 1", len(rec.events))
	}
	d := rec.events[0].Data
	if rec.events[0].Type != model.EventToolCallResult || d.ToolCallID != "call_a" || d.Content != "result text" ||
		d.Agent != model.AgentResearcher || !strings.HasPrefix(d.ID, "tool--") {
		t.Errorf("event = %+v", rec.events[0])
	}
}

func TestFromContext(t *testing.T) {
	rec, e := newRecorder()
	if got := From(WithEmitter(context.Background(), e)); got != e {
		t.Errorf("From returned %p, want %p", got, e)
	}
	// Without an emitter, events are discarded instead of panicking.
	From(context.Background()).ToolResult(model.AgentResearcher, "call_1", "dropped")
	if len(rec.events) != 0 {
		t.Errorf("discarding emitter reached the recorder: %+v", rec.events)
	}
}

func TestNewIDUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewID("p-")
		if !strings.HasPrefix(id, "p-") || len(id) != len("p-")+24 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}
