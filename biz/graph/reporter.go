package graph

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/stream"
)

type reporterIn struct {
	msgs      []*schema.Message
	citations []dm.Citation
	locale    string
}

type reporterOut struct{ report string }

// maxReferences bounds the References section.
const maxReferences = 30

// reporter writes the final report from the plan, the step results and the sources really collected. The
// References section is written by the server from those sources, so it can only list URLs tools returned.
func (g *Graph) reporter() (*compose.Graph[string, string], error) {
	return agentGraph(g.reporterLoad, g.reporterAgent,
		func(_ context.Context, s *dm.State, o reporterOut) (string, error) {
			s.FinalReport = o.report
			s.Messages = append(s.Messages, dm.Message{Role: "assistant", Agent: dm.AgentReporter, Content: o.report})
			s.Outcome = "reported"
			return "", nil
		})
}

func (g *Graph) reporterLoad(_ context.Context, s *dm.State) (reporterIn, error) {
	sys, err := g.render(dm.AgentReporter, s)
	if err != nil {
		return reporterIn{}, err
	}
	var b strings.Builder
	title, thought := s.ResearchTopic, ""
	if s.Plan != nil {
		title, thought = s.Plan.Title, s.Plan.Thought
	}
	fmt.Fprintf(&b, "# %s\n\nResearch question: %s\n\n", title, s.ResearchTopic)
	if thought != "" {
		fmt.Fprintf(&b, "Planner's reasoning: %s\n\n", thought)
	}
	steps := append([]dm.Step(nil), s.PriorSteps...)
	if s.Plan != nil {
		steps = append(steps, s.Plan.Steps...)
	}
	var missing []string
	for _, st := range steps {
		switch st.Status {
		case dm.StatusDone:
			fmt.Fprintf(&b, "## Findings: %s\n\n%s\n\n", st.Title, truncate(st.ExecutionRes, 12000))
		case dm.StatusFailed:
			missing = append(missing, fmt.Sprintf("- %s (failed: %s)", st.Title, truncate(st.Error, 300)))
		default:
			missing = append(missing, fmt.Sprintf("- %s (not carried out)", st.Title))
		}
	}
	if len(missing) > 0 && len(steps) > 0 {
		fmt.Fprintf(&b, "## Steps without results\n\nThe report must state plainly that these parts are missing:\n%s\n\n", strings.Join(missing, "\n"))
	}
	if s.Plan == nil || len(steps) == 0 {
		if s.BackgroundResults != "" {
			fmt.Fprintf(&b, "## Background search results\n\n%s\n\n", s.BackgroundResults)
		}
	}
	msgs := []*schema.Message{schema.SystemMessage(sys), schema.UserMessage(b.String())}
	if len(s.Citations) > 0 {
		var c strings.Builder
		c.WriteString("Sources collected by the research tools (the only sources you may link, as [Title](URL)):\n\n")
		for i, ct := range s.Citations {
			if i >= 60 {
				break
			}
			fmt.Fprintf(&c, "%d. %s — %s (%s): %s\n", i+1, ct.Title, ct.URL, ct.Domain, truncate(ct.Description, 150))
		}
		c.WriteString("\nDo not write a References section: the server appends one listing these sources.")
		msgs = append(msgs, schema.UserMessage(c.String()))
	} else {
		msgs = append(msgs, schema.UserMessage("No sources were collected. Do not invent any link or reference, and do not write a References section."))
	}
	return reporterIn{msgs: msgs, citations: s.Citations, locale: pickLocale(s.Locale, s.Settings.Locale)}, nil
}

func (g *Graph) reporterAgent(ctx context.Context, in reporterIn) (reporterOut, error) {
	sr, err := g.deps.Models.Chat(RoleBasic).Stream(ctx, in.msgs)
	if err != nil {
		return reporterOut{}, fmt.Errorf("%w: reporter: %w", ErrRunFailed, err)
	}
	msg, err := stream.From(ctx).MessageThen(dm.AgentReporter, sr, func(m *schema.Message) string {
		return referencesSection(m.Content, in.citations, in.locale)
	})
	if err != nil {
		return reporterOut{}, fmt.Errorf("%w: reporter: %w", ErrRunFailed, err)
	}
	return reporterOut{report: strings.TrimSpace(msg.Content)}, nil
}

var mdLink = regexp.MustCompile(`\]\((https?://[^)\s]+)\)`)

// referencesSection lists the collected sources: those the report links first, in the order it links them, then
// the rest, up to maxReferences. Only URLs that tools returned can appear.
func referencesSection(report string, cites []dm.Citation, locale string) string {
	if len(cites) == 0 {
		return ""
	}
	byURL := make(map[string]dm.Citation, len(cites))
	for _, c := range cites {
		byURL[normURL(c.URL)] = c
	}
	var ordered []dm.Citation
	used := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(report, -1) {
		k := normURL(m[1])
		if c, ok := byURL[k]; ok && !used[k] {
			used[k] = true
			ordered = append(ordered, c)
		}
	}
	for _, c := range cites {
		if k := normURL(c.URL); !used[k] {
			used[k] = true
			ordered = append(ordered, c)
		}
	}
	if len(ordered) > maxReferences {
		ordered = ordered[:maxReferences]
	}
	heading := "References"
	if strings.HasPrefix(locale, "zh") {
		heading = "参考资料"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n## %s\n\n", heading)
	for _, c := range ordered {
		title := strings.NewReplacer("[", "(", "]", ")", "\n", " ").Replace(c.Title)
		if title == "" {
			title = c.Domain
		}
		fmt.Fprintf(&b, "- [%s](%s)\n\n", title, c.URL)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
