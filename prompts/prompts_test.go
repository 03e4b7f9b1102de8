package prompts

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func fixedVars(locale string) Vars {
	return Vars{
		CurrentTime: "Mon Nov 23 2026 09:10:00 UTC",
		Locale:      locale,
		MaxStepNum:  5,
		ReportStyle: StyleAcademic,
	}
}

func mustLoad(tb testing.TB) *Set {
	tb.Helper()
	s, err := Load()
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return s
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("mkdir: %v", err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("write golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run `go test ./prompts -update` to create it): %v", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from rendered output; rerun with -update if the change is intended\n--- got ---\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	s := mustLoad(t)
	for _, loc := range Locales() {
		for _, agent := range Agents() {
			t.Run(loc+"/"+agent, func(t *testing.T) {
				got, err := s.Render(agent, loc, fixedVars(loc))
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				compareGolden(t, filepath.Join("testdata", loc, agent+".golden"), got)
			})
		}
	}
}

func TestReporterStyleGolden(t *testing.T) {
	s := mustLoad(t)
	for _, style := range ReportStyles() {
		t.Run(style, func(t *testing.T) {
			v := fixedVars(LocaleEnUS)
			v.ReportStyle = style
			got, err := s.Render(AgentReporter, LocaleEnUS, v)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			compareGolden(t, filepath.Join("testdata", LocaleEnUS, "reporter_"+style+".golden"), got)
		})
	}
}

// Each style must switch in its own guidance and nothing of the others.
func TestReporterStyleSections(t *testing.T) {
	markers := map[string]map[string]string{
		LocaleEnUS: {
			StyleAcademic:            "Style: **academic**",
			StylePopularScience:      "Style: **popular science**",
			StyleNews:                "Style: **news report**",
			StyleSocialMedia:         "Style: **social media**",
			StyleStrategicInvestment: "Style: **strategic investment analysis**",
		},
		LocaleZhCN: {
			StyleAcademic:            "风格：**学术**",
			StylePopularScience:      "风格：**科普**",
			StyleNews:                "风格：**新闻报道**",
			StyleSocialMedia:         "风格：**社交媒体**",
			StyleStrategicInvestment: "风格：**战略投资分析**",
		},
	}
	surveyNotes := map[string]string{LocaleEnUS: "**Survey Notes**", LocaleZhCN: "**调研笔记**"}
	s := mustLoad(t)
	for loc, byStyle := range markers {
		for style := range byStyle {
			t.Run(loc+"/"+style, func(t *testing.T) {
				v := fixedVars(loc)
				v.ReportStyle = style
				got, err := s.Render(AgentReporter, loc, v)
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				for other, marker := range byStyle {
					if has := strings.Contains(got, marker); has != (other == style) {
						t.Errorf("marker %q present=%v, want %v", marker, has, other == style)
					}
				}
				if has := strings.Contains(got, surveyNotes[loc]); has != (style == StyleAcademic) {
					t.Errorf("survey notes present=%v, want %v", has, style == StyleAcademic)
				}
			})
		}
	}
}

func TestUnknownStyleBehavesAsAcademic(t *testing.T) {
	s := mustLoad(t)
	tests := []struct {
		style string
		as    string
	}{
		{"", StyleAcademic},
		{"poetry", StyleAcademic},
		{"ACADEMIC", StyleAcademic},
		{"Popular Science", StylePopularScience},
		{"popular-science", StylePopularScience},
		{" news ", StyleNews},
		{"Strategic_Investment", StyleStrategicInvestment},
	}
	for _, loc := range Locales() {
		for _, tt := range tests {
			t.Run(loc+"/"+tt.style, func(t *testing.T) {
				v := fixedVars(loc)
				v.ReportStyle = tt.style
				got, err := s.Render(AgentReporter, loc, v)
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				v.ReportStyle = tt.as
				want, err := s.Render(AgentReporter, loc, v)
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if got != want {
					t.Errorf("style %q did not render like %q", tt.style, tt.as)
				}
			})
		}
	}
}

func TestResolveLocale(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"en-US", LocaleEnUS},
		{"zh-CN", LocaleZhCN},
		{"zh", LocaleZhCN},
		{"zh-TW", LocaleZhCN},
		{"zh_CN", LocaleZhCN},
		{"ZH-cn", LocaleZhCN},
		{"zh-Hant-HK", LocaleZhCN},
		{" zh-CN ", LocaleZhCN},
		{"en", LocaleEnUS},
		{"en_GB", LocaleEnUS},
		{"fr-FR", LocaleEnUS},
		{"", LocaleEnUS},
		{"-", LocaleEnUS},
		{"zhx", LocaleEnUS},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ResolveLocale(tt.in); got != tt.want {
				t.Errorf("ResolveLocale(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Render must pick the template by resolved locale but keep the caller's tag.
func TestRenderLocaleSelection(t *testing.T) {
	s := mustLoad(t)
	tests := []struct {
		locale     string
		wantHeader string
		wantTag    string
	}{
		{"zh-TW", "# deer-go 协调者 (coordinator)", "zh-TW"},
		{"zh_CN", "# deer-go 协调者 (coordinator)", "zh_CN"},
		{"ja-JP", "# deer-go coordinator", "ja-JP"},
		{"en-US", "# deer-go coordinator", "en-US"},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			got, err := s.Render(AgentCoordinator, tt.locale, Vars{Locale: tt.locale})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if first, _, _ := strings.Cut(got, "\n"); first != tt.wantHeader {
				t.Errorf("first line = %q, want %q", first, tt.wantHeader)
			}
			if !strings.Contains(got, tt.wantTag) {
				t.Errorf("output does not mention locale %q", tt.wantTag)
			}
		})
	}
}

func TestRenderUnknownAgent(t *testing.T) {
	s := mustLoad(t)
	for _, agent := range []string{"", "writer", "Coordinator", "planner ", "en-US/planner"} {
		t.Run(agent, func(t *testing.T) {
			_, err := s.Render(agent, LocaleEnUS, fixedVars(LocaleEnUS))
			if !errors.Is(err, ErrUnknownAgent) {
				t.Errorf("Render(%q) error = %v, want ErrUnknownAgent", agent, err)
			}
		})
	}
}

func TestRenderNilSet(t *testing.T) {
	var s *Set
	if _, err := s.Render(AgentPlanner, LocaleEnUS, Vars{}); err == nil {
		t.Fatal("Render on nil Set: want error")
	}
}

// The first line is how downstream code recognises the calling agent, so it
// must name its own key and no other.
func TestFirstLineAgentKey(t *testing.T) {
	s := mustLoad(t)
	for _, loc := range Locales() {
		for _, agent := range Agents() {
			t.Run(loc+"/"+agent, func(t *testing.T) {
				got, err := s.Render(agent, loc, fixedVars(loc))
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				first, _, _ := strings.Cut(got, "\n")
				if !strings.HasPrefix(first, "# deer-go ") {
					t.Errorf("first line %q lacks the deer-go heading", first)
				}
				for _, other := range Agents() {
					if has := strings.Contains(first, other); has != (other == agent) {
						t.Errorf("first line %q: contains %q = %v", first, other, has)
					}
				}
			})
		}
	}
}

func TestNoTemplateLeftovers(t *testing.T) {
	s := mustLoad(t)
	varsCases := map[string]Vars{
		"fixed": fixedVars(LocaleEnUS),
		"zero":  {},
		"extra": {Extra: map[string]string{"k": "v"}, MaxStepNum: -1},
	}
	for name, base := range varsCases {
		for _, loc := range Locales() {
			for _, agent := range Agents() {
				for _, style := range ReportStyles() {
					v := base
					v.ReportStyle = style
					got, err := s.Render(agent, loc, v)
					if err != nil {
						t.Fatalf("%s %s/%s/%s: %v", name, loc, agent, style, err)
					}
					for _, bad := range []string{"{{", "<no value>"} {
						if strings.Contains(got, bad) {
							t.Errorf("%s %s/%s/%s: output contains %q", name, loc, agent, style, bad)
						}
					}
				}
			}
		}
	}
}

func TestVarsSubstituted(t *testing.T) {
	s := mustLoad(t)
	tests := []struct {
		name     string
		maxSteps int
		want     string
	}{
		{"explicit", 7, "7"},
		{"zero uses default", 0, strconv.Itoa(DefaultMaxStepNum)},
		{"negative uses default", -2, strconv.Itoa(DefaultMaxStepNum)},
	}
	for _, loc := range Locales() {
		for _, tt := range tests {
			t.Run(loc+"/"+tt.name, func(t *testing.T) {
				v := fixedVars(loc)
				v.MaxStepNum = tt.maxSteps
				got, err := s.Render(AgentPlanner, loc, v)
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				for _, line := range []string{"Maximum number of steps: " + tt.want, "最大步骤数：" + tt.want} {
					if strings.Contains(got, line) {
						return
					}
				}
				t.Errorf("planner prompt does not state step limit %s", tt.want)
			})
		}
	}
	for _, loc := range Locales() {
		for _, agent := range Agents() {
			got, err := s.Render(agent, loc, fixedVars(loc))
			if err != nil {
				t.Fatalf("Render %s/%s: %v", loc, agent, err)
			}
			if !strings.Contains(got, "Mon Nov 23 2026 09:10:00 UTC") {
				t.Errorf("%s/%s: current time missing", loc, agent)
			}
			if !strings.Contains(got, loc) {
				t.Errorf("%s/%s: locale missing", loc, agent)
			}
		}
	}
}

type planStep struct {
	ID          string   `json:"id"`
	NeedSearch  bool     `json:"need_search"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	StepType    string   `json:"step_type"`
	DependsOn   []string `json:"depends_on"`
}

type plan struct {
	Locale           string     `json:"locale"`
	HasEnoughContext bool       `json:"has_enough_context"`
	Thought          string     `json:"thought"`
	Title            string     `json:"title"`
	Steps            []planStep `json:"steps"`
}

// The planner's example is what models imitate most, so it must itself obey
// the contract the prompt describes.
func TestPlannerExampleIsValidPlan(t *testing.T) {
	s := mustLoad(t)
	for _, loc := range Locales() {
		t.Run(loc, func(t *testing.T) {
			got, err := s.Render(AgentPlanner, loc, fixedVars(loc))
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			var example string
			for line := range strings.Lines(got) {
				if strings.HasPrefix(line, `{"locale"`) {
					example = line
				}
			}
			if example == "" {
				t.Fatal("no example JSON line found")
			}
			dec := json.NewDecoder(strings.NewReader(example))
			dec.DisallowUnknownFields()
			var p plan
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("example is not a valid plan: %v", err)
			}
			if p.Locale != loc || p.Title == "" || p.Thought == "" || len(p.Steps) == 0 {
				t.Errorf("example plan incomplete: %+v", p)
			}
			seen := map[string]bool{}
			for i, st := range p.Steps {
				if want := "step-" + strconv.Itoa(i+1); st.ID != want {
					t.Errorf("step %d id = %q, want %q", i, st.ID, want)
				}
				switch st.StepType {
				case "research":
					if !st.NeedSearch {
						t.Errorf("%s: research step without need_search", st.ID)
					}
				case "analysis", "processing":
					if st.NeedSearch || len(st.DependsOn) == 0 {
						t.Errorf("%s: %s step must not search and must depend on earlier steps", st.ID, st.StepType)
					}
				default:
					t.Errorf("%s: bad step_type %q", st.ID, st.StepType)
				}
				if st.DependsOn == nil {
					t.Errorf("%s: depends_on must be an array, not absent", st.ID)
				}
				for _, dep := range st.DependsOn {
					if !seen[dep] {
						t.Errorf("%s depends on %q, which is not an earlier step", st.ID, dep)
					}
				}
				seen[st.ID] = true
			}
		})
	}
}

func TestRenderConcurrent(t *testing.T) {
	s := mustLoad(t)
	want, err := s.Render(AgentReporter, LocaleZhCN, fixedVars(LocaleZhCN))
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			got, err := s.Render(AgentReporter, LocaleZhCN, fixedVars(LocaleZhCN))
			if err == nil && got != want {
				err = errors.New("concurrent render differs")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// embeddedCopy returns a writable copy of the real templates so each case
// can break exactly one thing.
func embeddedCopy(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(embedded, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(embedded, path)
		if err != nil {
			return err
		}
		m[path] = &fstest.MapFile{Data: data}
		return nil
	})
	if err != nil {
		t.Fatalf("copy embedded: %v", err)
	}
	return m
}

func TestLoadRejectsBrokenTemplates(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(fstest.MapFS)
		wantErr string
	}{
		{"intact", func(fstest.MapFS) {}, ""},
		{"missing file", func(m fstest.MapFS) { delete(m, "zh-CN/coder.md") }, "zh-CN/coder.md"},
		{"syntax error", func(m fstest.MapFS) {
			m["en-US/planner.md"] = &fstest.MapFile{Data: []byte("# deer-go planner\n{{if .Locale}}unclosed\n")}
		}, "parse en-US/planner.md"},
		{"unknown field", func(m fstest.MapFS) {
			m["en-US/analyst.md"] = &fstest.MapFile{Data: []byte("# deer-go analyst\n{{.Nope}}\n")}
		}, "dry-run en-US/analyst.md"},
		{"first line lacks key", func(m fstest.MapFS) {
			m["zh-CN/researcher.md"] = &fstest.MapFile{Data: []byte("# 研究员\nresearcher\n")}
		}, "first line"},
		{"missing key in Extra", func(m fstest.MapFS) {
			m["en-US/coder.md"] = &fstest.MapFile{Data: []byte("# deer-go coder\n{{.Extra.absent}}\n")}
		}, "dry-run en-US/coder.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := embeddedCopy(t)
			tt.mutate(m)
			_, err := load(m)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("load: unexpected error %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("load: want error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("load error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzResolveLocale(f *testing.F) {
	for _, seed := range []string{"", "en-US", "zh", "zh_TW", "ZH-cn", "fr", "-zh", "zh-", "\x00", "中文"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := ResolveLocale(in)
		if got != LocaleEnUS && got != LocaleZhCN {
			t.Fatalf("ResolveLocale(%q) = %q, not a supported locale", in, got)
		}
		if again := ResolveLocale(got); again != got {
			t.Fatalf("ResolveLocale not idempotent: %q -> %q -> %q", in, got, again)
		}
	})
}

func FuzzRender(f *testing.F) {
	s := mustLoad(f)
	f.Add("zh-TW", "news", 3)
	f.Add("", "", 0)
	f.Add("en_GB", "Popular Science", -5)
	f.Add("{{", "{{.Locale}}", 1<<30)
	f.Fuzz(func(t *testing.T, locale, style string, maxSteps int) {
		for _, agent := range Agents() {
			v := Vars{CurrentTime: "Mon Nov 23 2026 09:10:00 UTC", Locale: locale, MaxStepNum: maxSteps, ReportStyle: style}
			got, err := s.Render(agent, locale, v)
			if err != nil {
				t.Fatalf("Render(%q, %q): %v", agent, locale, err)
			}
			if strings.Contains(got, "<no value>") {
				t.Fatalf("Render(%q, %q): <no value> in output", agent, locale)
			}
			if first, _, _ := strings.Cut(got, "\n"); !strings.Contains(first, agent) {
				t.Fatalf("Render(%q, %q): first line %q lacks agent key", agent, locale, first)
			}
		}
	})
}
