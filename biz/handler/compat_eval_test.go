package handler

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deer-go/deer-go/internal/testkit"
)

const reportEN = `# Solar Power Adoption in Europe

## Key Points

- Solar capacity grew quickly in 2024.

## Overview

Europe added record solar capacity last year.

## Detailed Analysis

Growth came from rooftop systems [IEA report](https://www.iea.org/reports/solar) and utility parks [Ember](https://ember-climate.org/data).

![capacity chart](https://example.com/chart.png)

` + "```python\n## not a heading\nprint('[x](https://code.example)')\n```" + `

## References

- [IEA report](https://www.iea.org/reports/solar)

- [Ember](https://ember-climate.org/data)
`

const reportZH = `# 中国新能源汽车市场

## 关键要点

- 销量增长迅速。

## 概述

2024年销量创新高。

## 详细分析

| 年份 | 销量 |
|---|---|
| 2024 | 1287万 |

数据来自[中汽协](https://www.caam.org.cn/a)和[乘联会](http://cpcaauto.com/b)。

## 参考资料

- [中汽协](https://www.caam.org.cn/a)
`

const reportBold = `Solar in brief

**Key takeaways:**

Panels are cheap now. See https://example.org/raw for data.

**Sources**

- [Lazard LCOE](https://lazard.com/lcoe)
`

