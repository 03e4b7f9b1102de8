package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	dm "github.com/deer-go/deer-go/biz/model"
)

// stepIn is saved with the loop state when a tool call waits for approval, so its fields are exported.
type stepIn struct {
	Index    int
	ID       string
	Msgs     []*schema.Message
	Settings dm.Settings
}

type stepOut struct {
	index     int
	id        string
	result    string
	citations []dm.Citation
	err       error
}

// stepAgent builds the researcher, analyst or coder: each executes the step research_team marked running for it.
func (g *Graph) stepAgent(agent string) (*compose.Graph[string, string], error) {
	return agentGraph(
		func(_ context.Context, s *dm.State) (stepIn, error) { return g.stepLoad(agent, s) },
		func(ctx context.Context, in stepIn) (stepOut, error) { return g.stepRun(ctx, agent, in) },
		func(ctx context.Context, s *dm.State, o stepOut) (string, error) {
			if s.Plan == nil || o.index < 0 || o.index >= len(s.Plan.Steps) || s.Plan.Steps[o.index].ID != o.id {
				return afterStep(s), nil
			}
			st := &s.Plan.Steps[o.index]
			if o.err != nil {
				st.Status, st.Error = dm.StatusFailed, o.err.Error()
				g.deps.Logger.WarnContext(ctx, "step failed", "agent", agent, "step", st.Title, "err", o.err)
			} else {
				st.Status, st.ExecutionRes = dm.StatusDone, o.result
			}
			s.Citations = mergeCitations(s.Citations, o.citations)
			return afterStep(s), nil
		},
	)
}

func (g *Graph) stepLoad(agent string, s *dm.State) (stepIn, error) {
	in := stepIn{Index: -1, Settings: s.Settings}
	if s.Plan == nil {
		return in, nil
	}
	for i, st := range s.Plan.Steps {
		if st.Status == dm.StatusRunning && agentForStep(st.StepType) == agent {
			in.Index, in.ID = i, st.ID
			break
		}
	}
	if in.Index < 0 {
		return in, nil
	}
	sys, err := g.render(agent, s)
	if err != nil {
		return in, err
	}
	step := s.Plan.Steps[in.Index]
	var b strings.Builder
	fmt.Fprintf(&b, "# Research plan: %s\n\n", s.Plan.Title)
	var prior []dm.Step
	prior = append(prior, s.PriorSteps...)
	for _, st := range s.Plan.Steps {
		if st.Status == dm.StatusDone && st.ID != step.ID {
			prior = append(prior, st)
		}
	}
	if len(prior) > 0 {
		b.WriteString("## Findings so far\n\n")
		for _, st := range prior {
			fmt.Fprintf(&b, "<finding step=%q>\n%s\n</finding>\n\n", st.Title, truncate(st.ExecutionRes, 6000))
		}
	}
	fmt.Fprintf(&b, "## Your step\n\n### %s\n\n%s\n\nWrite in the language of locale %s.", step.Title, step.Description, pickLocale(s.Locale, s.Settings.Locale))
	msgs := []*schema.Message{schema.SystemMessage(sys), schema.UserMessage(b.String())}
	switch agent {
	case dm.AgentResearcher:
		msgs = append(msgs, schema.UserMessage("Cite only URLs that your tools returned. Do not put citation numbers in the text; end with a References list of those URLs as [Title](URL)."))
		if !s.Settings.EnableWebSearch || g.deps.Search == nil {
			msgs = append(msgs, schema.UserMessage("Web search is disabled for this research: work from the findings above and say what could not be verified."))
		}
	case dm.AgentCoder:
		if g.deps.PythonTool == nil {
			msgs = append(msgs, schema.UserMessage("Code execution is disabled on this server (the operator has not set ENABLE_PYTHON_REPL=true). "+
				"Say plainly that you cannot run code, then reason the step out as far as you can without it."))
		}
	}
	in.Msgs = msgs
	return in, nil
}

func (g *Graph) stepRun(ctx context.Context, agent string, in stepIn) (stepOut, error) {
	// Eino does not keep a lambda's input across an interrupt: a step resumed after a tool approval takes its
	// identity from the saved loop state.
	if was, has, cp := compose.GetInterruptState[*reactCheckpoint](ctx); was && has && cp != nil {
		in = cp.Step
	}
	out := stepOut{index: in.Index, id: in.ID}
	if in.Index < 0 {
		return out, nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, g.deps.StepTimeout)
	defer cancel()
	var tools []tool.InvokableTool
	role := RoleBasic
	switch agent {
	case dm.AgentResearcher:
		if in.Settings.EnableWebSearch && g.deps.WebSearchTool != nil {
			tools = append(tools, g.deps.WebSearchTool(in.Settings.MaxSearchResults))
		}
		if g.deps.CrawlTool != nil {
			tools = append(tools, g.deps.CrawlTool(runCache(ctx)))
		}
	case dm.AgentCoder:
		role = RoleCode
		if g.deps.PythonTool != nil {
			tools = append(tools, g.deps.PythonTool)
		}
	}
	if g.deps.AgentTools != nil {
		tools = append(tools, g.deps.AgentTools(ctx, agent)...)
	}
	if in.Settings.MCPSettings != "" && g.deps.RequestTools != nil {
		extra, closeTools, err := g.deps.RequestTools(ctx, in.Settings.MCPSettings, agent)
		if err != nil {
			// The step goes on without them; the model is told through the missing tools, the operator through the log.
			g.deps.Logger.WarnContext(ctx, "request MCP servers unavailable", "agent", agent, "err", err)
		} else {
			defer func() {
				if err := closeTools(); err != nil {
					g.deps.Logger.WarnContext(ctx, "close request MCP servers", "err", err)
				}
			}()
			tools = append(tools, extra...)
		}
	}
	res, err := g.react(ctx, agent, g.deps.Models.Chat(role), tools, in)
	out.citations = res.citations
	if _, paused := compose.IsInterruptRerunError(err); paused {
		return out, err // a tool call waits for approval: the run pauses, the step is not finished
	}
	switch {
	case err != nil && parent.Err() != nil:
		// The run itself was cancelled: stop, do not record the step as failed.
		return out, fmt.Errorf("%s: %w", agent, parent.Err())
	case err != nil && ctx.Err() != nil:
		out.err = fmt.Errorf("the step did not finish within %s", g.deps.StepTimeout)
	case err != nil:
		out.err = err
	case res.answer == "":
		out.err = errors.New("the agent returned an empty answer")
	default:
		out.result = res.answer
	}
	return out, nil
}
