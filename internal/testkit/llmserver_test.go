package testkit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
)

func newEinoModel(t *testing.T, l *LLM, format *einoopenai.ChatCompletionResponseFormat) *einoopenai.ChatModel {
	t.Helper()
	cm, err := einoopenai.NewChatModel(context.Background(), &einoopenai.ChatModelConfig{
		BaseURL:        l.URL,
		APIKey:         "test-key",
		Model:          "fake-model",
		ResponseFormat: format,
		HTTPClient:     &http.Client{Timeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatalf("NewChatModel: %v", err)
	}
	return cm
}

var searchTool = &schema.ToolInfo{
	Name: "web_search",
	Desc: "search the web",
	ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
		"query": {Type: schema.String, Required: true},
	}),
}

func TestLLMWithEinoClient(t *testing.T) {
	tests := []struct {
		name   string
		reply  Reply
		stream bool
	}{
		{"generate text", Reply{Content: "hello world, this is a longer answer", Reasoning: "think first"}, false},
		{"stream text", Reply{Content: "héllo wörld 你好世界, streamed in pieces", Reasoning: "先想一想 then answer"}, true},
		{"generate tool calls", Reply{ToolCalls: []ReplyToolCall{
			{Name: "web_search", Args: `{"query":"go generics"}`},
			{ID: "call_x", Name: "web_search", Args: `{"query":"深度研究"}`},
		}}, false},
		{"stream tool calls", Reply{Reasoning: "need search", ToolCalls: []ReplyToolCall{
			{Name: "web_search", Args: `{"query":"go generics"}`},
			{ID: "call_x", Name: "web_search", Args: `{"query":"深度研究"}`},
		}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLLM(t, Always(tc.reply))
			cm := newEinoModel(t, l, nil)
			tm, err := cm.WithTools([]*schema.ToolInfo{searchTool})
			if err != nil {
				t.Fatalf("WithTools: %v", err)
			}
			in := []*schema.Message{
				schema.SystemMessage("you are a researcher"),
				schema.UserMessage("first question"),
				schema.AssistantMessage("", []schema.ToolCall{{ID: "c1", Function: schema.FunctionCall{Name: "web_search", Arguments: `{"query":"q"}`}}}),
				schema.ToolMessage("tool output", "c1"),
				schema.UserMessage("what about generics?"),
			}
			ctx := context.Background()
			var got *schema.Message
			if tc.stream {
				sr, err := tm.Stream(ctx, in)
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				var parts []*schema.Message
				for {
					m, err := sr.Recv()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatalf("Recv: %v", err)
					}
					parts = append(parts, m)
				}
				sr.Close()
				if len(parts) < 3 {
					t.Errorf("stream delivered %d chunks, want several", len(parts))
				}
				got, err = schema.ConcatMessages(parts)
				if err != nil {
					t.Fatalf("ConcatMessages: %v", err)
				}
			} else {
				got, err = tm.Generate(ctx, in)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
			}

			if got.Content != tc.reply.Content {
				t.Errorf("content = %q, want %q", got.Content, tc.reply.Content)
			}
			if got.ReasoningContent != tc.reply.Reasoning {
				t.Errorf("reasoning = %q, want %q", got.ReasoningContent, tc.reply.Reasoning)
			}
			if len(got.ToolCalls) != len(tc.reply.ToolCalls) {
				t.Fatalf("got %d tool calls, want %d", len(got.ToolCalls), len(tc.reply.ToolCalls))
			}
			for i, want := range tc.reply.ToolCalls {
				call := got.ToolCalls[i]
				if call.Function.Name != want.Name || call.Function.Arguments != want.Args {
					t.Errorf("tool call %d = %s(%s), want %s(%s)", i, call.Function.Name, call.Function.Arguments, want.Name, want.Args)
				}
				if call.ID == "" || (want.ID != "" && call.ID != want.ID) {
					t.Errorf("tool call %d id = %q, want %q", i, call.ID, want.ID)
				}
			}
			wantFinish := "stop"
			if len(tc.reply.ToolCalls) > 0 {
				wantFinish = "tool_calls"
			}
			if got.ResponseMeta == nil || got.ResponseMeta.FinishReason != wantFinish {
				t.Errorf("finish reason meta = %+v, want %q", got.ResponseMeta, wantFinish)
			}

			if l.Count() != 1 {
				t.Fatalf("server saw %d requests, want 1", l.Count())
			}
			req := l.Last()
			if req.Stream != tc.stream || req.Model != "fake-model" {
				t.Errorf("request stream=%v model=%q", req.Stream, req.Model)
			}
			if req.System() != "you are a researcher" || req.LastUser() != "what about generics?" {
				t.Errorf("System()=%q LastUser()=%q", req.System(), req.LastUser())
			}
			if !req.HasTool("web_search") || req.HasTool("missing") {
				t.Errorf("HasTool wrong, tools = %+v", req.Tools)
			}
			results := req.ToolResults()
			if len(results) != 1 || results[0].ToolCallID != "c1" || results[0].Content != "tool output" {
				t.Errorf("ToolResults() = %+v", results)
			}
			if calls := req.Messages[2].ToolCalls; len(calls) != 1 || calls[0].Name != "web_search" {
				t.Errorf("assistant history tool calls = %+v", calls)
			}
			if req.JSONMode() {
				t.Error("JSONMode() = true without response_format")
			}
			if got := req.Header.Get("Authorization"); got != "Bearer test-key" {
				t.Errorf("Authorization header = %q", got)
			}
		})
	}
}