func TestComputeMetrics(t *testing.T) {
	tests := []struct {
		name    string
		content string
		style   string
		want    reportMetrics
	}{
		{
			name: "english academic", content: reportEN, style: "academic",
			want: reportMetrics{
				// Title 5, Key Points 2+6, Overview 1+7, Detailed Analysis 2+11, References 1+3: links count their
				// text; code, images and URLs do not.
				WordCount: 38, CitationCount: 4, UniqueSources: 2, ImageCount: 1, SectionCount: 4,
				SectionCoverageScore: 0.83,
				SectionsFound:        []string{"title", "key_points", "overview", "detailed_analysis", "references"},
				SectionsMissing:      []string{"survey_notes"},
				HasTitle:             true, HasKeyPoints: true, HasOverview: true, HasCitationsSection: true,
			},
		},
		{
			name: "chinese default", content: reportZH, style: "default",
			want: reportMetrics{
				// Every Han character is a word, a digit run is one: 9+4+6+2+7+4, table 4+3, 11, references 4+3.
				WordCount: 57, CitationCount: 3, UniqueSources: 2, ImageCount: 0, SectionCount: 4,
				SectionCoverageScore: 1,
				SectionsFound:        []string{"title", "key_points", "overview", "detailed_analysis", "references"},
				SectionsMissing:      []string{},
				HasTitle:             true, HasKeyPoints: true, HasOverview: true, HasCitationsSection: true,
				hasTable: true,
			},
		},
		{
			name: "bold pseudo headings, social media", content: reportBold, style: "social_media",
			want: reportMetrics{
				WordCount: 15, CitationCount: 1, UniqueSources: 1, SectionCount: 0,
				SectionCoverageScore: 0.67,
				SectionsFound:        []string{"key_points", "references"},
				SectionsMissing:      []string{"title"},
				HasKeyPoints:         true, HasCitationsSection: true,
			},
		},
		{
			name: "plain text", content: "just some words", style: "news",
			want: reportMetrics{
				WordCount: 3, SectionsFound: []string{},
				SectionsMissing: []string{"title", "key_points", "overview", "detailed_analysis", "references"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := computeMetrics(tt.content, tt.style)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("metrics\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCountWords(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"Hello world", 2},
		{"don't stop-me now", 3},
		{"深度研究 deep research", 6},
		{"GPT-4o 2024年", 3},
		{"  -- ** | ", 0},
		{"こんにちは", 5},
		{"naïve café", 2},
	}
	for _, tt := range tests {
		if got := countWords(tt.in); got != tt.want {
			t.Errorf("countWords(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestMetricsScoreAndGrade(t *testing.T) {
	full := reportMetrics{WordCount: 2000, CitationCount: 10, UniqueSources: 6, ImageCount: 1,
		SectionCoverageScore: 1, HasTitle: true, HasCitationsSection: true}
	tests := []struct {
		name  string
		m     reportMetrics
		style string
		score float64
		grade string
	}{
		{"everything", full, "academic", 10, "A+"},
		{"half length news", reportMetrics{WordCount: 300, SectionCoverageScore: 1, HasTitle: true}, "news", 4.5, "D"},
		{"nothing", reportMetrics{}, "default", 0, "F"},
		{"no sources", reportMetrics{WordCount: 1000, SectionCoverageScore: 0.8, HasTitle: true}, "default", 4.9, "D"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := metricsScore(tt.m, tt.style)
			if got != tt.score || gradeFor(got) != tt.grade {
				t.Errorf("score %v grade %s, want %v %s", got, gradeFor(got), tt.score, tt.grade)
			}
		})
	}
	grades := []struct {
		score float64
		grade string
	}{{10, "A+"}, {9, "A+"}, {8.9, "A"}, {8.5, "A"}, {8, "A-"}, {7.5, "B+"}, {7, "B"}, {6.5, "B-"},
		{6, "C+"}, {5.5, "C"}, {5, "C-"}, {4.9, "D"}, {4, "D"}, {3.9, "F"}}
	for _, g := range grades {
		if got := gradeFor(g.score); got != g.grade {
			t.Errorf("gradeFor(%v) = %s, want %s", g.score, got, g.grade)
		}
	}
}

const goodEval = `{"scores":{"factual_accuracy":8,"completeness":7,"coherence":9,"relevance":9,"citation_quality":6,"writing_quality":8},
"overall_score":7.8,"strengths":["clear"],"weaknesses":["few sources"],"suggestions":["add data"],"summary":"Solid."}`

func TestParseLLMEvaluation(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantErr     string
		wantWeights float64
		wantOverall float64
		wantSummary string
	}{
		{name: "plain", in: goodEval, wantWeights: 7.8, wantOverall: 7.8, wantSummary: "Solid."},
		{name: "fenced with preamble", in: "<think>{hmm}</think>Here:\n```json\n" + goodEval + "\n```", wantWeights: 7.8, wantOverall: 7.8, wantSummary: "Solid."},
		{name: "strings and clamping, no overall", in: `{"scores":{"factual_accuracy":"12","completeness":-3,"coherence":5,"relevance":5,"citation_quality":5,"writing_quality":5.4}}`,
			wantWeights: 5.3, wantOverall: 5.0, wantSummary: "The reviewer model rated the report 5.0/10 overall."},
		{name: "missing criterion", in: `{"scores":{"factual_accuracy":8}}`, wantErr: "no score for completeness"},
		{name: "no json", in: "I cannot evaluate this.", wantErr: "no JSON object"},
		{name: "broken json", in: `{"scores": {`, wantErr: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			le, summary, err := parseLLMEvaluation(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if le.WeightedScore != tt.wantWeights || le.OverallScore != tt.wantOverall || summary != tt.wantSummary {
				t.Errorf("weighted %v overall %v summary %q", le.WeightedScore, le.OverallScore, summary)
			}
			if le.Strengths == nil || le.Weaknesses == nil || le.Suggestions == nil {
				t.Error("lists must be [] rather than null")
			}
		})
	}
}

func TestReportEvaluateEndpoint(t *testing.T) {
	contentJSON, err := json.Marshal(reportEN)
	if err != nil {
		t.Fatal(err)
	}
	body := func(extra string) string {
		return `{"content":` + string(contentJSON) + `,"query":"solar in europe"` + extra + `}`
	}
	tests := []struct {
		name        string
		llmReply    testkit.Reply
		noLLM       bool
		body        string
		wantStatus  int
		wantDetail  string
		wantLLM     bool
		wantSummary string // substring; "" means summary must be null
		wantCalls   int
	}{
		{name: "metrics only", body: body(`,"report_style":"academic"`), wantStatus: 200},
		{name: "with llm", llmReply: testkit.Reply{Content: "```json\n" + goodEval + "\n```"},
			body: body(`,"report_style":"academic","use_llm":true`), wantStatus: 200, wantLLM: true, wantSummary: "Solid.", wantCalls: 1},
		{name: "llm http failure", llmReply: testkit.Reply{Status: 500, ErrorMessage: "down"},
			body: body(`,"use_llm":true`), wantStatus: 200, wantSummary: "LLM evaluation failed", wantCalls: 1},
		{name: "llm gibberish", llmReply: testkit.Reply{Content: "great report!"},
			body: body(`,"use_llm":true`), wantStatus: 200, wantSummary: "no JSON object", wantCalls: 1},
		{name: "no model", noLLM: true, body: body(`,"use_llm":true`), wantStatus: 200, wantSummary: "no language model"},
		{name: "missing content", body: `{"query":"x"}`, wantStatus: 422, wantDetail: "content: is required"},
		{name: "use_llm wrong type", body: body(`,"use_llm":"yes"`), wantStatus: 422, wantDetail: "use_llm: must be true or false"},
		{name: "malformed", body: `{"content":"x"`, wantStatus: 400, wantDetail: "malformed JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, r, done := llmCase(t, "/api/report/evaluate", tt.body, tt.llmReply, tt.noLLM, tt.wantStatus, tt.wantDetail)
			if done {
				return
			}
			var ev struct {
				Metrics       map[string]any  `json:"metrics"`
				Score         *float64        `json:"score"`
				Grade         string          `json:"grade"`
				LLMEvaluation json.RawMessage `json:"llm_evaluation"`
				Summary       *string         `json:"summary"`
			}
			if err := json.Unmarshal(r.body, &ev); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"word_count", "citation_count", "unique_sources", "image_count", "section_count",
				"section_coverage_score", "sections_found", "sections_missing", "has_title", "has_key_points",
				"has_overview", "has_citations_section"} {
				if _, ok := ev.Metrics[k]; !ok {
					t.Errorf("metrics lack %s", k)
				}
			}
			if ev.Score == nil || *ev.Score < 0 || *ev.Score > 10 || ev.Grade == "" {
				t.Errorf("score %v grade %q", ev.Score, ev.Grade)
			}
			if tt.wantLLM {
				var le llmEvaluation
				if err := json.Unmarshal(ev.LLMEvaluation, &le); err != nil || le.Scores.Coherence != 9 || le.WeightedScore != 7.8 {
					t.Errorf("llm_evaluation %s (%v)", ev.LLMEvaluation, err)
				}
				m := computeMetrics(reportEN, "academic")
				if want := round1(0.4*metricsScore(m, "academic") + 0.6*7.8); *ev.Score != want {
					t.Errorf("blended score %v, want %v", *ev.Score, want)
				}
				if last := fake.Last(); last == nil || !strings.Contains(last.LastUser(), "solar in europe") ||
					!strings.Contains(last.System(), "academic") {
					t.Error("the reviewer prompt lacks the query or style")
				}
			} else if string(ev.LLMEvaluation) != "null" {
				t.Errorf("llm_evaluation = %s, want null", ev.LLMEvaluation)
			}
			switch {
			case tt.wantSummary == "" && ev.Summary != nil:
				t.Errorf("summary = %q, want null", *ev.Summary)
			case tt.wantSummary != "" && (ev.Summary == nil || !strings.Contains(*ev.Summary, tt.wantSummary)):
				t.Errorf("summary = %v, want it to contain %q", ev.Summary, tt.wantSummary)
			}
			if got := fake.Count(); got != tt.wantCalls {
				t.Errorf("model called %d times, want %d", got, tt.wantCalls)
			}
		})
	}
}

func FuzzComputeMetrics(f *testing.F) {
	for _, s := range []string{reportEN, reportZH, reportBold, "", "```", "# \n## ##", "[a](http://[::1", "![](x)[b](https://a.b/c)"} {
		f.Add(s, "academic")
	}
	f.Fuzz(func(t *testing.T, content, style string) {
		if _, ok := styleSections[style]; !ok {
			style = "default"
		}
		m := computeMetrics(content, style)
		if m.SectionCoverageScore < 0 || m.SectionCoverageScore > 1 {
			t.Fatalf("coverage %v", m.SectionCoverageScore)
		}
		if m.UniqueSources > m.CitationCount || m.WordCount < 0 || m.ImageCount < 0 {
			t.Fatalf("inconsistent metrics %+v", m)
		}
		if len(m.SectionsFound)+len(m.SectionsMissing) != len(styleSections[style]) {
			t.Fatalf("found %v missing %v", m.SectionsFound, m.SectionsMissing)
		}
		if s := metricsScore(m, style); s < 0 || s > 10 || math.IsNaN(s) {
			t.Fatalf("score %v", s)
		}
	})
}

func FuzzParseLLMEvaluation(f *testing.F) {
	for _, s := range []string{goodEval, "", "{", `{"scores":null}`, `{"scores":{"factual_accuracy":1e999}}`, "</think>{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		le, _, err := parseLLMEvaluation(s)
		if err != nil {
			return
		}
		for _, v := range []int{le.Scores.FactualAccuracy, le.Scores.Completeness, le.Scores.Coherence,
			le.Scores.Relevance, le.Scores.CitationQuality, le.Scores.WritingQuality} {
			if v < 0 || v > 10 {
				t.Fatalf("score %d out of range", v)
			}
		}
		if le.WeightedScore < 0 || le.WeightedScore > 10 || le.OverallScore < 0 || le.OverallScore > 10 {
			t.Fatalf("aggregate out of range: %+v", le)
		}
	})
}

func FuzzRAGQuery(f *testing.F) {
	for _, s := range []string{"", "query=", "query=a&b", "x=1&query=%E4%B8%AD", "query=%", "query=%f", "query=%zz%20"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q := ragQuery(raw)
		if !utf8.ValidString(q) {
			t.Fatalf("invalid UTF-8 %q", q)
		}
		if !strings.Contains(raw, "query=") && q != "" {
			t.Fatalf("query %q from %q", q, raw)
		}
	})
}

func FuzzSplitProseToken(f *testing.F) {
	for _, s := range []string{"", "a", "a\nb", "\r\n", "x\ry\n\nz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		parts := splitProseToken(tok)
		for _, p := range parts {
			if p == "" || strings.ContainsAny(p, "\r\n") {
				t.Fatalf("bad part %q", p)
			}
		}
		want := strings.NewReplacer("\r", "", "\n", "").Replace(tok)
		if got := strings.Join(parts, ""); got != want {
			t.Fatalf("joined %q, want %q", got, want)
		}
	})
}
