package model

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEventDataJSON(t *testing.T) {
	empty := []ToolCallChunk{}
	at := "2025-01-02T03:04:05Z"
	tests := []struct {
		name    string
		data    EventData
		want    string
		absent  []string // keys that must not appear
		present []string // substrings that must appear
	}{
		{
			name: "finish chunk omits empty fields",
			data: EventData{ThreadID: "t", Agent: AgentPlanner, ID: "run--1", Role: "assistant", FinishReason: "stop"},
			want: `{"thread_id":"t","agent":"planner","id":"run--1","role":"assistant","finish_reason":"stop"}`,
		},
		{
			name:    "empty tool_call_chunks still sent",
			data:    EventData{ThreadID: "t", ToolCallChunks: &empty},
			present: []string{`"tool_call_chunks":[]`},
			absent:  []string{`"content"`, `"tool_calls"`},
		},
		{
			name:   "nil tool_call_chunks omitted",
			data:   EventData{ThreadID: "t"},
			want:   `{"thread_id":"t"}`,
			absent: []string{`"tool_call_chunks"`},
		},
		{
			name: "citations with null accessed_at",
			data: EventData{ThreadID: "t", Citations: []Citation{{URL: "u", Title: "T", SourceType: "web_search", Agents: []string{"researcher"}}}},
			want: `{"thread_id":"t","citations":[{"url":"u","title":"T","accessed_at":null,"source_type":"web_search"}]}`,
		},
		{
			name:    "citations with accessed_at",
			data:    EventData{ThreadID: "t", Citations: []Citation{{URL: "u", AccessedAt: &at}}},
			present: []string{`"accessed_at":"2025-01-02T03:04:05Z"`},
		},
		{
			name: "tool call args",
			data: EventData{ThreadID: "t", ToolCalls: []ToolCall{{Type: "tool_call", ID: "c", Name: "n", Args: map[string]any{}}}},
			want: `{"thread_id":"t","tool_calls":[{"type":"tool_call","id":"c","name":"n","args":{}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.data)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			got := string(b)
			if tt.want != "" && got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			for _, s := range tt.present {
				if !strings.Contains(got, s) {
					t.Errorf("%s lacks %s", got, s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(got, s) {
					t.Errorf("%s contains %s", got, s)
				}
			}
		})
	}
}

func TestEventJSON(t *testing.T) {
	b, err := json.Marshal(Event{Type: EventError, Data: EventData{ThreadID: "t", Error: "boom", Reason: "failed"}})
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if want := `{"event":"error","data":{"thread_id":"t","error":"boom","reason":"failed"}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