func TestLLMJSONModeVisible(t *testing.T) {
	type plan struct {
		Title string   `json:"title"`
		Steps []string `json:"steps"`
	}
	tests := []struct {
		name       string
		format     *einoopenai.ChatCompletionResponseFormat
		wantType   string
		wantSchema string
	}{
		{"json_object", &einoopenai.ChatCompletionResponseFormat{Type: einoopenai.ChatCompletionResponseFormatTypeJSONObject}, "json_object", ""},
		{"json_schema", &einoopenai.ChatCompletionResponseFormat{
			Type: einoopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &einoopenai.ChatCompletionResponseFormatJSONSchema{
				Name:       "plan",
				JSONSchema: jsonschema.Reflect(&plan{}),
			},
		}, "json_schema", "plan"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLLM(t, func(req *ChatRequest) Reply {
				if !req.JSONMode() {
					return Reply{Content: "not json"}
				}
				return Reply{Content: `{"title":"t","steps":[]}`}
			})
			out, err := newEinoModel(t, l, tc.format).Generate(context.Background(), []*schema.Message{schema.UserMessage("plan")})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if out.Content != `{"title":"t","steps":[]}` {
				t.Errorf("content = %q, responder did not see JSON mode", out.Content)
			}
			rf := l.Last().ResponseFormat
			if rf == nil || rf.Type != tc.wantType {
				t.Fatalf("response_format = %+v, want type %q", rf, tc.wantType)
			}
			if tc.wantSchema != "" {
				if rf.JSONSchema == nil || rf.JSONSchema.Name != tc.wantSchema || !strings.Contains(string(rf.JSONSchema.Schema), "steps") {
					t.Errorf("json_schema = %+v", rf.JSONSchema)
				}
			}
		})
	}
}

func TestLLMErrorsWithEinoClient(t *testing.T) {
	tests := []struct {
		name       string
		reply      Reply
		stream     bool
		wantStatus int
	}{
		{"generate 500", Reply{Status: 500}, false, 500},
		{"stream 429", Reply{Status: 429, Header: http.Header{"Retry-After": {"1"}}}, true, 429},
		{"generate 400", Reply{Status: 400, ErrorMessage: "bad model"}, false, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLLM(t, Always(tc.reply))
			cm := newEinoModel(t, l, nil)
			in := []*schema.Message{schema.UserMessage("hi")}
			var err error
			if tc.stream {
				var sr *schema.StreamReader[*schema.Message]
				sr, err = cm.Stream(context.Background(), in)
				if sr != nil {
					sr.Close()
				}
			} else {
				_, err = cm.Generate(context.Background(), in)
			}
			var apiErr *einoopenai.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T) is not an APIError", err, err)
			}
			if apiErr.HTTPStatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", apiErr.HTTPStatusCode, tc.wantStatus)
			}
			if tc.reply.ErrorMessage != "" && apiErr.Message != tc.reply.ErrorMessage {
				t.Errorf("message = %q, want %q", apiErr.Message, tc.reply.ErrorMessage)
			}
		})
	}
}

