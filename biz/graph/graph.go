// Package graph is the research graph: one Eino compose graph whose nodes are the agents (coordinator,
// background investigator, planner, human feedback, research team, researcher, analyst, coder, reporter), each a
// subgraph load → agent → router over one shared State. The graph is compiled once; per-run settings live in
// State and the checkpoint id is the thread id.
package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"

	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/infra/crawl"
	"github.com/deer-go/deer-go/infra/search"
	"github.com/deer-go/deer-go/prompts"
)

// Model roles.
const (
	RoleBasic     = "basic"
	RoleReasoning = "reasoning"
	RoleCode      = "code"
)

// Models gives the graph its chat models. Implementations fall back to the basic role for unconfigured roles.
type Models interface {
	Chat(role string) model.ToolCallingChatModel
	// JSON returns a model that answers in JSON mode (json_schema where the provider supports it).
	JSON(role string) model.ToolCallingChatModel
	Has(role string) bool
}

// Searcher runs a web search.
type Searcher interface {
	Search(ctx context.Context, query string, max int) ([]search.Result, error)
}

// Deps are the graph's collaborators, built in main and passed in.
type Deps struct {
	Models  Models
	Prompts *prompts.Set
	Search  Searcher // nil: web search unavailable
	// WebSearchTool builds the web_search tool for a run's result limit; nil when Search is nil.
	WebSearchTool func(maxResults int) tool.InvokableTool
	// CrawlTool builds the crawl_tool over a run's page cache (so a page read twice in one run is fetched once);
	// nil: no crawling.
	CrawlTool  func(cache *crawl.Cache) tool.InvokableTool
	PythonTool tool.InvokableTool // nil: code execution disabled
	// AgentTools returns the extra tools an agent gets (the operator's MCP servers); may be nil.
	AgentTools func(ctx context.Context, agent string) []tool.InvokableTool
	// RequestTools connects the MCP servers a request named, for one step of one agent; close releases them.
	RequestTools func(ctx context.Context, mcpSettings string, agent string) (tools []tool.InvokableTool, close func() error, err error)
	Store        compose.CheckPointStore
	Logger       *slog.Logger
	Now          func() time.Time

	AgentMaxIterations int           // ReAct turns per step
	StepTimeout        time.Duration // one step of the plan
	ToolTimeout        time.Duration // one tool call
	ToolOutputTokens   int           // budget for a tool result fed back to a model
	TrimTokens         func(s string, maxTokens int) string
}

// Graph is the compiled research graph.
type Graph struct {
	deps Deps
	r    compose.Runnable[*dm.State, *dm.State]
}

// Node names of the top-level graph.
const nodeFinish = "finish"

func init() {
	// The checkpoint serializer must know the State's concrete types to restore a paused run.
	for name, register := range map[string]func(string) error{
		"deergo.State":    compose.RegisterSerializableType[dm.State],
		"deergo.Plan":     compose.RegisterSerializableType[dm.Plan],
		"deergo.Step":     compose.RegisterSerializableType[dm.Step],
		"deergo.Message":  compose.RegisterSerializableType[dm.Message],
		"deergo.Citation": compose.RegisterSerializableType[dm.Citation],
		"deergo.Settings": compose.RegisterSerializableType[dm.Settings],
		"deergo.stepIn":   compose.RegisterSerializableType[stepIn],
		"deergo.reactCP":  compose.RegisterSerializableType[reactCheckpoint],
	} {
		if err := register(name); err != nil {
			panic(fmt.Sprintf("register %s: %v", name, err))
		}
	}
}

