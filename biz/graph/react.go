package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/stream"
)

// KindToolApproval is the interrupt kind of a tool call waiting for the user's approval.
const KindToolApproval = "tool_approval"

// reactResult is what a tool-using agent produced.
type reactResult struct {
	answer    string
	citations []dm.Citation
}

// reactCheckpoint is the loop's state saved when a tool call waits for approval; the loop continues from it on
// resume instead of starting the step again.
type reactCheckpoint struct {
	Step      stepIn // the step being worked on (its Msgs are the loop's starting point)
	Msgs      []*schema.Message
	Turn      int
	Pending   []schema.ToolCall // the calls of the current model turn not yet answered; Pending[0] awaits approval
	Citations []dm.Citation
}

// react runs a reason–act loop: the model answers or calls tools; tool results go back to it until it answers or
// the turn budget is spent, after which it must answer without tools. Tool failures are returned to the model as
// tool results ("Error: …"), never as run failures: the model can try another way. Calls to tools listed in
// approve pause the run until the user approves or rejects them.
func (g *Graph) react(ctx context.Context, agent string, m model.ToolCallingChatModel, tools []tool.InvokableTool, step stepIn) (reactResult, error) {
	var res reactResult
	msgs, approve := step.Msgs, step.Settings.InterruptBeforeTools
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
	turn := 0
	var pending []schema.ToolCall
	decision := ""
	if was, has, cp := compose.GetInterruptState[*reactCheckpoint](ctx); was && has && cp != nil {
		msgs, turn, pending, res.citations = cp.Msgs, cp.Turn, cp.Pending, cp.Citations
		if resumed, hasData, answer := compose.GetResumeContext[string](ctx); resumed && hasData {
			decision = approvalDecision(answer)
		}
	}
	for {
		for i, tc := range pending {
			if slices.Contains(approve, tc.Function.Name) {
				if decision == "" {
					cp := &reactCheckpoint{Step: step, Msgs: msgs, Turn: turn, Pending: pending[i:], Citations: res.citations}
					return res, compose.StatefulInterrupt(ctx, approvalInfo(tc), cp)
				}
			}
			var out string
			if decision == "rejected" && slices.Contains(approve, tc.Function.Name) {
				out = fmt.Sprintf("Error: the user rejected this call to %s. Do not call it again with these arguments; continue without it.", tc.Function.Name)
			} else {
				out = g.callTool(ctx, byName, tc)
			}
			decision = "" // a decision answers one call
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			em.ToolResult(agent, tc.ID, out)
			res.citations = mergeCitations(res.citations, citationsFromTool(tc.Function.Name, out))
			msgs = append(msgs, schema.ToolMessage(g.trim(out), tc.ID, schema.WithToolName(tc.Function.Name)))
		}
		pending = nil
		cur := withTools
		final := turn >= g.deps.AgentMaxIterations
		if final {
			cur = m
			msgs = append(msgs, schema.UserMessage("You have used all your tool calls. Write your final answer now from what you have found."))
		}
		turn++
		sr, err := cur.Stream(ctx, msgs)
		if err != nil {
			return res, fmt.Errorf("%s: %w", agent, err)
		}
		msg, err := em.Message(agent, sr)
		if err != nil {
			return res, fmt.Errorf("%s: %w", agent, err)
		}
		if len(msg.ToolCalls) == 0 || final {
			res.answer = strings.TrimSpace(msg.Content)
			return res, nil
		}
		msgs = append(msgs, &schema.Message{Role: schema.Assistant, Content: msg.Content, ToolCalls: msg.ToolCalls})
		pending = msg.ToolCalls
	}
}

// approvalDecision reads the user's answer to a tool approval: deer-flow's approving words, case-insensitive.
func approvalDecision(answer string) string {
	a := strings.ToLower(answer)
	if strings.Contains(a, "reject") {
		return "rejected"
	}
	for _, w := range []string{"approved", "approve", "accepted", "accept", "yes", "proceed", "continue", "ok"} {
		if strings.Contains(a, w) {
			return "approved"
		}
	}
	return "rejected"
}

func approvalInfo(tc schema.ToolCall) *InterruptInfo {
	return &InterruptInfo{
		Kind:    KindToolApproval,
		Content: fmt.Sprintf("About to execute tool: '%s'\n\nInput:\n%s\n\nApprove execution?", tc.Function.Name, tc.Function.Arguments),
		Options: []dm.Option{{Text: "Approve", Value: "approved"}, {Text: "Reject", Value: "rejected"}},
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
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// trim bounds a tool result fed back to the model by the configured token budget.
func (g *Graph) trim(s string) string {
	if g.deps.TrimTokens == nil {
		return truncate(s, g.deps.ToolOutputTokens*4)
	}
	return g.deps.TrimTokens(s, g.deps.ToolOutputTokens)
}
