package graph

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"

	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/stream"
	"github.com/deer-go/deer-go/infra/store"
	"github.com/deer-go/deer-go/prompts"
)

// instantModel is an in-process model with no latency: it answers each agent the way a good model would, so a
// benchmark measures only the graph's own work.
type instantModel struct{ tools []*schema.ToolInfo }

func (m *instantModel) WithTools(t []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return &instantModel{tools: t}, nil
}

func (m *instantModel) Generate(ctx context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	return m.reply(in), nil
}

func (m *instantModel) Stream(ctx context.Context, in []*schema.Message, _ ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg := m.reply(in)
	// Split content into a few chunks as a provider would.
	var chunks []*schema.Message
	c := msg.Content
	for len(c) > 0 {
		n := min(len(c), 40)
		chunks = append(chunks, &schema.Message{Role: schema.Assistant, Content: c[:n]})
		c = c[n:]
	}
	if len(msg.ToolCalls) > 0 {
		chunks = append(chunks, &schema.Message{Role: schema.Assistant, ToolCalls: msg.ToolCalls})
	}
	return schema.StreamReaderFromArray(chunks), nil
}

func (m *instantModel) reply(in []*schema.Message) *schema.Message {
	first, _, _ := strings.Cut(in[0].Content, "\n")
	toolResults := 0
	for _, x := range in {
		if x.Role == schema.Tool {
			toolResults++
		}
	}
	call := func(name, args string) *schema.Message {
		i := 0
		return &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{{Index: &i, ID: "call_" + name, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}}}
	}
	switch {
	case strings.Contains(first, "coordinator"):
		return call("handoff_to_planner", `{"research_topic":"towers","locale":"en-US"}`)
	case strings.Contains(first, "planner"):
		return &schema.Message{Role: schema.Assistant, Content: `{"locale":"en-US","has_enough_context":false,"thought":"t","title":"Towers","steps":[` +
			`{"id":"s1","need_search":true,"title":"Heights","description":"find","step_type":"research"},` +
			`{"id":"s2","need_search":false,"title":"Ratio","description":"compute","step_type":"processing","depends_on":["s1"]},` +
			`{"id":"s3","need_search":false,"title":"Check","description":"check","step_type":"analysis"}]}`}
	case strings.Contains(first, "researcher") && toolResults == 0:
		return call("web_search", `{"query":"tower height"}`)
	case strings.Contains(first, "coder") && toolResults == 0:
		return call("python_repl_tool", `{"code":"print(1)"}`)
	case strings.Contains(first, "reporter"):
		return &schema.Message{Role: schema.Assistant, Content: strings.Repeat("Report paragraph with [a link](https://example.com/a). ", 20)}
	}
	return &schema.Message{Role: schema.Assistant, Content: "Findings: the tower is 330 m. " + strings.Repeat("detail ", 30)}
}

type instantModels struct{ m *instantModel }

func (f instantModels) Chat(string) model.ToolCallingChatModel { return f.m }
func (f instantModels) JSON(string) model.ToolCallingChatModel { return f.m }
func (f instantModels) Has(string) bool                        { return false }

type fixedTool struct {
	name, out string
	calls     atomic.Int64
}

func (t *fixedTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: t.name, Desc: t.name}, nil
}
func (t *fixedTool) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	t.calls.Add(1)
	return t.out, nil
}

func newTestGraph(tb testing.TB) (*Graph, *fixedTool) {
	tb.Helper()
	p, err := prompts.Load()
	if err != nil {
		tb.Fatal(err)
	}
	results, _ := json.Marshal([]map[string]any{{"type": "page", "title": "A", "url": "https://example.com/a", "content": "330 m", "score": 0.9}})
	search := &fixedTool{name: "web_search", out: string(results)}
	g, err := Build(context.Background(), Deps{
		Models:        instantModels{&instantModel{}},
		Prompts:       p,
		Store:         store.NewMemory(),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		WebSearchTool: func(int) tool.InvokableTool { return search },
		PythonTool:    &fixedTool{name: "python_repl_tool", out: "Successfully executed:\n```python\nprint(1)\n```\nStdout: 1"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return g, search
}

func runState(thread string) *dm.State {
	return &dm.State{ThreadID: thread, Locale: "en-US", ResearchTopic: "towers",
		Messages: []dm.Message{{Role: "user", Content: "How tall are towers?"}},
		Settings: dm.Settings{AutoAcceptedPlan: true, MaxPlanIterations: 1, MaxStepNum: 3, MaxSearchResults: 3, EnableWebSearch: true, ReportStyle: "academic", Locale: "en-US", MaxClarificationRounds: 3}}
}

func TestGraphRunsAllStepsInOrder(t *testing.T) {
	g, search := newTestGraph(t)
	var agents []string
	ctx := stream.WithEmitter(context.Background(), stream.New("t", func(ev dm.Event) {
		if ev.Data.FinishReason != "" {
			agents = append(agents, ev.Data.Agent)
		}
	}))
	out, pause, err := g.Run(ctx, runState("t"))
	if err != nil || pause != nil {
		t.Fatalf("run: %v %v", err, pause)
	}
	want := "coordinator planner researcher researcher coder coder analyst reporter"
	if got := strings.Join(agents, " "); got != want {
		t.Errorf("agents = %s\nwant     %s", got, want)
	}
	for _, s := range out.Plan.Steps {
		if s.Status != dm.StatusDone || s.ExecutionRes == "" {
			t.Errorf("step %s: %s %q", s.ID, s.Status, s.ExecutionRes)
		}
	}
	if out.PlanIterations != 1 || out.FinalReport == "" || len(out.Citations) != 1 || search.calls.Load() != 1 {
		t.Errorf("iterations %d, report %d bytes, citations %d, searches %d", out.PlanIterations, len(out.FinalReport), len(out.Citations), search.calls.Load())
	}
	if !strings.Contains(out.FinalReport, "## References") {
		t.Error("report lacks the References section")
	}
}

// BenchmarkFullRun measures one research run's orchestration overhead (graph, state, prompts, event production,
// citations) with a zero-latency model and tools.
func BenchmarkFullRun(b *testing.B) {
	g, _ := newTestGraph(b)
	var events atomic.Int64
	ctx := stream.WithEmitter(context.Background(), stream.New("b", func(dm.Event) { events.Add(1) }))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := g.Run(ctx, runState("b")); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events.Load())/float64(b.N), "events/run")
}
