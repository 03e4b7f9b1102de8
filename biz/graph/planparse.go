package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/deer-go/deer-go/biz/model"
)

// ErrNoPlan means the planner's output held no usable plan even after repair.
var ErrNoPlan = errors.New("planner output is not a usable plan")

// rawPlan accepts the planner's JSON leniently: deer-flow's field names, common aliases, and loose types.
type rawPlan struct {
	Locale           string    `json:"locale"`
	HasEnoughContext any       `json:"has_enough_context"`
	Thought          string    `json:"thought"`
	Title            string    `json:"title"`
	Steps            []rawStep `json:"steps"`
}

type rawStep struct {
	ID            any    `json:"id"`
	NeedSearch    any    `json:"need_search"`
	NeedWebSearch any    `json:"need_web_search"`
	Title         string `json:"title"`
	Description   string `json:"description"`
	StepType      string `json:"step_type"`
	DependsOn     any    `json:"depends_on"`
}

// ParsePlan repairs and decodes planner output: code fences, prose around the JSON, trailing commas, a
// truncated tail, a bare list of steps, or a plan wrapped in {"content": …} or {"plan": …}. It then fills
// defaults, infers missing step types, makes step ids unique, drops unknown dependencies and trims the plan to
// maxSteps.
func ParsePlan(out string, maxSteps int, fallbackLocale, fallbackTitle string) (*model.Plan, error) {
	js, err := RepairJSON(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPlan, err)
	}
	var any0 any
	if err := json.Unmarshal([]byte(js), &any0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPlan, err)
	}
	any0 = unwrapPlan(any0)
	b, err := json.Marshal(any0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPlan, err)
	}
	var rp rawPlan
	if err := json.Unmarshal(b, &rp); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPlan, err)
	}
	if len(rp.Steps) == 0 && !truthy(rp.HasEnoughContext) {
		return nil, fmt.Errorf("%w: the plan has no steps", ErrNoPlan)
	}
	p := &model.Plan{
		Locale:           strings.TrimSpace(rp.Locale),
		HasEnoughContext: truthy(rp.HasEnoughContext),
		Thought:          strings.TrimSpace(rp.Thought),
		Title:            strings.TrimSpace(rp.Title),
	}
	if p.Locale == "" {
		p.Locale = fallbackLocale
	}
	if p.Title == "" {
		p.Title = fallbackTitle
	}
	if p.Title == "" {
		p.Title = "Research Plan"
	}
	seen := map[string]bool{}
	for i, rs := range rp.Steps {
		if maxSteps > 0 && len(p.Steps) >= maxSteps {
			break
		}
		s := model.Step{
			Title:       strings.TrimSpace(rs.Title),
			Description: strings.TrimSpace(rs.Description),
			StepType:    strings.ToLower(strings.TrimSpace(rs.StepType)),
			Status:      model.StatusPending,
		}
		if s.Title == "" && s.Description == "" {
			continue
		}
		if s.Title == "" {
			s.Title = firstWords(s.Description, 8)
		}
		needSearch, explicit := boolish(rs.NeedSearch)
		if !explicit {
			needSearch, explicit = boolish(rs.NeedWebSearch)
		}
		switch s.StepType {
		case model.StepResearch, model.StepAnalysis, model.StepProcessing:
		case "processing_step", "code", "coding", "calculation", "computation":
			s.StepType = model.StepProcessing
		case "analyze", "analyse", "synthesis", "reasoning":
			s.StepType = model.StepAnalysis
		case "search", "web_search":
			s.StepType = model.StepResearch
		default:
			// Missing or unknown: a step that searches is research, otherwise analysis.
			if needSearch || !explicit {
				s.StepType = model.StepResearch
			} else {
				s.StepType = model.StepAnalysis
			}
		}
		if !explicit {
			needSearch = s.StepType == model.StepResearch
		}
		s.NeedSearch = needSearch
		s.ID = strings.TrimSpace(fmt.Sprint(orEmpty(rs.ID)))
		if s.ID == "" || seen[s.ID] {
			s.ID = fmt.Sprintf("step-%d", i+1)
			for n := i + 1; seen[s.ID]; n++ {
				s.ID = fmt.Sprintf("step-%d", n+1)
			}
		}
		seen[s.ID] = true
		s.DependsOn = stringList(rs.DependsOn)
		p.Steps = append(p.Steps, s)
	}
	// Dependencies may only point at earlier steps of the plan; anything else would block or loop.
	earlier := map[string]bool{}
	for i := range p.Steps {
		var deps []string
		for _, d := range p.Steps[i].DependsOn {
			if earlier[d] {
				deps = append(deps, d)
			}
		}
		p.Steps[i].DependsOn = deps
		earlier[p.Steps[i].ID] = true
	}
	if len(p.Steps) == 0 && !p.HasEnoughContext {
		return nil, fmt.Errorf("%w: the plan has no usable steps", ErrNoPlan)
	}
	return p, nil
}

func unwrapPlan(v any) any {
	for depth := 0; depth < 4; depth++ {
		switch t := v.(type) {
		case []any:
			// A bare list of steps.
			return map[string]any{"steps": t}
		case map[string]any:
			if _, ok := t["steps"]; ok {
				return t
			}
			for _, k := range []string{"plan", "content", "data", "result"} {
				inner, ok := t[k]
				if !ok {
					continue
				}
				if s, ok := inner.(string); ok {
					js, err := RepairJSON(s)
					if err == nil {
						var parsed any
						if json.Unmarshal([]byte(js), &parsed) == nil {
							inner = parsed
						}
					}
				}
				v = inner
				goto next
			}
			return t
		default:
			return v
		}
	next:
	}
	return v
}

func truthy(v any) bool {
	b, _ := boolish(v)
	return b
}

// boolish reads a JSON bool that models sometimes write as a string or number; ok is false when absent.
func boolish(v any) (val, ok bool) {
	switch t := v.(type) {
	case bool:
		return t, true
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "true", "yes", "1":
			return true, true
		case "false", "no", "0":
			return false, true
		}
	case float64:
		return t != 0, true
	}
	return false, false
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	if f, ok := v.(float64); ok {
		return fmt.Sprintf("step-%d", int(f))
	}
	return v
}

func stringList(v any) []string {
	switch t := v.(type) {
	case string:
		if t = strings.TrimSpace(t); t != "" {
			return []string{t}
		}
	case []any:
		var out []string
		for _, x := range t {
			switch y := x.(type) {
			case string:
				if y = strings.TrimSpace(y); y != "" {
					out = append(out, y)
				}
			case float64:
				out = append(out, fmt.Sprintf("step-%d", int(y)))
			}
		}
		return out
	case float64:
		return []string{fmt.Sprintf("step-%d", int(t))}
	}
	return nil
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}
