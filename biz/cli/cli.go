// Package cli runs the research graph in a terminal: the working agent, the plan with a review prompt, tool calls
// and the report as it streams.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/deer-go/deer-go/biz/graph"
	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/run"
)

// Ask is one terminal research.
type Ask struct {
	Runs     *run.Manager
	Settings model.Settings
	Question string
	In       io.Reader // answers to the plan review; nil = no review possible
	Out      io.Writer
	// Interactive is true when In is a terminal: the plan review is asked there; otherwise the plan is accepted.
	Interactive bool
}

// Run executes the research and returns an error if the run failed.
func (a *Ask) Run(ctx context.Context) error {
	thread := uuid.NewString()
	req := run.Request{ThreadID: thread, Text: a.Question, Settings: a.Settings}
	var in *bufio.Reader
	if a.In != nil {
		in = bufio.NewReader(a.In)
	}
	for {
		st, err := a.Runs.Start(ctx, req)
		if err != nil {
			return err
		}
		p := &printer{out: a.Out}
		rd := a.Runs.Follow(st.ThreadID, st.From)
		for {
			evs, done, err := rd.Next(ctx)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				p.event(ev.Event)
			}
			if done {
				break
			}
		}
		switch {
		case p.err != "":
			return fmt.Errorf("%s", p.err)
		case p.interrupt == nil:
			fmt.Fprintln(a.Out)
			return nil
		}
		fb, text := "accepted", "Start the research."
		if a.Interactive && in != nil {
			fb, text = review(a.Out, in)
		} else {
			fmt.Fprintln(a.Out, "\n(plan accepted: not a terminal; use --auto-accept to skip the review)")
		}
		req = run.Request{ThreadID: thread, Text: text, Feedback: fb, Settings: a.Settings}
	}
}

func review(out io.Writer, in *bufio.Reader) (feedback, text string) {
	for {
		fmt.Fprint(out, "\nAccept the plan? [Y]es / [e]dit: ")
		line, err := in.ReadString('\n')
		line = strings.TrimSpace(line)
		if err != nil && line == "" {
			return "accepted", "Start the research."
		}
		switch strings.ToLower(line) {
		case "", "y", "yes", "a", "accept":
			return "accepted", "Start the research."
		case "e", "edit":
			fmt.Fprint(out, "What should change? ")
			change, _ := in.ReadString('\n')
			if change = strings.TrimSpace(change); change != "" {
				return "edit_plan", change
			}
		}
	}
}

type printer struct {
	out       io.Writer
	cur       string // message id being printed
	planner   map[string]*strings.Builder
	interrupt *model.EventData
	err       string
}

func (p *printer) header(d model.EventData) {
	if d.ID == p.cur {
		return
	}
	p.cur = d.ID
	fmt.Fprintf(p.out, "\n\n── %s ──\n", d.Agent)
}

func (p *printer) event(ev model.Event) {
	d := ev.Data
	switch ev.Type {
	case model.EventMessageChunk:
		if d.Agent == model.AgentPlanner {
			p.plan(d)
			return
		}
		if d.Content == "" && d.ReasoningContent == "" {
			return
		}
		p.header(d)
		if d.ReasoningContent != "" {
			fmt.Fprint(p.out, d.ReasoningContent)
		}
		fmt.Fprint(p.out, d.Content)
	case model.EventToolCalls:
		if d.FinishReason == "" {
			return // the complete list comes with the finishing event
		}
		p.header(d)
		for _, tc := range d.ToolCalls {
			if tc.Name == "direct_response" {
				fmt.Fprint(p.out, tc.Args["message"])
				continue
			}
			if tc.Name == "handoff_to_planner" {
				fmt.Fprintf(p.out, "→ research topic: %v", tc.Args["research_topic"])
				continue
			}
			args, _ := json.Marshal(tc.Args)
			fmt.Fprintf(p.out, "\n→ %s %s", tc.Name, args)
		}
	case model.EventToolCallResult:
		fmt.Fprintf(p.out, "\n  ← %s", oneLine(d.Content, 160))
	case model.EventInterrupt:
		p.interrupt = &d
	case model.EventCitations:
		fmt.Fprintf(p.out, "\n\n(%d sources collected)", len(d.Citations))
	case model.EventError:
		if d.Reason != "cancelled" {
			p.err = d.Error
		} else {
			p.err = "cancelled"
		}
	}
}

// plan collects the planner's JSON and prints it readably once complete.
func (p *printer) plan(d model.EventData) {
	if p.planner == nil {
		p.planner = map[string]*strings.Builder{}
	}
	b := p.planner[d.ID]
	if b == nil {
		b = &strings.Builder{}
		p.planner[d.ID] = b
		p.header(d)
		fmt.Fprint(p.out, "planning…")
	}
	b.WriteString(d.Content)
	if d.FinishReason == "" {
		return
	}
	plan, err := graph.ParsePlan(b.String(), 0, "", "")
	if err != nil {
		fmt.Fprintf(p.out, "\n%s", b.String())
		return
	}
	fmt.Fprintf(p.out, "\n# %s\n", plan.Title)
	if plan.Thought != "" {
		fmt.Fprintf(p.out, "%s\n", plan.Thought)
	}
	for i, s := range plan.Steps {
		fmt.Fprintf(p.out, "  %d. [%s] %s — %s\n", i+1, s.StepType, s.Title, oneLine(s.Description, 120))
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
