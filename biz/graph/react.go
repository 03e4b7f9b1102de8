package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"

	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/stream"
)

// reactResult is what a tool-using agent produced.
type reactResult struct {
	answer    string
	citations []dm.Citation
}

// react runs a reason–act loop: the model answers or calls tools; tool results go back to it until it answers or
// the turn budget is spent, after which it must answer without tools. Tool failures are returned to the model as
// tool results ("Error: …"), never as run failures: the model can try another way.
func (g *Graph) react(ctx context.Context, agent string, m model.ToolCallingChatModel, tools []tool.InvokableTool, msgs []*schema.Message) (reactResult, error) {
	var res reactResult
	em := stream.From(ctx)
	byName := make(map[string]tool.InvokableTool, len(tools))
	infos := make([]*schema.ToolInfo, 0, len(tools))
	for _, t := range tools {
		info, err := t.Info(ctx)
		if err != nil {
			return res, fmt.Errorf("%s: tool info: %w", agent, err)
		}
		byName[info.Name] = t
		infos = append(infos, info)
	}
	withTools := m
	if len(infos) > 0 {
		var err error
		if withTools, err = m.WithTools(infos); err != nil {
			return res, fmt.Errorf("%s: bind tools: %w", agent, err)
		}
	}
	for turn := 0; ; turn++ {
		cur := withTools
		if turn >= g.deps.AgentMaxIterations {
			cur = m
			msgs = append(msgs, schema.UserMessage("You have used all your tool calls. Write your final answer now from what you have found."))
		}
		sr, err := cur.Stream(ctx, msgs)
		if err != nil {
			return res, fmt.Errorf("%s: %w", agent, err)
		}
		msg, err := em.Message(agent, sr)
		if err != nil {
			return res, fmt.Errorf("%s: %w", agent, err)
		}
		if len(msg.ToolCalls) == 0 || cur == m && turn >= g.deps.AgentMaxIterations {
			res.answer = strings.TrimSpace(msg.Content)
			return res, nil
		}
		msgs = append(msgs, &schema.Message{Role: schema.Assistant, Content: msg.Content, ToolCalls: msg.ToolCalls})
		for _, tc := range msg.ToolCalls {
			out := g.callTool(ctx, byName, tc)
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			em.ToolResult(agent, tc.ID, out)
			res.citations = mergeCitations(res.citations, citationsFromTool(tc.Function.Name, out))
			msgs = append(msgs, schema.ToolMessage(g.trim(out), tc.ID, schema.WithToolName(tc.Function.Name)))
		}
	}
}

func (g *Graph) callTool(ctx context.Context, byName map[string]tool.InvokableTool, tc schema.ToolCall) string {
	t, ok := byName[tc.Function.Name]
	if !ok {
		return fmt.Sprintf("Error: there is no tool named %q; available tools: %s", tc.Function.Name, toolNames(byName))
	}
	ctx, cancel := context.WithTimeout(ctx, g.deps.ToolTimeout)
	defer cancel()
	args := tc.Function.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	out, err := t.InvokableRun(ctx, args)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Sprintf("Error: %s timed out after %s", tc.Function.Name, g.deps.ToolTimeout)
		}
		return "Error: " + err.Error()
	}
	return out
}

func toolNames(m map[string]tool.InvokableTool) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// trim bounds a tool result fed back to the model by the configured token budget.
func (g *Graph) trim(s string) string {
	if g.deps.TrimTokens == nil {
		return truncate(s, g.deps.ToolOutputTokens*4)
	}
	return g.deps.TrimTokens(s, g.deps.ToolOutputTokens)
}
