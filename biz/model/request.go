// Package model holds the plain data shared by the graph, the run manager and the handlers: the wire request,
// the wire events, the research State, Plan and Step. It does no I/O.
package model

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Report styles accepted by the reporter.
const (
	StyleAcademic            = "academic"
	StylePopularScience      = "popular_science"
	StyleNews                = "news"
	StyleSocialMedia         = "social_media"
	StyleStrategicInvestment = "strategic_investment"
)

// ReportStyles lists the accepted report styles in display order.
func ReportStyles() []string {
	return []string{StyleAcademic, StylePopularScience, StyleNews, StyleSocialMedia, StyleStrategicInvestment}
}

// DefaultThreadID is the thread id the deer-flow client treats as "no thread"; the server replaces it with a fresh id.
const DefaultThreadID = "__default__"

// ChatMessage is one message of a chat request. Content is a string or a list of content items.
type ChatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ContentItem is one element of a multi-part message content.
type ContentItem struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

// Text returns the message content as plain text: a string as is, text items joined by newlines.
func (m ChatMessage) Text() (string, error) {
	raw := strings.TrimSpace(string(m.Content))
	if raw == "" || raw == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return "", fmt.Errorf("content: %w", err)
		}
		return s, nil
	}
	if raw[0] == '[' {
		var items []ContentItem
		if err := json.Unmarshal(m.Content, &items); err != nil {
			return "", fmt.Errorf("content must be a string or a list of {type, text} items: %w", err)
		}
		var parts []string
		for _, it := range items {
			if it.Type == "text" || it.Text != "" {
				parts = append(parts, it.Text)
			}
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("content must be a string or a list of {type, text} items")
}

// Resource is a RAG resource picked by the user.
type Resource struct {
	URI         string `json:"uri"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// ChatRequest is the body of POST /api/chat/stream (deer-flow 1.x shape). Pointer fields distinguish "absent"
// from a zero value so that server defaults apply only to absent fields.
type ChatRequest struct {
	Messages                      []ChatMessage   `json:"messages"`
	ThreadID                      string          `json:"thread_id"`
	Locale                        string          `json:"locale"`
	Resources                     []Resource      `json:"resources"`
	InterruptFeedback             *string         `json:"interrupt_feedback"`
	AutoAcceptedPlan              *bool           `json:"auto_accepted_plan"`
	MaxPlanIterations             *int            `json:"max_plan_iterations"`
	MaxStepNum                    *int            `json:"max_step_num"`
	MaxSearchResults              *int            `json:"max_search_results"`
	EnableBackgroundInvestigation *bool           `json:"enable_background_investigation"`
	EnableWebSearch               *bool           `json:"enable_web_search"`
	EnableDeepThinking            *bool           `json:"enable_deep_thinking"`
	EnableClarification           *bool           `json:"enable_clarification"`
	MaxClarificationRounds        *int            `json:"max_clarification_rounds"`
	ReportStyle                   *string         `json:"report_style"`
	MCPSettings                   json.RawMessage `json:"mcp_settings"`
	InterruptBeforeTools          []string        `json:"interrupt_before_tools"`
	Debug                         *bool           `json:"debug"`
}

// Settings are the per-run options, resolved from a request and the server defaults. They live in State.
type Settings struct {
	AutoAcceptedPlan              bool
	MaxPlanIterations             int
	MaxStepNum                    int
	MaxSearchResults              int
	EnableBackgroundInvestigation bool
	EnableWebSearch               bool
	EnableDeepThinking            bool
	EnableClarification           bool
	MaxClarificationRounds        int
	ReportStyle                   string
	Locale                        string
	// InterruptBeforeTools lists tool names whose calls wait for the user's approval.
	InterruptBeforeTools []string
	// MCPSettings are the MCP servers the request named (deer-flow's mcp_settings), when the operator allows it.
	MCPSettings string
}

// Defaults are the server-side values used for absent request fields.
type Defaults struct {
	MaxPlanIterations int
	MaxStepNum        int
	MaxSearchResults  int
	// InterruptBeforeTools are tools that always need approval (operator setting); requests can add more.
	InterruptBeforeTools []string
}

// Hard upper bounds, so that one request cannot ask for an unbounded amount of work.
const (
	maxPlanIterationsCap = 10
	maxStepNumCap        = 20
	maxSearchResultsCap  = 50
	maxClarifyCap        = 10
)

// FieldError is a validation failure of one request field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// UserText is the text of the request's last user message.
func (r *ChatRequest) UserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			s, err := r.Messages[i].Text()
			if err == nil {
				return s
			}
		}
	}
	return ""
}

// Validate checks the request and resolves its settings. The returned error is a *FieldError.
func (r *ChatRequest) Validate(d Defaults) (Settings, error) {
	if err := r.validateMessages(); err != nil {
		return Settings{}, err
	}
	return r.ValidateSettings(d)
}

func (r *ChatRequest) validateMessages() error {
	if len(r.Messages) == 0 {
		return &FieldError{"messages", "at least one message is required"}
	}
	hasText := false
	for i, m := range r.Messages {
		switch m.Role {
		case "user", "assistant", "system":
		default:
			return &FieldError{fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("unknown role %q (want user, assistant or system)", m.Role)}
		}
		txt, err := m.Text()
		if err != nil {
			return &FieldError{fmt.Sprintf("messages[%d].content", i), err.Error()}
		}
		if m.Role == "user" && strings.TrimSpace(txt) != "" {
			hasText = true
		}
	}
	if !hasText {
		return &FieldError{"messages", "a user message with non-empty content is required"}
	}
	return nil
}

// ValidateSettings checks everything but the messages (for requests that attach to or resume a run) and resolves
// the settings.
func (r *ChatRequest) ValidateSettings(d Defaults) (Settings, error) {
	var s Settings
	for i, m := range r.Messages {
		if _, err := m.Text(); err != nil {
			return s, &FieldError{fmt.Sprintf("messages[%d].content", i), err.Error()}
		}
	}
	if len(r.ThreadID) > 128 {
		return s, &FieldError{"thread_id", "must be at most 128 characters"}
	}
	for _, c := range r.ThreadID {
		if c < 0x20 || c == 0x7f {
			return s, &FieldError{"thread_id", "must not contain control characters"}
		}
	}
	s = Settings{
		MaxPlanIterations:             d.MaxPlanIterations,
		MaxStepNum:                    d.MaxStepNum,
		MaxSearchResults:              d.MaxSearchResults,
		EnableBackgroundInvestigation: true,
		EnableWebSearch:               true,
		MaxClarificationRounds:        3,
		ReportStyle:                   StyleAcademic,
		Locale:                        "en-US",
	}
	if r.Locale != "" {
		s.Locale = r.Locale
	}
	setBool := func(dst *bool, p *bool) {
		if p != nil {
			*dst = *p
		}
	}
	setBool(&s.AutoAcceptedPlan, r.AutoAcceptedPlan)
	setBool(&s.EnableBackgroundInvestigation, r.EnableBackgroundInvestigation)
	setBool(&s.EnableWebSearch, r.EnableWebSearch)
	setBool(&s.EnableDeepThinking, r.EnableDeepThinking)
	setBool(&s.EnableClarification, r.EnableClarification)
	ints := []struct {
		name     string
		p        *int
		dst      *int
		min, max int
	}{
		{"max_plan_iterations", r.MaxPlanIterations, &s.MaxPlanIterations, 1, maxPlanIterationsCap},
		{"max_step_num", r.MaxStepNum, &s.MaxStepNum, 1, maxStepNumCap},
		{"max_search_results", r.MaxSearchResults, &s.MaxSearchResults, 1, maxSearchResultsCap},
		{"max_clarification_rounds", r.MaxClarificationRounds, &s.MaxClarificationRounds, 0, maxClarifyCap},
	}
	for _, f := range ints {
		if f.p == nil {
			continue
		}
		if *f.p < f.min || *f.p > f.max {
			return s, &FieldError{f.name, fmt.Sprintf("must be between %d and %d", f.min, f.max)}
		}
		*f.dst = *f.p
	}
	if r.ReportStyle != nil {
		style := strings.ToLower(*r.ReportStyle)
		ok := false
		for _, v := range ReportStyles() {
			ok = ok || v == style
		}
		if !ok {
			return s, &FieldError{"report_style", fmt.Sprintf("unknown style %q (want one of %s)", *r.ReportStyle, strings.Join(ReportStyles(), ", "))}
		}
		s.ReportStyle = style
	}
	for i, name := range r.InterruptBeforeTools {
		if strings.TrimSpace(name) == "" || len(name) > 128 {
			return s, &FieldError{fmt.Sprintf("interrupt_before_tools[%d]", i), "must be a tool name"}
		}
	}
	s.InterruptBeforeTools = append(append([]string(nil), d.InterruptBeforeTools...), r.InterruptBeforeTools...)
	if r.InterruptFeedback != nil {
		switch strings.ToLower(strings.TrimSpace(*r.InterruptFeedback)) {
		case "", "accepted", "edit_plan", "approved", "rejected", "resume":
		default:
			return s, &FieldError{"interrupt_feedback", fmt.Sprintf("unknown value %q (want accepted, edit_plan, approved, rejected or resume)", *r.InterruptFeedback)}
		}
	}
	return s, nil
}
