// Package prompts holds the system prompts of every agent in the
// deep-research graph, embedded at build time and rendered per request.
package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"text/template"
	"time"
)

// Agent keys. Each template's first line contains its key, which lets
// callers (and tests) recognise the agent from the rendered prompt alone.
const (
	AgentCoordinator = "coordinator"
	AgentPlanner     = "planner"
	AgentResearcher  = "researcher"
	AgentAnalyst     = "analyst"
	AgentCoder       = "coder"
	AgentReporter    = "reporter"
)

// Supported locales. DefaultLocale is used whenever nothing better matches.
const (
	LocaleEnUS    = "en-US"
	LocaleZhCN    = "zh-CN"
	DefaultLocale = LocaleEnUS
)

// Report styles understood by the reporter template.
const (
	StyleAcademic            = "academic"
	StylePopularScience      = "popular_science"
	StyleNews                = "news"
	StyleSocialMedia         = "social_media"
	StyleStrategicInvestment = "strategic_investment"
	DefaultReportStyle       = StyleAcademic
)

// DefaultMaxStepNum applies when Vars.MaxStepNum is not positive; a plan
// limited to zero steps would be useless.
const DefaultMaxStepNum = 3

// currentTimeLayout matches the example in Vars.CurrentTime.
const currentTimeLayout = "Mon Jan 2 2006 15:04:05 MST"

// ErrUnknownAgent is returned by Render for an agent without templates.
var ErrUnknownAgent = errors.New("prompts: unknown agent")

//go:embed en-US/*.md zh-CN/*.md
var embedded embed.FS

var (
	agentKeys    = [...]string{AgentCoordinator, AgentPlanner, AgentResearcher, AgentAnalyst, AgentCoder, AgentReporter}
	localeKeys   = [...]string{LocaleEnUS, LocaleZhCN}
	reportStyles = [...]string{StyleAcademic, StylePopularScience, StyleNews, StyleSocialMedia, StyleStrategicInvestment}
)

// languageLocale maps a bare language subtag to the locale that serves it.
var languageLocale = map[string]string{
	"en": LocaleEnUS,
	"zh": LocaleZhCN,
}

// Vars are the values a template may reference.
type Vars struct {
	CurrentTime string            // e.g. "Mon Nov 23 2026 09:10:00 UTC"; empty means now (UTC)
	Locale      string            // the user's locale, e.g. "en-US" or "zh-CN"; empty means the resolved one
	MaxStepNum  int               // planner step budget; <= 0 means DefaultMaxStepNum
	ReportStyle string            // one of the Style* constants; anything else means academic
	Extra       map[string]string // reserved for future templates
}

// Set is an immutable collection of parsed templates, safe for concurrent use.
type Set struct {
	byLocale map[string]map[string]*template.Template
}

// Agents returns the agent keys in graph order.
func Agents() []string { return append([]string(nil), agentKeys[:]...) }

// Locales returns the locales that have templates.
func Locales() []string { return append([]string(nil), localeKeys[:]...) }

// ReportStyles returns the report styles the reporter template knows.
func ReportStyles() []string { return append([]string(nil), reportStyles[:]...) }

// Load parses and validates every embedded template. Call it once at start-up.
func Load() (*Set, error) {
	return load(embedded)
}

func load(fsys fs.FS) (*Set, error) {
	s := &Set{byLocale: make(map[string]map[string]*template.Template, len(localeKeys))}
	for _, loc := range localeKeys {
		s.byLocale[loc] = make(map[string]*template.Template, len(agentKeys))
		for _, agent := range agentKeys {
			t, err := parseOne(fsys, loc, agent)
			if err != nil {
				return nil, err
			}
			s.byLocale[loc][agent] = t
		}
	}
	return s, nil
}

// parseOne parses a template and dry-runs it with every report style so a
// broken field reference or branch fails at start-up, not on a live request.
func parseOne(fsys fs.FS, loc, agent string) (*template.Template, error) {
	name := loc + "/" + agent + ".md"
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("prompts: read %s: %w", name, err)
	}
	first, _, _ := strings.Cut(string(src), "\n")
	if !strings.Contains(first, agent) {
		return nil, fmt.Errorf("prompts: %s: first line %q must contain agent key %q", name, first, agent)
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("prompts: parse %s: %w", name, err)
	}
	for _, style := range reportStyles {
		v := Vars{CurrentTime: "Thu Jan 1 2026 00:00:00 UTC", Locale: loc, MaxStepNum: DefaultMaxStepNum, ReportStyle: style}
		out, err := execute(t, v)
		if err != nil {
			return nil, fmt.Errorf("prompts: dry-run %s (style %s): %w", name, style, err)
		}
		if err := checkRendered(out); err != nil {
			return nil, fmt.Errorf("prompts: dry-run %s (style %s): %w", name, style, err)
		}
	}
	return t, nil
}

// checkRendered rejects output that still carries template syntax or the
// placeholder text/template prints for nil values.
func checkRendered(out string) error {
	for _, bad := range []string{"{{", "<no value>"} {
		if strings.Contains(out, bad) {
			return fmt.Errorf("rendered output contains %q", bad)
		}
	}
	return nil
}

// Render returns the system prompt for agent in the best matching locale.
func (s *Set) Render(agent, locale string, v Vars) (string, error) {
	if s == nil {
		return "", errors.New("prompts: nil Set; call Load first")
	}
	loc := ResolveLocale(locale)
	t, ok := s.byLocale[loc][agent]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownAgent, agent)
	}
	if v.Locale == "" {
		v.Locale = loc
	}
	if v.CurrentTime == "" {
		v.CurrentTime = time.Now().UTC().Format(currentTimeLayout)
	}
	if v.MaxStepNum <= 0 {
		v.MaxStepNum = DefaultMaxStepNum
	}
	v.ReportStyle = NormalizeReportStyle(v.ReportStyle)
	out, err := execute(t, v)
	if err != nil {
		return "", fmt.Errorf("prompts: render %s/%s: %w", loc, agent, err)
	}
	return out, nil
}

func execute(t *template.Template, v Vars) (string, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return "", fmt.Errorf("execute: %w", err)
	}
	return strings.TrimSpace(buf.String()) + "\n", nil
}

// ResolveLocale picks the template locale for a user-supplied tag: an exact
// (case-insensitive, "_" or "-") match first, then the language prefix, then
// DefaultLocale.
func ResolveLocale(locale string) string {
	tag := strings.ReplaceAll(strings.TrimSpace(locale), "_", "-")
	for _, loc := range localeKeys {
		if strings.EqualFold(tag, loc) {
			return loc
		}
	}
	lang, _, _ := strings.Cut(tag, "-")
	if loc, ok := languageLocale[strings.ToLower(lang)]; ok {
		return loc
	}
	return DefaultLocale
}

// NormalizeReportStyle maps loose spellings ("Popular Science",
// "popular-science") to a Style* constant; unknown styles become academic.
func NormalizeReportStyle(style string) string {
	s := strings.ToLower(strings.TrimSpace(style))
	s = strings.NewReplacer("-", "_", " ", "_").Replace(s)
	for _, known := range reportStyles {
		if s == known {
			return known
		}
	}
	return DefaultReportStyle
}
