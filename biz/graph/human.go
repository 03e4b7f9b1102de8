package graph

import (
	"context"
	"strings"

	"github.com/cloudwego/eino/compose"

	dm "github.com/deer-go/deer-go/biz/model"
)

// Interrupt kinds.
const KindPlanReview = "plan_review"

type humanIn struct {
	auto   bool
	locale string
}

type humanOut struct {
	decision string
	text     string
}

// reviewText is the interrupt's text and options per language. The option values are the wire contract.
func reviewText(locale string) (string, []dm.Option) {
	if strings.HasPrefix(strings.ToLower(locale), "zh") {
		return "请审阅研究计划。", []dm.Option{{Text: "编辑计划", Value: "edit_plan"}, {Text: "开始研究", Value: "accepted"}}
	}
	return "Please Review the Plan.", []dm.Option{{Text: "Edit plan", Value: "edit_plan"}, {Text: "Start research", Value: "accepted"}}
}

// humanFeedback pauses the run for plan review unless the plan is auto-accepted; the answer arrives as resume data.
func (g *Graph) humanFeedback() (*compose.Graph[string, string], error) {
	return agentGraph(
		func(_ context.Context, s *dm.State) (humanIn, error) {
			return humanIn{auto: s.Settings.AutoAcceptedPlan, locale: pickLocale(s.Locale, s.Settings.Locale)}, nil
		},
		func(ctx context.Context, in humanIn) (humanOut, error) {
			if in.auto {
				return humanOut{decision: reviewAccept}, nil
			}
			if resumed, has, answer := compose.GetResumeContext[string](ctx); resumed && has {
				d, text := parseReview(answer)
				return humanOut{decision: d, text: text}, nil
			}
			content, opts := reviewText(in.locale)
			return humanOut{}, compose.Interrupt(ctx, &InterruptInfo{Kind: KindPlanReview, Content: content, Options: opts})
		},
		func(_ context.Context, s *dm.State, o humanOut) (string, error) {
			switch o.decision {
			case reviewAccept:
				s.PlanIterations++
				if s.Plan != nil && s.Plan.Locale != "" {
					s.Locale = pickLocale(s.Plan.Locale, s.Locale)
				}
			case reviewEdit:
				s.PlanFeedback = o.text
				if o.text != "" {
					s.Messages = append(s.Messages, dm.Message{Role: "user", Content: o.text, Kind: "feedback"})
				}
			}
			return afterReview(o.decision), nil
		},
	)
}
