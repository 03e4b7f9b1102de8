package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/compose"

	dm "github.com/deer-go/deer-go/biz/model"
)

type backgroundIn struct {
	topic   string
	max     int
	enabled bool
}

type backgroundOut struct {
	text      string
	citations []dm.Citation
	err       error
}

// background runs one web search on the topic (no model) and keeps the results for the planner. It emits no
// events: the web client would show them as an empty message.
func (g *Graph) background() (*compose.Graph[string, string], error) {
	return agentGraph(
		func(_ context.Context, s *dm.State) (backgroundIn, error) {
			return backgroundIn{topic: s.ResearchTopic, max: s.Settings.MaxSearchResults, enabled: s.Settings.EnableWebSearch && g.deps.Search != nil}, nil
		},
		func(ctx context.Context, in backgroundIn) (backgroundOut, error) {
			if !in.enabled || in.topic == "" {
				return backgroundOut{}, nil
			}
			ctx, cancel := context.WithTimeout(ctx, g.deps.ToolTimeout)
			defer cancel()
			res, err := g.deps.Search.Search(ctx, in.topic, in.max)
			if err != nil {
				// Planning can go on without background context; the failure is logged, not fatal.
				g.deps.Logger.WarnContext(ctx, "background investigation failed", "err", err)
				return backgroundOut{err: err}, nil
			}
			var b strings.Builder
			var cites []dm.Citation
			for _, r := range res {
				if r.Type != "" && r.Type != "page" {
					continue
				}
				fmt.Fprintf(&b, "## %s\n%s\n%s\n\n", r.Title, r.URL, truncate(r.Content, 1500))
				cites = append(cites, searchCitation(r.Title, r.URL, r.Content, r.Score))
			}
			return backgroundOut{text: strings.TrimSpace(b.String()), citations: cites}, nil
		},
		func(_ context.Context, s *dm.State, o backgroundOut) (string, error) {
			s.BackgroundResults = o.text
			s.Citations = mergeCitations(s.Citations, o.citations)
			return afterBackground(s), nil
		},
	)
}