func TestLLMBreakAfterFailsStream(t *testing.T) {
	l := NewLLM(t, Always(Reply{Content: "this stream will be cut in the middle", BreakAfter: 2}))
	sr, err := newEinoModel(t, l, nil).Stream(context.Background(), []*schema.Message{schema.UserMessage("hi")})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer sr.Close()
	for {
		_, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatal("stream ended cleanly, want an error")
		}
		if err != nil {
			return
		}
	}
}

func TestLLMHangAndDelayRespectClient(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
	}{
		{"hang", Reply{Hang: true}},
		{"long delay", Reply{Delay: time.Minute}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLLM(t, Always(tc.reply))
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := newEinoModel(t, l, nil).Generate(ctx, []*schema.Message{schema.UserMessage("hi")})
			if err == nil {
				t.Fatal("Generate succeeded, want a timeout")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error = %v, want deadline exceeded", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v, want about 200ms", d)
			}
		})
	}
}

// readSSE posts a raw request and returns the decoded data payloads.
func readSSE(t *testing.T, url, body string) []string {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type = %q", ct)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		out = append(out, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

type rawChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

func TestLLMStreamWireFormat(t *testing.T) {
	l := NewLLM(t, Always(Reply{
		Content:   "abcdefghijklmnopqrstuvwxyz0123456789",
		ToolCalls: []ReplyToolCall{{Name: "f", Args: `{"a":1,"b":"two"}`}},
	}))
	tests := []struct {
		name      string
		body      string
		wantUsage bool
	}{
		{"with usage and unknown fields", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"future_field":{"x":1},"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, true},
		{"without usage", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := readSSE(t, l.URL, tc.body)
			if len(data) == 0 || data[len(data)-1] != "[DONE]" {
				t.Fatalf("stream does not end with [DONE]: %q", data)
			}
			var (
				ids         = map[string]bool{}
				contentN    int
				content     strings.Builder
				headerSeen  bool
				fragments   int
				args        strings.Builder
				finish      string
				usageChunks int
			)
			for _, d := range data[:len(data)-1] {
				var c rawChunk
				if err := json.Unmarshal([]byte(d), &c); err != nil {
					t.Fatalf("chunk %q: %v", d, err)
				}
				ids[c.ID] = true
				if c.Object != "chat.completion.chunk" {
					t.Errorf("object = %q", c.Object)
				}
				if c.Usage != nil {
					usageChunks++
					if len(c.Choices) != 0 || c.Usage.TotalTokens == 0 {
						t.Errorf("bad usage chunk %s", d)
					}
				}
				for _, ch := range c.Choices {
					if ch.FinishReason != nil {
						finish = *ch.FinishReason
					}
					if ch.Delta.Content != nil && *ch.Delta.Content != "" {
						contentN++
						content.WriteString(*ch.Delta.Content)
					}
					for _, tcd := range ch.Delta.ToolCalls {
						if tcd.Index == nil || *tcd.Index != 0 {
							t.Errorf("tool delta without index 0: %s", d)
						}
						if tcd.ID != "" {
							if headerSeen || tcd.Function.Name == nil || *tcd.Function.Name != "f" || tcd.Type != "function" ||
								tcd.Function.Arguments == nil || *tcd.Function.Arguments != "" {
								t.Errorf("bad tool header delta %s", d)
							}
							headerSeen = true
							continue
						}
						if !headerSeen || tcd.Function.Name != nil || tcd.Type != "" || tcd.Function.Arguments == nil {
							t.Errorf("bad tool fragment delta %s", d)
							continue
						}
						fragments++
						args.WriteString(*tcd.Function.Arguments)
					}
				}
			}
			if len(ids) != 1 {
				t.Errorf("chunk ids = %v, want one stable id", ids)
			}
			if contentN < 3 || contentN > 8 || content.String() != "abcdefghijklmnopqrstuvwxyz0123456789" {
				t.Errorf("content in %d pieces = %q", contentN, content.String())
			}
			if fragments < 2 || args.String() != `{"a":1,"b":"two"}` {
				t.Errorf("args in %d fragments = %q", fragments, args.String())
			}
			if finish != "tool_calls" {
				t.Errorf("finish_reason = %q", finish)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.wantUsage]; usageChunks != want {
				t.Errorf("usage chunks = %d, want %d", usageChunks, want)
			}
		})
	}
}

func TestLLMRejectsBadRequests(t *testing.T) {
	l := NewLLM(t, Always(Reply{Content: "x"}))
	tests := []struct {
		name, method, path, body string
		wantStatus               int
	}{
		{"invalid json", http.MethodPost, "/chat/completions", `{"messages":`, http.StatusBadRequest},
		{"bad content type", http.MethodPost, "/chat/completions", `{"messages":[{"role":"user","content":42}]}`, http.StatusBadRequest},
		{"unknown path", http.MethodPost, "/embeddings", `{}`, http.StatusNotFound},
		{"models", http.MethodGet, "/models", "", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, l.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus >= 400 {
				var body struct {
					Error *struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error == nil || body.Error.Message == "" {
					t.Errorf("error body not OpenAI-style: %v %+v", err, body)
				}
			}
		})
	}
	if l.Count() != 0 {
		t.Errorf("invalid requests were recorded: %d", l.Count())
	}
}

func TestSequenceAndFailFirst(t *testing.T) {
	tests := []struct {
		name string
		r    Responder
		want []string // content, or "E<status>"
	}{
		{"sequence repeats last", Sequence(Reply{Content: "a"}, Reply{Content: "b"}), []string{"a", "b", "b", "b"}},
		{"empty sequence", Sequence(), []string{"", ""}},
		{"fail first two", FailFirst(2, 503, Always(Reply{Content: "ok"})), []string{"E503", "E503", "ok", "ok"}},
		{"fail none", FailFirst(0, 500, Sequence(Reply{Content: "x"})), []string{"x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				r := tc.r(&ChatRequest{})
				got := r.Content
				if r.Status != 0 {
					got = fmt.Sprintf("E%d", r.Status)
				}
				if got != want {
					t.Errorf("call %d = %q, want %q", i, got, want)
				}
			}
		})
	}
}

