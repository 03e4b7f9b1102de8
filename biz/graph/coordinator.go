package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/stream"
)

var (
	handoffTool = &schema.ToolInfo{
		Name: "handoff_to_planner",
		Desc: "Hand a research request over to the planner. Use it for any question that needs investigation.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"research_topic": {Type: schema.String, Desc: "The research topic, self-contained, in the user's words and language.", Required: true},
			"locale":         {Type: schema.String, Desc: "The user's language as a locale, e.g. en-US or zh-CN.", Required: true},
		}),
	}
	directTool = &schema.ToolInfo{
		Name: "direct_response",
		Desc: "Answer directly: greetings, small talk, questions about yourself, and polite refusals.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"message": {Type: schema.String, Desc: "The reply to show to the user.", Required: true},
			"locale":  {Type: schema.String, Desc: "The user's language as a locale, e.g. en-US or zh-CN.", Required: true},
		}),
	}
)

type coordinatorIn struct {
	msgs     []*schema.Message
	settings dm.Settings
}

func (g *Graph) coordinator() (*compose.Graph[string, string], error) {
	return agentGraph(g.coordinatorLoad, g.coordinatorAgent, g.coordinatorRoute)
}

func (g *Graph) coordinatorLoad(ctx context.Context, s *dm.State) (coordinatorIn, error) {
	sys, err := g.render(dm.AgentCoordinator, s)
	if err != nil {
		return coordinatorIn{}, err
	}
	msgs := []*schema.Message{schema.SystemMessage(sys)}
	msgs = append(msgs, history(s.Messages, 20)...)
	if s.Settings.EnableClarification {
		left := s.Settings.MaxClarificationRounds - s.ClarificationRounds
		note := fmt.Sprintf("Clarification is enabled. You have asked %d clarifying question(s); you may ask at most %d more. "+
			"If the request is clear enough to research, call handoff_to_planner.", s.ClarificationRounds, max(left, 0))
		if left <= 0 {
			note = "The clarification limit is reached. Do not ask anything more: call handoff_to_planner now with the best topic you can form from the conversation."
		}
		msgs = append(msgs, schema.SystemMessage(note))
	} else {
		msgs = append(msgs, schema.SystemMessage("Clarification is disabled: never ask the user questions. Either call handoff_to_planner or direct_response."))
	}
	return coordinatorIn{msgs: msgs, settings: s.Settings}, nil
}

func (g *Graph) coordinatorAgent(ctx context.Context, in coordinatorIn) (coordinatorOutcome, error) {
	m, err := g.deps.Models.Chat(RoleBasic).WithTools([]*schema.ToolInfo{handoffTool, directTool})
	if err != nil {
		return coordinatorOutcome{}, fmt.Errorf("coordinator: bind tools: %w", err)
	}
	sr, err := m.Stream(ctx, in.msgs)
	if err != nil {
		return coordinatorOutcome{}, fmt.Errorf("coordinator: %w", err)
	}
	msg, err := stream.From(ctx).Message(dm.AgentCoordinator, sr)
	if err != nil {
		return coordinatorOutcome{}, fmt.Errorf("coordinator: %w", err)
	}
	for _, tc := range msg.ToolCalls {
		args := stream.ParseArgs(tc.Function.Arguments)
		switch tc.Function.Name {
		case handoffTool.Name:
			return coordinatorOutcome{Kind: "handoff", Topic: str(args["research_topic"]), Locale: str(args["locale"])}, nil
		case directTool.Name:
			return coordinatorOutcome{Kind: "direct", Reply: str(args["message"]), Locale: str(args["locale"])}, nil
		}
	}
	if t := strings.TrimSpace(msg.Content); t != "" {
		return coordinatorOutcome{Kind: "question", Reply: t}, nil
	}
	return coordinatorOutcome{Kind: "none"}, nil
}

func (g *Graph) coordinatorRoute(ctx context.Context, s *dm.State, o coordinatorOutcome) (string, error) {
	next := afterCoordinator(s, o)
	switch {
	case o.Kind == "direct" || (o.Kind == "question" && !s.Settings.EnableClarification):
		s.Messages = append(s.Messages, dm.Message{Role: "assistant", Agent: dm.AgentCoordinator, Content: o.Reply})
		s.Outcome = "answered"
		return "", nil
	case o.Kind == "question" && next == "":
		s.ClarificationRounds++
		s.Messages = append(s.Messages, dm.Message{Role: "assistant", Agent: dm.AgentCoordinator, Content: o.Reply, Kind: "clarification"})
		s.Outcome = "clarifying"
		return "", nil
	}
	// A hand-off (or a forced one after the clarification limit).
	topic := strings.TrimSpace(o.Topic)
	// After clarifying questions the answers refine the first request; the topic keeps all of them.
	if s.Settings.EnableClarification && len(s.ClarificationHistory) > 1 {
		topic = clarifiedTopic(s.ClarificationHistory)
	}
	if topic == "" {
		topic = lastUser(s.Messages)
	}
	s.ResearchTopic = topic
	s.ClarificationDone = true
	s.Locale = pickLocale(o.Locale, s.Settings.Locale)
	return next, nil
}

// clarifiedTopic joins the first request and the answers to clarifying questions: "<first> - <a1>, <a2>".
func clarifiedTopic(h []string) string {
	if len(h) == 0 {
		return ""
	}
	if len(h) == 1 {
		return h[0]
	}
	return h[0] + " - " + strings.Join(h[1:], ", ")
}

// pickLocale prefers the locale the model detected, then the request's, then en-US.
func pickLocale(detected, requested string) string {
	for _, l := range []string{detected, requested} {
		if n := normalizeLocale(l); n != "" {
			return n
		}
	}
	return "en-US"
}

func normalizeLocale(l string) string {
	l = strings.TrimSpace(strings.ReplaceAll(l, "_", "-"))
	if l == "" || len(l) > 20 {
		return ""
	}
	parts := strings.SplitN(l, "-", 2)
	lang := strings.ToLower(parts[0])
	for _, c := range lang {
		if c < 'a' || c > 'z' {
			return ""
		}
	}
	if len(parts) == 1 {
		switch lang {
		case "zh":
			return "zh-CN"
		case "en":
			return "en-US"
		}
		return lang
	}
	return lang + "-" + strings.ToUpper(parts[1])
}

func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}