// Build compiles the graph. Call it once at start-up.
func Build(ctx context.Context, d Deps) (*Graph, error) {
	if d.Models == nil || d.Prompts == nil || d.Store == nil {
		return nil, errors.New("graph: Models, Prompts and Store are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.AgentMaxIterations <= 0 {
		d.AgentMaxIterations = 12
	}
	if d.StepTimeout <= 0 {
		d.StepTimeout = 10 * time.Minute
	}
	if d.ToolTimeout <= 0 {
		d.ToolTimeout = 2 * time.Minute
	}
	if d.ToolOutputTokens <= 0 {
		d.ToolOutputTokens = 8000
	}
	g := &Graph{deps: d}

	top := compose.NewGraph[*dm.State, *dm.State](compose.WithGenLocalState(func(context.Context) *dm.State { return &dm.State{} }))
	subs := map[string]func() (*compose.Graph[string, string], error){
		dm.AgentCoordinator:   g.coordinator,
		dm.AgentBackground:    g.background,
		dm.AgentPlanner:       g.planner,
		dm.AgentHumanFeedback: g.humanFeedback,
		dm.AgentResearchTeam:  g.researchTeam,
		dm.AgentResearcher:    func() (*compose.Graph[string, string], error) { return g.stepAgent(dm.AgentResearcher) },
		dm.AgentAnalyst:       func() (*compose.Graph[string, string], error) { return g.stepAgent(dm.AgentAnalyst) },
		dm.AgentCoder:         func() (*compose.Graph[string, string], error) { return g.stepAgent(dm.AgentCoder) },
		dm.AgentReporter:      g.reporter,
	}
	targets := map[string]bool{nodeFinish: true}
	for name := range subs {
		targets[name] = true
	}
	// The run's input becomes the graph's State; the coordinator starts from it.
	if err := top.AddLambdaNode("init", compose.InvokableLambda(func(ctx context.Context, in *dm.State) (string, error) {
		err := compose.ProcessState(ctx, func(_ context.Context, s *dm.State) error {
			*s = *in.Clone()
			return nil
		})
		// A run recovered after a restart continues where its last snapshot says; a new run starts at the coordinator.
		if in.Next != "" {
			return in.Next, err
		}
		return dm.AgentCoordinator, err
	})); err != nil {
		return nil, err
	}
	for name, build := range subs {
		sg, err := build()
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", name, err)
		}
		if err := top.AddGraphNode(name, sg, compose.WithNodeName(name)); err != nil {
			return nil, fmt.Errorf("add %s: %w", name, err)
		}
	}
	if err := top.AddLambdaNode(nodeFinish, compose.InvokableLambda(func(ctx context.Context, _ string) (*dm.State, error) {
		var out *dm.State
		err := compose.ProcessState(ctx, func(_ context.Context, s *dm.State) error {
			out = s.Clone()
			return nil
		})
		return out, err
	})); err != nil {
		return nil, err
	}
	for _, e := range [][2]string{{compose.START, "init"}, {nodeFinish, compose.END}} {
		if err := top.AddEdge(e[0], e[1]); err != nil {
			return nil, err
		}
	}
	// Every agent names its successor; the branches only follow that choice (see routes.go for the rules).
	for name := range targets {
		if name == nodeFinish {
			continue
		}
		if err := top.AddBranch(name, compose.NewGraphBranch(pickNext, targets)); err != nil {
			return nil, fmt.Errorf("branch %s: %w", name, err)
		}
	}
	if err := top.AddBranch("init", compose.NewGraphBranch(pickNext, targets)); err != nil {
		return nil, err
	}
	r, err := top.Compile(ctx,
		compose.WithGraphName("deer-go"),
		compose.WithNodeTriggerMode(compose.AnyPredecessor),
		compose.WithCheckPointStore(d.Store),
		// Each step visits research_team, one agent and back; plans are small, so this bound only stops loops.
		compose.WithMaxRunSteps(2000),
	)
	if err != nil {
		return nil, fmt.Errorf("compile graph: %w", err)
	}
	g.r = r
	return g, nil
}

func pickNext(_ context.Context, next string) (string, error) {
	if next == "" {
		return nodeFinish, nil
	}
	return next, nil
}

// Pause is a run stopped at an interrupt, waiting for the user.
type Pause struct {
	ID      string // the interrupt id to resume
	Kind    string
	Content string
	Options []dm.Option
}

// InterruptInfo is what a node reports when it pauses the run.
type InterruptInfo struct {
	Kind    string
	Content string
	Options []dm.Option
}

// Run starts a new run on a thread from the given State (conversation memory and settings already in it).
// It returns the final State, or a Pause when the run waits for the user.
func (g *Graph) Run(ctx context.Context, in *dm.State) (*dm.State, *Pause, error) {
	ctx = withRunCache(ctx)
	out, err := g.r.Invoke(ctx, in, compose.WithCheckPointID(in.ThreadID), compose.WithForceNewRun())
	return g.result(out, err)
}

// Resume continues a paused run with the user's answer.
func (g *Graph) Resume(ctx context.Context, threadID, interruptID, answer string) (*dm.State, *Pause, error) {
	ctx = withRunCache(compose.ResumeWithData(ctx, interruptID, answer))
	out, err := g.r.Invoke(ctx, &dm.State{ThreadID: threadID}, compose.WithCheckPointID(threadID))
	return g.result(out, err)
}

func (g *Graph) result(out *dm.State, err error) (*dm.State, *Pause, error) {
	if err == nil {
		return out, nil, nil
	}
	info, ok := compose.ExtractInterruptInfo(err)
	if !ok {
		return nil, nil, err
	}
	for _, ic := range info.InterruptContexts {
		if !ic.IsRootCause {
			continue
		}
		p := &Pause{ID: ic.ID}
		if ii, ok := ic.Info.(*InterruptInfo); ok {
			p.Kind, p.Content, p.Options = ii.Kind, ii.Content, ii.Options
		}
		return nil, p, nil
	}
	return nil, nil, fmt.Errorf("interrupt without a root cause: %w", err)
}

type runCacheKey struct{}

// Pages fetched in one run are kept for the rest of it: agents often read the same source in several steps.
const (
	runCachePages = 64
	runCacheBytes = 16 << 20
)

func withRunCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, runCacheKey{}, crawl.NewCache(runCachePages, runCacheBytes))
}

func runCache(ctx context.Context) *crawl.Cache {
	c, _ := ctx.Value(runCacheKey{}).(*crawl.Cache)
	return c
}