func TestSplitRunes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"abcdef", 3, []string{"ab", "cd", "ef"}},
		{"你好世界", 2, []string{"你好", "世界"}},
		{"a", 2, []string{"", "a"}},
		{"", 0, nil},
	}
	for _, tc := range tests {
		got := llmSplitRunes(tc.in, tc.n)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("llmSplitRunes(%q,%d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func FuzzSplitRunes(f *testing.F) {
	f.Add("hello world", 3)
	f.Add("你好世界，深度研究", 8)
	f.Add("\xff\xfeab\xe4\xbd", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = (n%10+10)%10 + 1
		parts := llmSplitRunes(s, n)
		if len(parts) != n {
			t.Fatalf("got %d parts, want %d", len(parts), n)
		}
		if strings.Join(parts, "") != s {
			t.Fatalf("parts %q do not reassemble %q", parts, s)
		}
		if utf8.ValidString(s) {
			for _, p := range parts {
				if !utf8.ValidString(p) {
					t.Fatalf("part %q cuts a rune", p)
				}
			}
		}
	})
}

func FuzzDecodeChatRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	f.Add(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`)
	f.Add(`{"messages":null,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := llmDecodeChatRequest([]byte(body))
		if err != nil {
			return
		}
		if string(req.Raw) != body {
			t.Fatalf("Raw not preserved")
		}
		if len(req.ToolResults()) > len(req.Messages) {
			t.Fatalf("more tool results than messages")
		}
		if req.JSONMode() && req.ResponseFormat == nil {
			t.Fatalf("JSON mode without response_format")
		}
		if req.System() != "" && len(req.Messages) == 0 {
			t.Fatalf("system prompt without messages")
		}
	})
}
