package graph

import (
	"fmt"
	"strings"

	"github.com/cloudwego/eino/schema"

	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/prompts"
)

// render renders an agent's system prompt in the run's locale.
func (g *Graph) render(agent string, s *dm.State) (string, error) {
	loc := s.Locale
	if loc == "" {
		loc = s.Settings.Locale
	}
	out, err := g.deps.Prompts.Render(agent, loc, prompts.Vars{
		CurrentTime: g.deps.Now().UTC().Format("Mon Jan 02 2006 15:04:05 MST"),
		Locale:      pickLocale(loc, ""),
		MaxStepNum:  s.Settings.MaxStepNum,
		ReportStyle: s.Settings.ReportStyle,
	})
	if err != nil {
		return "", fmt.Errorf("render %s prompt: %w", agent, err)
	}
	return out, nil
}

// history converts the last n conversation turns to model messages.
func history(msgs []dm.Message, n int) []*schema.Message {
	if len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	out := make([]*schema.Message, 0, len(msgs))
	for _, m := range msgs {
		if strings.TrimSpace(m.Content) == "" {
			continue
		}
		if m.Role == "assistant" {
			out = append(out, schema.AssistantMessage(m.Content, nil))
		} else {
			out = append(out, schema.UserMessage(m.Content))
		}
	}
	return out
}

func lastUser(msgs []dm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && msgs[i].Kind == "" {
			return strings.TrimSpace(msgs[i].Content)
		}
	}
	return ""
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
