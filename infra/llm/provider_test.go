package llm

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/deer-go/deer-go/internal/testkit"
)

// newTestProvider points every role at url with fast retry settings.
func newTestProvider(t *testing.T, url string, mutate func(*Options)) *Provider {
	t.Helper()
	opts := Options{
		Endpoints: map[Role]Endpoint{
			RoleBasic: {BaseURL: url, APIKey: "sk-test-secret", Model: "basic-m", BaseURLEnv: "LLM_BASE_URL"},
		},
		Timeout:     5 * time.Second,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		BaseBackoff: time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
	}
	if mutate != nil {
		mutate(&opts)
	}
	p, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func userMsg(s string) []*schema.Message { return []*schema.Message{schema.UserMessage(s)} }

// drain reads a stream to the end and concatenates it.
func drain(t *testing.T, sr *schema.StreamReader[*schema.Message]) (*schema.Message, int, error) {
	t.Helper()
	defer sr.Close()
	var parts []*schema.Message
	for {
		m, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, len(parts), err
		}
		parts = append(parts, m)
	}
	if len(parts) == 0 {
		return &schema.Message{}, 0, nil
	}
	m, err := schema.ConcatMessages(parts)
	if err != nil {
		t.Fatalf("ConcatMessages: %v", err)
	}
	return m, len(parts), nil
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name    string
		eps     map[Role]Endpoint
		wantErr string
	}{
		{"no basic", map[Role]Endpoint{RoleCode: {Model: "c"}}, "basic role needs a model"},
		{"basic without model", map[Role]Endpoint{RoleBasic: {BaseURL: "http://127.0.0.1:1/v1"}}, "basic role needs a model"},
		{"bad scheme", map[Role]Endpoint{RoleBasic: {BaseURL: "localhost:11434", Model: "m", BaseURLEnv: "LLM_BASE_URL"}}, "check LLM_BASE_URL"},
		{"credentials redacted", map[Role]Endpoint{RoleBasic: {BaseURL: "ftp://user:hunter2@host/v1", Model: "m"}}, "must be an http(s) URL"},
		{"bad reasoning url", map[Role]Endpoint{RoleBasic: {Model: "m"}, RoleReasoning: {Model: "r", BaseURL: "::"}}, "reasoning endpoint"},
		{"default base url", map[Role]Endpoint{RoleBasic: {Model: "m"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(context.Background(), Options{Endpoints: tc.eps})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if got := p.endpoints[RoleBasic].BaseURL; got != DefaultBaseURL {
					t.Errorf("base URL = %q, want default", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks credentials: %v", err)
			}
		})
	}
}

func TestGenerateKeepsReasoningAndToolCalls(t *testing.T) {
	tests := []struct {
		name  string
		reply testkit.Reply
	}{
		{"text with reasoning", testkit.Reply{Content: "The answer is 42.", Reasoning: "Let me think step by step."}},
		{"tool calls", testkit.Reply{ToolCalls: []testkit.ReplyToolCall{{Name: "web_search", Args: `{"query":"eino"}`}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := testkit.NewLLM(t, testkit.Always(tc.reply))
			p := newTestProvider(t, l.URL, nil)
			out, err := p.Model(RoleBasic).Generate(context.Background(), userMsg("question"))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if out.Content != tc.reply.Content || out.ReasoningContent != tc.reply.Reasoning {
				t.Errorf("got content %q reasoning %q", out.Content, out.ReasoningContent)
			}
			if len(out.ToolCalls) != len(tc.reply.ToolCalls) {
				t.Fatalf("tool calls = %+v", out.ToolCalls)
			}
			for i, want := range tc.reply.ToolCalls {
				if got := out.ToolCalls[i].Function; got.Name != want.Name || got.Arguments != want.Args {
					t.Errorf("tool call %d = %+v", i, got)
				}
			}
			if l.Count() != 1 || l.Last().Model != "basic-m" {
				t.Errorf("requests = %d, model %q", l.Count(), l.Last().Model)
			}
		})
	}
}

func TestStreamReassemblesToolCalls(t *testing.T) {
	reply := testkit.Reply{
		Reasoning: "需要搜索 first",
		Content:   "Searching now.",
		ToolCalls: []testkit.ReplyToolCall{
			{Name: "web_search", Args: `{"query":"deer-flow architecture"}`},
			{Name: "crawl", Args: `{"url":"https://example.com/页面"}`},
		},
	}
	l := testkit.NewLLM(t, testkit.Always(reply))
	p := newTestProvider(t, l.URL, nil)
	tm, err := p.Model(RoleBasic).WithTools([]*schema.ToolInfo{{Name: "web_search"}, {Name: "crawl"}})
	if err != nil {
		t.Fatalf("WithTools: %v", err)
	}
	if _, ok := tm.(*retrying); !ok {
		t.Fatalf("WithTools returned %T, want the retrying wrapper", tm)
	}
	sr, err := tm.Stream(context.Background(), userMsg("research deer-flow"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	out, n, err := drain(t, sr)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if n < 3 {
		t.Errorf("got %d chunks, want a real stream", n)
	}
	if out.Content != reply.Content || out.ReasoningContent != reply.Reasoning {
		t.Errorf("content %q reasoning %q", out.Content, out.ReasoningContent)
	}
	if len(out.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v", out.ToolCalls)
	}
	for i, want := range reply.ToolCalls {
		if got := out.ToolCalls[i]; got.Function.Name != want.Name || got.Function.Arguments != want.Args || got.ID == "" {
			t.Errorf("tool call %d = %+v, want %s(%s)", i, got, want.Name, want.Args)
		}
	}
	if !l.Last().HasTool("crawl") || !l.Last().Stream {
		t.Errorf("request did not carry tools/stream: %+v", l.Last())
	}
}

func TestRoleFallbackAndInheritance(t *testing.T) {
	basicSrv := testkit.NewLLM(t, testkit.Always(testkit.Reply{Content: "basic"}))
	localSrv := testkit.NewLLM(t, testkit.Always(testkit.Reply{Content: "local"}))
	p := newTestProvider(t, basicSrv.URL, func(o *Options) {
		o.Endpoints[RoleReasoning] = Endpoint{Model: "reason-m"}                 // inherits URL and key
		o.Endpoints[RoleCode] = Endpoint{Model: "code-m", BaseURL: localSrv.URL} // own URL, no key
		o.Endpoints["vision"] = Endpoint{BaseURL: localSrv.URL}                  // no model: ignored
	})
	tests := []struct {
		role      Role
		wantSrv   *testkit.LLM
		wantModel string
		wantAuth  string
		has       bool
	}{
		{RoleBasic, basicSrv, "basic-m", "Bearer sk-test-secret", true},
		{RoleReasoning, basicSrv, "reason-m", "Bearer sk-test-secret", true},
		{RoleCode, localSrv, "code-m", "", true},
		{"vision", basicSrv, "basic-m", "Bearer sk-test-secret", false},
		{"unknown", basicSrv, "basic-m", "Bearer sk-test-secret", false},
	}
	for _, tc := range tests {
		t.Run(string(tc.role), func(t *testing.T) {
			before := tc.wantSrv.Count()
			if _, err := p.Model(tc.role).Generate(context.Background(), userMsg("hi")); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if tc.wantSrv.Count() != before+1 {
				t.Fatalf("request went to the wrong server")
			}
			req := tc.wantSrv.Last()
			if req.Model != tc.wantModel {
				t.Errorf("model = %q, want %q", req.Model, tc.wantModel)
			}
			if got := req.Header.Get("Authorization"); got != tc.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tc.wantAuth)
			}
			if p.Has(tc.role) != tc.has {
				t.Errorf("Has(%s) = %v", tc.role, !tc.has)
			}
		})
	}
	got := p.Configured()
	want := map[Role]string{RoleBasic: "basic-m", RoleReasoning: "reason-m", RoleCode: "code-m"}
	if len(got) != len(want) {
		t.Fatalf("Configured() = %v, want %v", got, want)
	}
	for r, m := range want {
		if got[r] != m {
			t.Errorf("Configured()[%s] = %q, want %q", r, got[r], m)
		}
	}
	if roles := p.Roles(); len(roles) != 3 || roles[0] != RoleBasic {
		t.Errorf("Roles() = %v", roles)
	}
}

func TestJSONModelResponseFormat(t *testing.T) {
	type plan struct {
		Title string   `json:"title"`
		Steps []string `json:"steps"`
	}
	tests := []struct {
		name       string
		jsonSchema bool
		schema     *jsonschema.Schema
		schemaName string
		wantType   string
		wantName   string
	}{
		{"object mode", false, jsonschema.Reflect(&plan{}), "plan", "json_object", ""},
		{"schema mode", true, jsonschema.Reflect(&plan{}), "research plan!", "json_schema", "research_plan_"},
		{"schema mode without schema", true, nil, "plan", "json_object", ""},
		{"empty name", true, jsonschema.Reflect(&plan{}), "", "json_schema", "response"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := testkit.NewLLM(t, func(req *testkit.ChatRequest) testkit.Reply {
				if !req.JSONMode() {
					return testkit.Reply{Content: "prose"}
				}
				return testkit.Reply{Content: `{"title":"x","steps":["a"]}`}
			})
			p := newTestProvider(t, l.URL, func(o *Options) {
				ep := o.Endpoints[RoleBasic]
				ep.JSONSchema = tc.jsonSchema
				o.Endpoints[RoleBasic] = ep
			})
			m := p.JSONModel(RoleReasoning, tc.schema, tc.schemaName)
			out, err := m.Generate(context.Background(), userMsg("plan as json"))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if out.Content != `{"title":"x","steps":["a"]}` {
				t.Errorf("content = %q", out.Content)
			}
			rf := l.Last().ResponseFormat
			if rf == nil || rf.Type != tc.wantType {
				t.Fatalf("response_format = %+v, want %s", rf, tc.wantType)
			}
			if tc.wantName != "" {
				if rf.JSONSchema == nil || rf.JSONSchema.Name != tc.wantName || !strings.Contains(string(rf.JSONSchema.Schema), `"steps"`) {
					t.Errorf("json_schema = %+v", rf.JSONSchema)
				}
			}
			// The plain model must stay free of response_format.
			if _, err := p.Model(RoleBasic).Generate(context.Background(), userMsg("prose")); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if l.Last().ResponseFormat != nil {
				t.Errorf("plain model sent response_format %+v", l.Last().ResponseFormat)
			}
		})
	}
}
